"""Who a call is for, and fair shares of a scarce resource among those callers.

The server layer knows the client (an MCP session, a stateless HTTP peer, the one stdio client); the
adapters hold the scarce things (an endpoint's few connection slots). :data:`CLIENT` carries the one
to the other without threading an argument through every KG method: the server sets it where a tool
call is dispatched, asyncio copies it into every task the call starts, and :class:`FairSlots` reads
it when a slot is wanted.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator
from contextvars import ContextVar
from itertools import count

#: the client the current call serves; "local" outside any server call (one embedder, one client)
CLIENT: ContextVar[str] = ContextVar("tot_mcp_client", default="local")


class FairSlots:
    """``n`` slots, handed out least-recently-served client first when several clients wait.

    A plain semaphore serves waiters in arrival order, so a client that queued 50 slow calls makes
    every other client wait behind all 50. Here each client has its own queue, and a freed slot goes
    to the waiting client that was served longest ago (one that has not been served yet goes first):
    a client with one call waits for at most one call of each other client, however many those
    queued. Within one client, calls keep their order. Bookkeeping is only kept for clients that
    hold or wait for a slot. One event loop (like asyncio.Semaphore).
    """

    def __init__(self, n: int) -> None:
        self.free = max(1, n)
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self._holding: dict[str, int] = {}
        self._served: dict[
            str, int
        ] = {}  # client → tick of its last grant (only for clients holding/waiting)
        self._tick = count(1)

    def waiting(self, client: str | None = None) -> int:
        """Calls waiting for a slot: all of them, or ``client``'s."""
        if client is not None:
            return len(self._waiting.get(client, ()))
        return sum(map(len, self._waiting.values()))

    @contextlib.asynccontextmanager
    async def slot(self, client: str | None = None) -> AsyncIterator[None]:
        client = CLIENT.get() if client is None else client
        await self._acquire(client)
        try:
            yield
        finally:
            self._release(client)

    async def _acquire(self, client: str) -> None:
        if self.free > 0 and not self._waiting:
            self.free -= 1
            self._grant(client)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(client, deque()).append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if (
                fut.done() and not fut.cancelled()
            ):  # granted, then cancelled before running: pass the slot on
                self._release(client)
            else:
                queue = self._waiting.get(client)
                if queue is not None and fut in queue:
                    queue.remove(fut)
                    if not queue:
                        del self._waiting[client]
                self._forget(client)
            raise

    def _grant(self, client: str) -> None:
        self._holding[client] = self._holding.get(client, 0) + 1
        self._served[client] = next(self._tick)

    def _release(self, client: str) -> None:
        self._holding[client] -= 1
        if not self._holding[client]:
            del self._holding[client]
        self._forget(client)
        while self._waiting:
            nxt = min(self._waiting, key=lambda c: self._served.get(c, 0))
            queue = self._waiting[nxt]
            fut = queue.popleft()
            if not queue:
                del self._waiting[nxt]
            if not fut.done():
                self._grant(nxt)
                fut.set_result(None)
                return
        self.free += 1

    def _forget(self, client: str) -> None:
        if client not in self._holding and client not in self._waiting:
            self._served.pop(client, None)
