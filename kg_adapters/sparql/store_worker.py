"""The child process that evaluates callers' SPARQL queries on a local pyoxigraph store (see
:mod:`kg_adapters.sparql.workers`).

Why a process: pyoxigraph evaluates a query in Rust with the GIL released and offers no way to
cancel it from Python (0.5.13: no cancellation token in the Python API; an asynchronous exception
never reaches a thread that is inside the engine). A query that finds no row for minutes would keep
a core busy long after its caller got its timeout. Run here, it is stopped by killing this process.

Run as a script (``python store_worker.py``), not as ``-m tot_mcp…``: it imports only the standard
library and pyoxigraph, so it starts in about 0.1 s. It opens its store once — ``{"store": PATH}``
read-only, or ``{"file": PATH, "format": MEDIA_TYPE, "gz": bool, "base_iri": IRI}`` loaded into
memory — then answers one JSON line per query on stdin with one JSON line on stdout, until stdin
closes.
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from collections.abc import Iterator

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
#: the most answer text sent back (the same cap as a remote endpoint's answer to ``sparql_query``)
MAX_ANSWER_BYTES = 4 * 1024 * 1024


def _die_with_parent() -> None:
    """Linux: be killed when the server dies, even in the middle of a query (stdin's EOF is only
    seen between queries)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001, S110 - not Linux: stdin's EOF still ends an idle worker
        pass


def _no_network() -> bool:
    """Linux: leave every network for an empty one of this process's own (an unprivileged user and
    network namespace), so that a SERVICE clause the guard missed has nowhere to go: pyoxigraph has
    no switch to turn federation off. Where the system does not allow it, the guard alone stands;
    returns whether it worked."""
    try:
        import ctypes

        clone_newuser, clone_newnet = 0x10000000, 0x40000000
        return ctypes.CDLL(None, use_errno=True).unshare(clone_newuser | clone_newnet) == 0
    except Exception:  # noqa: BLE001 - not Linux
        return False


def _term(t) -> dict:
    import pyoxigraph as ox

    if isinstance(t, ox.NamedNode):
        return {"type": "uri", "value": t.value}
    if isinstance(t, ox.BlankNode):
        return {"type": "bnode", "value": t.value}
    if isinstance(t, ox.Literal):
        dt = t.datatype.value if t.datatype is not None else None
        return {
            "type": "literal",
            "value": t.value,
            "lang": t.language or None,
            "datatype": None if t.language or dt == _XSD_STRING else dt,
        }
    return {"type": "triple", "value": str(t)}


def _open(spec: dict):
    import pyoxigraph as ox

    if "store" in spec:
        return ox.Store.read_only(spec["store"])
    store = ox.Store()
    fmt = ox.RdfFormat.from_media_type(spec["format"])
    if spec.get("gz"):
        with gzip.open(spec["file"], "rb") as fh:
            store.bulk_load(input=fh, format=fmt, base_iri=spec.get("base_iri"))
    else:
        store.bulk_load(path=spec["file"], format=fmt, base_iri=spec.get("base_iri"))
    return store


def triple_rows(triples) -> Iterator[dict]:
    return (
        {"subject": _term(t.subject), "predicate": _term(t.predicate), "object": _term(t.object)}
        for t in triples
    )


def answer(store, request: dict, deadline: float | None = None) -> dict:
    """One query's answer as JSON: ``columns``, ``rows`` (one more than ``max_rows`` says more
    exist) and ``boolean``, or an ``error`` and its ``kind``. The server also runs it in a thread
    on a store it has no file for a worker to open; rows then stop at ``deadline``
    (``time.monotonic``)."""
    import pyoxigraph as ox

    hidden = set(request.get("hidden", ()))
    graphs = [g for g in store.named_graphs() if g.value not in hidden]
    cap, size = int(request["max_rows"]), 0
    try:
        result = store.query(
            request["query"], default_graph=[ox.DefaultGraph(), *graphs], named_graphs=graphs
        )
        if isinstance(result, ox.QueryBoolean):
            return {"columns": [], "rows": [], "boolean": bool(result)}
        if isinstance(result, ox.QueryTriples):
            columns, items = ["subject", "predicate", "object"], triple_rows(result)
        else:
            columns = [v.value for v in result.variables]
            items = ({c: _term(s[c]) for c in columns if s[c] is not None} for s in result)
        rows = []
        for row in items:
            if deadline is not None and time.monotonic() > deadline:
                return {"error": "the query ran out of time", "kind": "timeout"}
            size += sum(len(x["value"]) + 64 for x in row.values())
            if size > MAX_ANSWER_BYTES:
                return {
                    "error": f"the answer is larger than {MAX_ANSWER_BYTES:,} bytes; select fewer "
                    "or shorter values",
                    "kind": "too_large",
                }
            rows.append(row)
            if len(rows) > cap:  # one more than the cap: the caller is told there were more
                break
        return {"columns": columns, "rows": rows, "boolean": None}
    except SyntaxError as e:
        return {
            "error": str(e).splitlines()[0][:200] if str(e) else "syntax error",
            "kind": "syntax",
        }
    except (OSError, RuntimeError, ValueError) as e:
        return {"error": str(e)[:200], "kind": "store"}


def main() -> int:
    _die_with_parent()
    offline = _no_network()
    out = sys.stdout
    try:
        store = _open(json.loads(sys.stdin.readline()))
    except Exception as e:  # noqa: BLE001 - reported to the parent as one line
        out.write(json.dumps({"error": f"{type(e).__name__}: {str(e)[:200]}"}) + "\n")
        out.flush()
        return 1
    out.write(json.dumps({"ready": True, "offline": offline}) + "\n")
    out.flush()
    for line in sys.stdin:
        out.write(json.dumps(answer(store, json.loads(line))) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
