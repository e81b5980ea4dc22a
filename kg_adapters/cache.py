"""The result cache of :class:`~kg_adapters.graph.Graph`: a bounded LRU + TTL over the reads it
sends a backend.

Tree search asks the same questions again and again (every branch re-expands the topic entity; many
clients share popular entities), and a remote SPARQL endpoint answers in tens or hundreds of
milliseconds, so caching pays. Entity search and linking are cached too: every answering path links
the question before its strategy does, and a linked KG asks each member again.

One :class:`ResultCache` can be shared by every KG of a server, so that a single size bound holds
for the whole process. Keys therefore carry the wrapped KG's identity — its name, backend class, a
per-wrapper token and its :class:`~kg_adapters.base.Limits` — so a result can never be served to a
different KG or configuration, even if two KGs share a name across reconfigurations. The bound is by
*weight* (1 + edges + relations in the result), not by entry count, because one ``get_edges`` page
can hold 200 edges and another none.

Only complete results are cached: errors, and pages marked ``partial`` (a backend failed), are
always retried. Cached values are the same frozen pydantic objects every time; callers must not
mutate their lists. One entry point builds the wrappers (:func:`kg_adapters.graph.graphs`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from pydantic import BaseModel

from .errors import InvalidInput
from .lru import LRU
from .models import AdjacentIds, EdgePage, EntityDescription, RelationList

T = TypeVar("T")
_tokens = itertools.count(1)


class CacheStats(BaseModel):
    hits: int
    misses: int
    evictions: int
    expirations: int
    entries: int
    weight: int
    max_weight: int
    ttl_seconds: float

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


def _weight(value: Any) -> int:
    if isinstance(value, tuple) and len(value) == 3:  # a bulk read under its widest limit
        value = value[1]
    if isinstance(value, AdjacentIds):
        return 1 + len(value.pairs) + len(value.values)
    if isinstance(value, EdgePage):
        return 1 + len(value.edges) + len(value.entities)
    if isinstance(value, RelationList):
        return 1 + len(value.relations)
    if isinstance(value, EntityDescription):
        return 1 + len(value.relations) + len(value.aliases)
    return 1


class ResultCache:
    """Thread-safe LRU with a time-to-live and a total weight bound. ``clock`` is injectable for
    tests."""

    def __init__(
        self,
        max_weight: int = 200_000,
        ttl_seconds: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_weight < 1:
            raise InvalidInput("cache max_weight must be ≥ 1")
        if ttl_seconds <= 0:
            raise InvalidInput("cache ttl_seconds must be > 0")
        self._entries: LRU[Any] = LRU(max_weight, ttl=ttl_seconds, weigh=_weight, clock=clock)

    _MISSING = object()

    def get(self, key: Hashable) -> Any:
        """The cached value, or ``ResultCache._MISSING`` (counted as a miss)."""
        return self._entries.get(key, self._MISSING)

    def find(self, key: Hashable) -> Any:
        """:meth:`get` where a miss is not counted: a look for another call's answer that may serve
        this one."""
        return self._entries.get(key, self._MISSING) if key in self._entries else self._MISSING

    def put(self, key: Hashable, value: Any) -> None:
        self._entries.put(key, value)

    def clear(self) -> None:
        self._entries.clear()

    def stats(self) -> CacheStats:
        e = self._entries
        counted = ("hits", "misses", "evictions", "expirations", "weight", "max_weight")
        return CacheStats(**{k: getattr(e, k) for k in counted}, entries=len(e), ttl_seconds=e.ttl)


#: the result cache every entry point puts in front of KGs that do I/O (``tot-mcp --cache-size``
#: changes it)
DEFAULT_CACHE_WEIGHT = 200_000
DEFAULT_CACHE_TTL = 600.0
