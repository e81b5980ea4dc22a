"""CPU-bound work off the event loop: a small pool of worker threads, shared fairly among clients.

A server runs every session on one event loop. A local KG answers from memory or an on-disk store,
so its methods never wait on I/O: run on the loop, a 4-hop ``follow_path`` from a genre hub (a few
tenths of a second of CPU) would hold it from start to end. Nothing else would run meanwhile, the
per-client cap on calls in flight would never see two of them at once, and a call whose client had
gone would run to its end.

Here each such unit of work (one page of edges, one relation count) runs in a worker thread through
:func:`run_cpu`. The loop is free while it runs, so calls overlap (and are counted), a cancelled
call stops at its next page (a page is milliseconds; the one running finishes, the thread is never
abandoned) and pings are answered. The pool has as many slots as the process may use cores: more
threads would not run faster under the GIL, only take the loop's turns. Slots go to clients fairly
(:class:`~kg_adapters.clients.FairSlots`): a client with one cheap page waits for at most one page
of each other client, however many calls those queued.

The pool belongs to the server (:class:`server.app.TotServer` creates one and sets :data:`POOLS` for
each tool call, as it sets :data:`~kg_adapters.clients.CLIENT`). Outside a server call (the CLI,
benchmarks, tests that use a KG directly) :func:`run_cpu` runs the function inline, as before."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import os
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import wraps
from typing import Any, ParamSpec, TypeVar

from .clients import CLIENT, FairSlots
from .errors import Busy

P = ParamSpec("P")
T = TypeVar("T")


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers narrow), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


class CpuPool:
    """``workers`` threads for CPU-bound work, handed out fairly per client, with at most
    ``max_waiting`` calls queued for them (one more is refused with
    :class:`~kg_adapters.errors.Busy`: waiting longer helps no one).

    The threads are the pool's own: work queued here never takes the threads other work needs (the
    store's query processes are driven from anyio's default pool), and that work never takes these.
    One event loop (like :class:`FairSlots`)."""

    def __init__(
        self, workers: int, what: str = "CPU-bound calls", max_waiting: int | None = None
    ) -> None:
        self.workers = max(1, workers)
        self.what = what
        self.max_waiting = max_waiting
        self._slots = FairSlots(self.workers)
        self._executor: ThreadPoolExecutor | None = None  # made on first use

    @property
    def waiting(self) -> int:
        """Calls queued for a slot now."""
        return self._slots.waiting()

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """One of the pool's slots for the current client. Busy when ``max_waiting`` calls already
        wait and this client is one of those waiting: a flood is refused, a client with nothing
        queued still gets its turn."""
        client = CLIENT.get()
        full = self.max_waiting is not None and self.waiting >= self.max_waiting
        if full and self._slots.free == 0 and self._slots.waiting(client):
            raise Busy(
                f"the server is busy: {self.waiting} {self.what} are waiting for its "
                f"{self.workers} worker(s); retry in a few seconds"
            )
        async with self._slots.slot(client):
            yield

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` in one of the pool's threads, when the client's turn comes.
        Cancelled while it runs, this returns (cancelled) once ``fn`` does: a unit is short, and a
        thread left running would hold a core the pool no longer counts."""
        async with self.slot():
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="tot-cpu")
            call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
            done = asyncio.get_running_loop().run_in_executor(self._executor, call)
            try:
                return await asyncio.shield(done)
            except asyncio.CancelledError:
                # the unit is short; anyio cancels again and again until we leave
                while not done.done():
                    with contextlib.suppress(asyncio.CancelledError):
                        await asyncio.wait([done])
                if not done.cancelled():
                    done.exception()  # retrieved: its outcome goes nowhere, the call was cancelled
                raise


#: how many parse checks of callers' SPARQL may wait for the guard's worker before one more is
#: refused
GUARD_QUEUE = 64


@dataclass
class Pools:
    """A server's worker pools: ``cpu`` for local traversal, ``checks`` for the SPARQL guard's parse
    (which runs one at a time: rdflib's parser is not thread-safe), so that slow checks queue apart
    from everything else and a client's trivial query waits for at most one check of each other
    client."""

    cpu: CpuPool = field(default_factory=lambda: CpuPool(usable_cores()))
    checks: CpuPool = field(default_factory=lambda: CpuPool(1, "SPARQL checks", GUARD_QUEUE))


# : the pools of the server whose tool call this is; None outside a server call (then work runs
# inline)
POOLS: ContextVar[Pools | None] = ContextVar("tot_mcp_pools", default=None)


async def run_cpu(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` off the event loop in the current server's CPU pool, or inline
    outside one."""
    pools = POOLS.get()
    if pools is None:
        return fn(*args, **kwargs)
    return await pools.cpu.run(fn, *args, **kwargs)


def cpu_bound(fn: Callable[P, T]) -> Callable[P, Any]:
    """Make a synchronous KG method an ``async`` one that runs through :func:`run_cpu`: local
    backends mark the methods that do a unit of work (one page, one count) with it, and stay written
    as plain functions."""

    @wraps(fn)
    async def offloaded(*args: P.args, **kwargs: P.kwargs) -> T:
        return await run_cpu(fn, *args, **kwargs)

    return offloaded
