"""The one bounded map behind every cache and short-lived table: the result cache, link resolutions,
entity and label caches, the embedder's vectors, result handles, drawn search trees.

Each of those must stay bounded however long the server runs, and some must also forget what is too
old (a cached SPARQL answer, a handle a client may no longer use), so they share one implementation
of "evict the least recently used, drop the expired" instead of each hand-writing it on an
``OrderedDict``.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class LRU(Generic[V]):
    """At most ``max_weight`` in total (each value weighs ``weigh(value)``, 1 by default, so the
    bound is a count); over it, the least recently used entries go first. With ``ttl``, an entry is
    gone ``ttl`` seconds after it was made (``put``'s ``born``, default now, on ``clock``).
    Thread-safe: local KGs fill theirs from the server's worker threads.

    ``get`` marks a hit as recently used; ``peek`` does not, for caches that keep insertion order
    (FIFO). ``hits``, ``misses``, ``evictions`` and ``expirations`` count what
    ``get``/``peek``/``put`` did."""

    def __init__(
        self,
        max_weight: int,
        *,
        ttl: float | None = None,
        weigh: Callable[[V], int] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_weight = max_weight
        self.ttl = ttl
        self._weigh = weigh
        self._clock = clock
        self._data: OrderedDict[Hashable, tuple[float, int, V]] = (
            OrderedDict()
        )  # key → (expires, weight, value)
        self.weight = 0
        self._lock = threading.Lock()  # two worker threads may fill one KG's cache at once
        self.hits = self.misses = self.evictions = self.expirations = 0

    def get(self, key: Hashable, default: Any = None) -> V | Any:
        return self._lookup(key, default, touch=True)

    def peek(self, key: Hashable, default: Any = None) -> V | Any:
        return self._lookup(key, default, touch=False)

    def _lookup(self, key: Hashable, default: Any, touch: bool) -> V | Any:
        with self._lock:
            item = self._data.get(key)
            if item is not None:
                expires, weight, value = item
                if self.ttl is None or expires > self._clock():
                    if touch:
                        self._data.move_to_end(key)
                    self.hits += 1
                    return value
                del self._data[key]
                self.weight -= weight
                self.expirations += 1
            self.misses += 1
            return default

    def put(self, key: Hashable, value: V, born: float | None = None) -> None:
        """Keep ``value`` as the most recently used; a value heavier than the whole bound is not
        kept (it would evict everything else)."""
        weight = self._weigh(value) if self._weigh is not None else 1
        if weight > self.max_weight:
            return
        if self.ttl is None:
            expires = float("inf")
        else:
            expires = (self._clock() if born is None else born) + self.ttl
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self.weight -= old[1]
            self._data[key] = (expires, weight, value)
            self.weight += weight
            while self.weight > self.max_weight:
                _, (_, dropped, _) = self._data.popitem(last=False)
                self.weight -= dropped
                self.evictions += 1

    def __contains__(self, key: Hashable) -> bool:
        item = self._data.get(key)
        return item is not None and (self.ttl is None or item[0] > self._clock())

    def __len__(self) -> int:
        return len(self._data)

    def items(self) -> list[tuple[Hashable, V]]:
        """The live entries, oldest first (a copy: a benchmark snapshots a cache to restore it)."""
        with self._lock:
            now = self._clock() if self.ttl is not None else 0.0
            return [
                (k, v)
                for k, (expires, _, v) in self._data.items()
                if self.ttl is None or expires > now
            ]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.weight = 0
