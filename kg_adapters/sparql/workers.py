"""Callers' SPARQL queries on a local pyoxigraph store, in child processes that are killed when the
time runs out.

Measured on pyoxigraph 0.5.13 (see docs/security.md): ``Store.query`` and the iteration of its
results run in Rust with the GIL released, there is no cancellation hook in the Python API, and
``PyThreadState_SetAsyncExc`` never reaches a thread inside the engine. A query that yields no row
(a cross product under an always-false FILTER) kept a core at 100 % after its caller's 20 s timeout,
for as long as the query ran. A process can be killed: :class:`StoreQueryWorkers` keeps up to
``max_workers`` children per KG (each opens the store read-only, or loads the RDF file, once), sends
each query to an idle one and kills it at the deadline — the CPU work stops at once and the next
query starts a fresh child. Only ``sparql_query`` uses them; the traversal tools query the store
in-process as before.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from ..errors import BackendError, BackendRefused, BackendTimeout
from .guard import DEFAULT_TIMEOUT, CheckedQuery, SparqlRows, SparqlTerm, finish_rows

log = logging.getLogger("tot_mcp.sparql")

WORKER_SCRIPT = Path(__file__).with_name("store_worker.py")
MAX_WORKERS = 2  # per KG: each may hold a core (and, for an RDF file, a copy of it in memory)
START_TIMEOUT = 300.0  # opening a store is quick; loading a large RDF file into memory is not
_MAX_LINE = 8 * 1024 * 1024  # the worker cuts its answer at 4 MiB of values; JSON adds a little


@dataclass(frozen=True)
class StoreSource:
    """What a worker opens: an on-disk store (read-only) or an RDF file loaded into memory."""

    store: str | None = None
    file: str | None = None
    media_type: str | None = None
    gz: bool = False
    base_iri: str | None = None

    def spec(self) -> dict[str, Any]:
        if self.store is not None:
            return {"store": self.store}
        return {
            "file": self.file,
            "format": self.media_type,
            "gz": self.gz,
            "base_iri": self.base_iri,
        }


def answer_rows(kg: str, checked: CheckedQuery, answer: dict) -> SparqlRows:
    """The rows of a :func:`~kg_adapters.sparql.store_worker.answer`, or its error raised."""
    if "error" in answer:
        kind, what = answer.get("kind"), answer["error"]
        if kind == "too_large":
            raise BackendRefused(f"KG {kg!r}: {what}")
        if kind == "timeout":
            raise BackendTimeout(what)
        if kind == "syntax":  # the guard parsed it; the engine's own parser disagreed
            raise BackendError(f"the store rejected the query: {what}")
        raise BackendError(f"store query failed: {what}")
    rows = [{k: SparqlTerm(**v) for k, v in row.items()} for row in answer["rows"]]
    return finish_rows(kg, checked, answer["columns"], rows, boolean=answer["boolean"])


class _Worker:
    """One child process and its pipes. Blocking methods: called in worker threads."""

    def __init__(self, source: StoreSource) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
            close_fds=True,
        )
        self._send(source.spec())

    def _send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def _receive(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline(_MAX_LINE)
        if not line.endswith(b"\n"):
            raise EOFError("no answer" if not line else "answer too long")
        return json.loads(line)

    def ready(self) -> dict:
        return self._receive()

    def ask(self, request: dict) -> dict:
        self._send(request)
        return self._receive()

    def kill(self) -> None:
        """Stop the child now (SIGKILL: a query inside the engine does not look at signals it could
        handle)."""
        if self.proc.poll() is None:
            self.proc.kill()

    def reap(self) -> None:
        self.kill()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        self.proc.wait()


class StoreQueryWorkers:
    """Up to ``max_workers`` query processes for one KG's store. Idle children are kept for the next
    query (a child costs about 0.1 s to start with an on-disk store); a child whose query ran out of
    time, failed to answer or crashed is killed and not reused. ``close()`` ends them all."""

    def __init__(
        self,
        kg: str,
        source: StoreSource,
        max_workers: int = MAX_WORKERS,
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        self.kg, self.source = kg, source
        self.max_workers = max(1, max_workers)
        self.start_timeout = start_timeout
        self.killed = 0  # children killed at a deadline (diagnostics, tests)
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._lock = threading.Lock()  # _idle/_all are shared by every event loop that uses this KG
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def _slot(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._slots.get(loop)
        if sem is None:
            sem = self._slots[loop] = asyncio.Semaphore(self.max_workers)
        return sem

    @property
    def pids(self) -> list[int]:
        with self._lock:
            return [w.proc.pid for w in self._all if w.proc.poll() is None]

    async def query(
        self, checked: CheckedQuery, timeout: float | None, hidden: tuple[str, ...] = ()
    ) -> SparqlRows:
        limit = timeout or DEFAULT_TIMEOUT
        sem = self._slot()
        try:
            with anyio.fail_after(limit):
                await sem.acquire()
        except TimeoutError:
            raise BackendError(
                f"KG {self.kg!r}: {self.max_workers} SPARQL queries were running on it for "
                f"{limit:g} s; retry when they finish"
            ) from None
        try:
            worker = await self._take()
            request = {"query": checked.text, "max_rows": checked.max_rows, "hidden": list(hidden)}
            try:
                with anyio.fail_after(limit):
                    answer = await anyio.to_thread.run_sync(
                        worker.ask, request, abandon_on_cancel=True
                    )
            except TimeoutError:
                self.killed += 1
                await self._discard(worker)
                raise BackendTimeout(
                    f"KG {self.kg!r}: the query did not finish within {limit:g} s (stopped); "
                    "narrow it"
                ) from None
            except (
                BaseException
            ) as e:  # cancelled (the client gave up), crashed, broken pipe: never reused
                await self._discard(worker)
                if isinstance(e, (EOFError, OSError, ValueError)):
                    raise BackendError(
                        f"KG {self.kg!r}: the query process ended without an answer "
                        f"(exit {worker.proc.poll()})"
                    ) from None
                raise
            with self._lock:
                self._idle.append(worker)
        finally:
            sem.release()
        return answer_rows(self.kg, checked, answer)

    async def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.proc.poll() is None:
                    return worker
                self._all.discard(worker)
        return await self._start()

    async def _start(self) -> _Worker:
        worker = await anyio.to_thread.run_sync(_Worker, self.source)
        with self._lock:
            self._all.add(worker)
        try:
            with anyio.fail_after(self.start_timeout):
                hello = await anyio.to_thread.run_sync(worker.ready, abandon_on_cancel=True)
        except BaseException as e:
            await self._discard(worker)
            if isinstance(e, TimeoutError):
                raise BackendError(
                    f"KG {self.kg!r}: the query process did not open the store within "
                    f"{self.start_timeout:g} s"
                ) from None
            if isinstance(e, (EOFError, OSError, ValueError)):
                raise BackendError(f"KG {self.kg!r}: the query process could not start") from None
            raise
        if not hello.get("ready"):
            await self._discard(worker)
            raise BackendError(
                f"KG {self.kg!r}: the query process could not open the store: "
                f"{str(hello.get('error'))[:200]}"
            )
        if not hello.get("offline"):
            log.info(
                "KG %r: its query process could not leave the network (no user namespaces here): "
                "only the guard keeps SERVICE from fetching",
                self.kg,
            )
        return worker

    async def _discard(self, worker: _Worker) -> None:
        """Kill and reap a child; shielded, so a cancelled call still leaves no process behind."""
        worker.kill()  # at once, before any await: the CPU work stops now
        with self._lock:
            self._all.discard(worker)
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(worker.reap)

    def close(self) -> None:
        """Kill every child (a server shutting down does not wait for queries nobody will read)."""
        with self._lock:
            workers, self._all, self._idle = list(self._all), set(), []
        for worker in workers:
            worker.reap()

    def __del__(self) -> None:
        for worker in list(getattr(self, "_all", ())):
            worker.kill()
