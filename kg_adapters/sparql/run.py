"""Run a query the guard has checked (:class:`~kg_adapters.sparql.guard.CheckedQuery`) and bound its
answer.

* :func:`run_remote` goes through the KG's :class:`~kg_adapters.sparql.endpoint.JsonEndpoint` — the
  same per-endpoint slots, ``Retry-After`` handling, breaker and User-Agent as every other query (on
  the public WDQS: one request at a time) — with the query's timeout, no retry after a timeout (it
  would time out again), and the answer read to at most :data:`MAX_ANSWER_BYTES`. SELECT/ASK ask for
  SPARQL JSON results, CONSTRUCT/DESCRIBE for N-Triples (or Turtle).
* :func:`query_store` evaluates it on a local pyoxigraph store: in a child process that is killed at
  the deadline when the KG knows where its data lives (:mod:`kg_adapters.sparql.workers`: the only
  way found to stop the engine), else — a store built in memory by the embedder — in a worker thread
  (the same :func:`~kg_adapters.sparql.store_worker.answer`), which stops reading after the cap or
  the deadline but cannot interrupt the engine inside one step. Such a thread runs on after its
  caller's timeout, so at most :data:`MAX_THREAD_RUNS` of them run per store at once
  (:class:`ThreadRuns`); further queries are refused with one line until they end.
"""

from __future__ import annotations

import json
import threading
import time
from functools import partial
from itertools import islice
from typing import Any

import anyio

from ..errors import BackendError, BackendTimeout
from .endpoint import JsonEndpoint, Raw
from .guard import DEFAULT_TIMEOUT, CheckedQuery, SparqlRows, SparqlTerm, finish_rows
from .store_worker import _XSD_STRING, MAX_ANSWER_BYTES, answer, triple_rows
from .workers import StoreQueryWorkers, answer_rows

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
        return SparqlTerm(
            type="literal",
            value=t["value"],
            lang=t.get("xml:lang") or None,
            datatype=None if dt in (_XSD_STRING, _LANG_STRING) else dt,
        )
    if kind == "triple":  # RDF-star
        return SparqlTerm(type="triple", value=json.dumps(t["value"], sort_keys=True)[:2000])
    return None


async def run_remote(
    endpoint: JsonEndpoint, kg: str, checked: CheckedQuery, timeout: float | None
) -> SparqlRows:
    """Send ``checked.text`` (exactly) to the endpoint and read a bounded answer."""
    graph = checked.form in ("CONSTRUCT", "DESCRIBE")
    raw = Raw(_TRIPLES_ACCEPT if graph else _RESULTS_ACCEPT, MAX_ANSWER_BYTES)
    answer = await endpoint.query(
        checked.text,
        timeout=timeout or DEFAULT_TIMEOUT,
        retry_timeouts=False,
        raw=raw,
        lane="caller",
    )  # its own slots: it cannot starve the traversal tools
    url = endpoint.guard.url
    body: bytes = answer["body"]
    if graph:
        import pyoxigraph as ox

        media = answer["content_type"].split(";")[0].strip() or "application/n-triples"
        fmt = ox.RdfFormat.from_media_type(media)
        if fmt is None:
            raise BackendError(
                f"{url}: answered {checked.form} with {media!r}, not N-Triples or Turtle"
            )
        try:
            triples = islice(triple_rows(ox.parse(body, fmt)), checked.max_rows + 1)
            rows = [{k: SparqlTerm(**term) for k, term in row.items()} for row in triples]
        except SyntaxError as e:
            raise BackendError(
                f"{url}: malformed {media} answer ({str(e).splitlines()[0][:200]})"
            ) from None
        return finish_rows(kg, checked, ["subject", "predicate", "object"], rows)
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BackendError(
            f"{url}: the answer is not SPARQL JSON results ({len(body)} bytes)"
        ) from None
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
    """How many in-thread evaluations of one store are running — including ones whose caller already
    got its timeout: such a thread holds a core until the engine finishes, so their number is what
    must be bounded."""

    def __init__(self, limit: int = MAX_THREAD_RUNS) -> None:
        self.limit = limit
        self.running = 0
        self._lock = threading.Lock()

    def enter(self, kg: str) -> None:
        with self._lock:
            if self.running >= self.limit:
                raise BackendError(
                    f"KG {kg!r}: {self.running} earlier SPARQL queries are still running on it (a "
                    "query that ran out of time runs on in this process); retry when they finish"
                )
            self.running += 1

    def leave(self) -> None:
        with self._lock:
            self.running -= 1


def _in_thread(
    store: Any, request: dict, deadline: float, runs: ThreadRuns | None, kg: str
) -> dict:
    if runs is not None:  # counted in the thread: a run that never starts never holds a place
        runs.enter(kg)
    try:
        return answer(store, request, deadline)
    finally:
        if runs is not None:
            # in the thread: an abandoned evaluation keeps its place until it really ends
            runs.leave()


async def query_store(
    store: Any,
    kg: str,
    query: str,
    max_rows: int,
    timeout: float | None,
    hidden: tuple[Any, ...] = (),
    *,
    workers: StoreQueryWorkers | None = None,
    runs: ThreadRuns | None = None,
) -> SparqlRows:
    """Guard ``query`` (the common prefixes predeclared: rdf, rdfs, owl, xsd, skos, schema, wd, wdt
    …) and evaluate it on a pyoxigraph store over all its graphs but ``hidden`` ones (a store's own
    metadata graph): in one of ``workers``' processes when given (killed at the timeout), else in a
    thread of this process (``runs``: the cap on such threads; ``store`` may be None when
    ``workers`` is given)."""
    from .guard import GuardPolicy, check_query_async
    from .vocab import DEFAULT_PREFIXES

    checked = await check_query_async(
        query, GuardPolicy(prefixes=DEFAULT_PREFIXES, max_rows=max_rows)
    )
    hidden_iris = tuple(g.value for g in hidden)
    if workers is not None:
        return await workers.query(checked, timeout, hidden=hidden_iris)
    request = {"query": checked.text, "max_rows": checked.max_rows, "hidden": hidden_iris}
    limit = timeout or DEFAULT_TIMEOUT
    try:
        with anyio.fail_after(limit):
            run = partial(_in_thread, store, request, time.monotonic() + limit, runs, kg)
            got = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        return answer_rows(kg, checked, got)
    except (TimeoutError, BackendTimeout):  # the wait ran out, or the thread's own deadline did
        raise BackendTimeout(
            f"KG {kg!r}: the query did not finish within {limit:g} s; narrow it"
        ) from None
