"""Run a query the guard has checked (:class:`~kg_adapters.sparql.guard.CheckedQuery`) and bound its answer.

* :func:`run_remote` goes through the KG's :class:`~kg_adapters.sparql.endpoint.JsonEndpoint` — the same
  per-endpoint slots, ``Retry-After`` handling, breaker and User-Agent as every other query (on the public WDQS:
  one request at a time) — with the query's timeout, no retry after a timeout (it would time out again), and the
  answer read to at most :data:`MAX_ANSWER_BYTES`. SELECT/ASK ask for SPARQL JSON results, CONSTRUCT/DESCRIBE for
  N-Triples (or Turtle).
* :func:`query_store` evaluates it on a local pyoxigraph store: in a child process that is killed at the deadline
  when the KG knows where its data lives (:mod:`kg_adapters.sparql.workers`: the only way found to stop the
  engine), else — a store built in memory by the embedder — in a worker thread (:func:`run_local`), which
  stops reading after the cap or the deadline but cannot interrupt the engine inside one step. Such a thread
  runs on after its caller's timeout, so at most :data:`MAX_THREAD_RUNS` of them run per store at once
  (:class:`ThreadRuns`); further queries are refused with one line until they end.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from functools import partial
from typing import Any

import anyio

from ..errors import BackendError, BackendTimeout
from .endpoint import JsonEndpoint, Raw
from .guard import DEFAULT_TIMEOUT, CheckedQuery, SparqlRows, SparqlTerm, finish_rows
from .workers import StoreQueryWorkers

MAX_ANSWER_BYTES = 4 * 1024 * 1024
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
_TRIPLES_ACCEPT = "application/n-triples, text/turtle;q=0.9"
_RESULTS_ACCEPT = "application/sparql-results+json"


def _term_from_json(t: Any) -> SparqlTerm | None:
    if not isinstance(t, dict) or not isinstance(t.get("value"), (str, dict)):
        return None
    kind = t.get("type")
    if kind == "typed-literal":  # SPARQL 1.0 JSON, still sent by some servers
        kind = "literal"
    if kind in ("uri", "bnode"):
        return SparqlTerm(type=kind, value=t["value"])
    if kind == "literal":
        dt = t.get("datatype") or None
        return SparqlTerm(type="literal", value=t["value"], lang=t.get("xml:lang") or None,
                          datatype=None if dt in (_XSD_STRING, _LANG_STRING) else dt)
    if kind == "triple":  # RDF-star
        return SparqlTerm(type="triple", value=json.dumps(t["value"], sort_keys=True)[:2000])
    return None


def _term_from_ox(t: Any) -> SparqlTerm:
    import pyoxigraph as ox

    if isinstance(t, ox.NamedNode):
        return SparqlTerm(type="uri", value=t.value)
    if isinstance(t, ox.BlankNode):
        return SparqlTerm(type="bnode", value=t.value)
    if isinstance(t, ox.Literal):
        dt = t.datatype.value if t.datatype is not None else None
        return SparqlTerm(type="literal", value=t.value, lang=t.language or None,
                          datatype=None if t.language or dt == _XSD_STRING else dt)
    return SparqlTerm(type="triple", value=str(t))


def _triple_rows(triples: Iterable[Any], cap: int) -> list[dict[str, SparqlTerm]]:
    rows = []
    for t in triples:
        rows.append({"subject": _term_from_ox(t.subject), "predicate": _term_from_ox(t.predicate),
                     "object": _term_from_ox(t.object)})
        if len(rows) > cap:
            break
    return rows


TRIPLE_COLUMNS = ["subject", "predicate", "object"]


async def run_remote(endpoint: JsonEndpoint, kg: str, checked: CheckedQuery, timeout: float | None) -> SparqlRows:
    """Send ``checked.text`` (exactly) to the endpoint and read a bounded answer."""
    graph = checked.form in ("CONSTRUCT", "DESCRIBE")
    raw = Raw(_TRIPLES_ACCEPT if graph else _RESULTS_ACCEPT, MAX_ANSWER_BYTES)
    answer = await endpoint.query(checked.text, timeout=timeout or DEFAULT_TIMEOUT, retry_timeouts=False, raw=raw,
                                  lane="caller")  # its own slots: it cannot starve the traversal tools
    url = endpoint.guard.url
    body: bytes = answer["body"]
    if graph:
        import pyoxigraph as ox

        media = answer["content_type"].split(";")[0].strip() or "application/n-triples"
        fmt = ox.RdfFormat.from_media_type(media)
        if fmt is None:
            raise BackendError(f"{url}: answered {checked.form} with {media!r}, not N-Triples or Turtle")
        try:
            rows = _triple_rows(ox.parse(body, fmt), checked.max_rows)
        except SyntaxError as e:
            raise BackendError(f"{url}: malformed {media} answer ({str(e).splitlines()[0][:200]})") from None
        return finish_rows(kg, checked, TRIPLE_COLUMNS, rows)
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BackendError(f"{url}: the answer is not SPARQL JSON results ({len(body)} bytes)") from None
    except RecursionError:  # this endpoint's fault: a tool error, not a failed call
        raise BackendError(f"{url}: the answer's JSON is nested too deeply to read") from None
    if checked.form == "ASK":
        if not isinstance(data, dict) or not isinstance(data.get("boolean"), bool):
            raise BackendError(f"{url}: the answer to ASK has no boolean")
        return finish_rows(kg, checked, [], [], boolean=data["boolean"])
    try:
        columns = [str(v) for v in data["head"].get("vars", [])]
        bindings = data["results"]["bindings"]
        if not isinstance(bindings, list):
            raise TypeError
    except (KeyError, TypeError, AttributeError):
        raise BackendError(f"{url}: the answer is JSON but not SPARQL SELECT results") from None
    rows = []
    for b in bindings[: checked.max_rows + 1]:
        if isinstance(b, dict):
            rows.append({k: term for k, v in b.items() if (term := _term_from_json(v)) is not None})
    return finish_rows(kg, checked, columns, rows)


MAX_THREAD_RUNS = 2


class ThreadRuns:
    """How many in-thread evaluations of one store are running — including ones whose caller already got its
    timeout: such a thread holds a core until the engine finishes, so their number is what must be bounded."""

    def __init__(self, limit: int = MAX_THREAD_RUNS) -> None:
        self.limit = limit
        self.running = 0
        self._lock = threading.Lock()

    def enter(self, kg: str) -> None:
        with self._lock:
            if self.running >= self.limit:
                raise BackendError(f"KG {kg!r}: {self.running} earlier SPARQL queries are still running on it (a "
                                   "query that ran out of time runs on in this process); retry when they finish")
            self.running += 1

    def leave(self) -> None:
        with self._lock:
            self.running -= 1


def _collect(store: Any, checked: CheckedQuery, deadline: float, graphs: dict, runs: ThreadRuns | None = None,
             kg: str = "") -> tuple[list[str], list, bool | None]:
    import pyoxigraph as ox

    if runs is not None:  # counted in the thread: a run that never starts never holds a place
        runs.enter(kg)
    try:
        result = store.query(checked.text, **graphs)
        if isinstance(result, ox.QueryBoolean):
            return [], [], bool(result)
        if isinstance(result, ox.QueryTriples):
            return TRIPLE_COLUMNS, _triple_rows(_until(result, deadline), checked.max_rows), None
        columns = [v.value for v in result.variables]
        rows = []
        for solution in _until(result, deadline):
            rows.append({c: _term_from_ox(solution[c]) for c in columns if solution[c] is not None})
            if len(rows) > checked.max_rows:
                break
        return columns, rows, None
    except SyntaxError as e:  # the guard parsed it; the engine's own parser disagreed
        raise BackendError(f"the store rejected the query: {str(e).splitlines()[0][:200]}") from None
    except (OSError, RuntimeError) as e:
        raise BackendError(f"store query failed: {str(e)[:200]}") from None
    finally:
        if runs is not None:
            runs.leave()  # in the thread: an abandoned evaluation keeps its place until it really ends


def _until(items: Iterable[Any], deadline: float) -> Iterable[Any]:
    for x in items:
        if time.monotonic() > deadline:
            raise BackendTimeout("the query ran out of time")
        yield x


async def run_local(store: Any, kg: str, checked: CheckedQuery, timeout: float | None,
                    runs: ThreadRuns | None = None, **graphs: Any) -> SparqlRows:
    """Evaluate ``checked.text`` on a pyoxigraph store in a worker thread (``graphs``: its ``default_graph`` /
    ``named_graphs``); with ``runs``, refused while that many evaluations of the store are still running."""
    limit = timeout or DEFAULT_TIMEOUT
    deadline = time.monotonic() + limit
    try:
        with anyio.fail_after(limit):
            columns, rows, boolean = await anyio.to_thread.run_sync(
                partial(_collect, store, checked, deadline, graphs, runs, kg), abandon_on_cancel=True
            )
    except (TimeoutError, BackendTimeout):  # the wait ran out, or the thread's own deadline did
        raise BackendTimeout(f"KG {kg!r}: the query did not finish within {limit:g} s; narrow it") from None
    return finish_rows(kg, checked, columns, rows, boolean=boolean)


async def query_store(store: Any, kg: str, query: str, max_rows: int, timeout: float | None,
                      hidden: tuple[Any, ...] = (), *, workers: StoreQueryWorkers | None = None,
                      runs: ThreadRuns | None = None) -> SparqlRows:
    """Guard ``query`` (the common prefixes predeclared: rdf, rdfs, owl, xsd, skos, schema, wd, wdt …) and evaluate
    it on a pyoxigraph store over all its graphs but ``hidden`` ones (a store's own metadata graph): in one of
    ``workers``' processes when given (killed at the timeout), else in a thread of this process (``runs``: the
    cap on such threads; ``store`` may be None when ``workers`` is given)."""
    import pyoxigraph as ox

    from .guard import GuardPolicy, check_query_async
    from .vocab import DEFAULT_PREFIXES

    checked = await check_query_async(query, GuardPolicy(prefixes=DEFAULT_PREFIXES, max_rows=max_rows))
    if workers is not None:
        return await workers.query(checked, timeout, hidden=tuple(g.value for g in hidden))
    graphs = [g for g in store.named_graphs() if g not in hidden]
    return await run_local(store, kg, checked, timeout, runs, default_graph=[ox.DefaultGraph(), *graphs],
                           named_graphs=graphs)
