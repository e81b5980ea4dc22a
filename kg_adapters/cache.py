"""A caching wrapper for any KG: bounded LRU + TTL over ``get_relations``, ``get_edges`` and ``describe_entity``.

Tree search asks the same questions again and again (every branch re-expands the topic entity; many clients
share popular entities), and a remote SPARQL endpoint answers in tens or hundreds of milliseconds, so caching
pays. Entity search and linking are cached too: every answering path links the question before its strategy
does, and a linked KG asks each member again.

One :class:`ResultCache` can be shared by every KG of a server, so that a single size bound holds for the whole
process. Keys therefore carry the wrapped KG's identity — its name, backend class, a per-wrapper token and its
:class:`~kg_adapters.base.Limits` — so a result can never be served to a different KG or configuration, even if
two KGs share a name across reconfigurations. The bound is by *weight* (1 + edges + relations in the result),
not by entry count, because one ``get_edges`` page can hold 200 edges and another none.

Only complete results are cached: errors, and pages marked ``partial`` (a backend failed), are always retried.
Cached values are the same frozen pydantic objects every time; callers must not mutate their lists.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from .base import KnowledgeGraph
from .errors import InvalidInput
from .lru import LRU
from .models import (
    AdjacentIds,
    Direction,
    EdgePage,
    EntityDescription,
    EntityMatch,
    RelationList,
)

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
    if isinstance(value, tuple) and len(value) == 2:  # a bulk read under its widest limit
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
    """Thread-safe LRU with a time-to-live and a total weight bound. ``clock`` is injectable for tests."""

    def __init__(
        self, max_weight: int = 200_000, ttl_seconds: float = 600.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_weight < 1:
            raise InvalidInput("cache max_weight must be ≥ 1")
        if ttl_seconds <= 0:
            raise InvalidInput("cache ttl_seconds must be > 0")
        self._entries: LRU[Any] = LRU(max_weight, ttl=ttl_seconds, weigh=_weight, clock=clock)
        self._lock = threading.Lock()

    _MISSING = object()

    def get(self, key: Hashable) -> Any:
        """The cached value, or ``ResultCache._MISSING`` (counted as a miss)."""
        with self._lock:
            return self._entries.get(key, self._MISSING)

    def find(self, key: Hashable) -> Any:
        """:meth:`get` where a miss is not counted: a look for another call's answer that may serve this one."""
        with self._lock:
            return self._entries.get(key, self._MISSING) if key in self._entries else self._MISSING

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._entries.put(key, value)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def stats(self) -> CacheStats:
        with self._lock:
            e = self._entries
            return CacheStats(
                hits=e.hits,
                misses=e.misses,
                evictions=e.evictions,
                expirations=e.expirations,
                entries=len(e),
                weight=e.weight,
                max_weight=e.max_weight,
                ttl_seconds=e.ttl,
            )


class CachedKG:
    """``CachedKG(kg, cache)`` behaves exactly like ``kg`` but answers repeated traversal calls from ``cache``.

    It is a :class:`KnowledgeGraph` by registration, not by inheritance: it defines only the calls it caches,
    and every other attribute is the wrapped KG's own (``__getattr__``), so no call can fall back to a base
    default by a forgotten forward."""

    def __init__(self, inner: KnowledgeGraph, cache: ResultCache | None = None) -> None:
        self.inner = inner
        self.name, self.limits, self.capabilities = inner.name, inner.limits, inner.capabilities
        self.cache = cache or ResultCache()
        # the per-wrapper token keeps two wrappers apart even when name, class and limits coincide
        self._identity = (inner.name, type(inner).__module__, type(inner).__qualname__, next(_tokens), inner.limits)

    def __getattr__(self, attr: str) -> Any:
        if attr == "inner":  # not set yet (unpickling, a failed __init__): no recursion
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def members(self) -> Mapping[str, Any]:
        return {self.name: self}

    async def _cached(self, key: tuple, compute: Callable[[], Awaitable[T]]) -> T:
        full_key = (self._identity, *key)
        try:
            hash(full_key)
        except TypeError:  # malformed input (e.g. a dict as an ID): let the backend reject it
            return await compute()
        value = self.cache.get(full_key)
        if value is not ResultCache._MISSING:
            return value
        value = await compute()
        if not getattr(value, "partial", False):
            self.cache.put(full_key, value)
        return value

    # -- cached ------------------------------------------------------------------------------------------------
    async def _read(self, read: Callable[..., Awaitable[T]], entity_ids: list[str], *args: Any) -> T:
        """``read`` (a method of the inner KG, taking entity IDs first) cached under its name and arguments: a page
        with descriptions and one without are different answers. IDs that are not a list go to the inner KG as they
        are, for it to refuse."""
        if not isinstance(entity_ids, (list, tuple)):
            return await read(entity_ids, *args)
        ids = tuple(entity_ids)
        return await self._cached((read.__name__, ids, *args), lambda: read(list(ids), *args))

    def _peek(self, *key: Any) -> Any:
        try:
            return self.cache.find((self._identity, *key))
        except TypeError:  # unhashable: the backend will refuse it
            return ResultCache._MISSING

    async def get_relations(self, entity_ids: list[str]) -> RelationList:
        # one entity's relation_counts is its get_relations when no more than the cap (a reasoner and a tool
        # step read the same topic: one request, not two)
        if isinstance(entity_ids, list) and len(entity_ids) == 1:
            known = self._peek("relation_counts", (entity_ids[0],))
            if known is not ResultCache._MISSING and len(known.relations) <= self.limits.max_relations:
                return known
        return await self._read(self.inner.get_relations, entity_ids)

    async def relation_counts(self, entity_ids: list[str]) -> RelationList:
        if isinstance(entity_ids, list) and len(entity_ids) == 1:
            known = self._peek("get_relations", (entity_ids[0],))
            if known is not ResultCache._MISSING and not known.truncated:
                return known
        return await self._read(self.inner.relation_counts, entity_ids)

    async def relations_by_entity(self, entity_ids: list[str]) -> dict[str, RelationList]:
        """Cached ``get_relations([id])`` answers where there are; the rest from the backend's bulk read, kept under
        the same keys (they are those answers)."""
        out: dict[str, RelationList] = {}
        missing: list[str] = []
        for eid in dict.fromkeys(entity_ids):
            try:
                value = self.cache.get((self._identity, "get_relations", (eid,)))
            except TypeError:  # unhashable: let the backend reject it
                value = ResultCache._MISSING
            if value is ResultCache._MISSING:
                missing.append(eid)
            else:
                out[eid] = value
        if missing:
            got = await self.inner.relations_by_entity(missing)
            for eid, rl in got.items():
                if not getattr(rl, "partial", False):
                    self.cache.put((self._identity, "get_relations", (eid,)), rl)
            out.update(got)
        return {e: out[e] for e in dict.fromkeys(entity_ids) if e in out}

    async def get_edges(self, entity_ids: list[str], relation_id: str, direction: Direction = Direction.forward,
                        limit: int | None = None, offset: int = 0) -> EdgePage:
        return await self._read(self.inner.get_edges, entity_ids, relation_id, direction, limit, offset)

    async def get_labelled_edges(self, entity_ids: list[str], relation_id: str,
                                 direction: Direction = Direction.forward, limit: int | None = None,
                                 offset: int = 0) -> EdgePage:
        return await self._read(self.inner.get_labelled_edges, entity_ids, relation_id, direction, limit, offset)

    async def adjacent(
        self, entity_ids: list[str], relation_id: str, direction: Direction = Direction.forward, limit: int = 2000
    ) -> EdgePage:
        return await self._bulk(self.inner.adjacent, _first_edges, entity_ids, relation_id, direction, limit)

    async def adjacent_ids(
        self, entity_ids: list[str], relation_id: str, direction: Direction = Direction.forward, limit: int = 2000
    ) -> AdjacentIds:
        return await self._bulk(self.inner.adjacent_ids, _first_pairs, entity_ids, relation_id, direction, limit)

    async def _bulk(self, read: Callable[..., Awaitable[T]], first: Callable[[T, int], T],
                    entity_ids: list[str], relation_id: str, direction: Direction, limit: int) -> T:
        """A bulk read, answered from the same read with a larger limit when there is one (the edges are in no
        promised order, so its first ``limit`` are an answer): a link rule's 20-edge read of an entity a
        reasoner has read in full costs nothing."""
        if not isinstance(entity_ids, (list, tuple)):
            return await read(entity_ids, relation_id, direction, limit)
        key = (read.__name__ + ":widest", tuple(entity_ids), relation_id, direction)
        try:
            wide = self.cache.get((self._identity, *key))
        except TypeError:  # unhashable: the backend will refuse it
            return await read(entity_ids, relation_id, direction, limit)
        if wide is not ResultCache._MISSING and wide[0] >= limit:
            return first(wide[1], limit)
        value = await read(list(entity_ids), relation_id, direction, limit)
        if not getattr(value, "partial", False) and (wide is ResultCache._MISSING or wide[0] < limit):
            self.cache.put((self._identity, *key), (limit, value))
        return value

    async def describe_entity(self, entity_id: str) -> EntityDescription:
        return await self._cached(("describe_entity", entity_id), lambda: self.inner.describe_entity(entity_id))

    async def initialize(self, query: str, limit: int = 10) -> list[EntityMatch]:
        """Cached: every answering path links the question before its strategy does (strategies.grounding)."""
        return list(await self._cached(("initialize", query, limit), lambda: self.inner.initialize(query, limit)))

    async def initialize_named(self, query: str, limit: int = 10, named: frozenset[str] = frozenset()
                               ) -> list[EntityMatch]:
        return list(await self._cached(("initialize_named", query, limit, frozenset(named)),
                                       lambda: self.inner.initialize_named(query, limit, named)))

    async def search_entities(self, text: str, limit: int = 10) -> list[EntityMatch]:
        return list(await self._cached(("search_entities", text, limit),
                                       lambda: self.inner.search_entities(text, limit)))


KnowledgeGraph.register(CachedKG)


def _first_edges(page: EdgePage, limit: int) -> EdgePage:
    """A bulk page read with a limit of at least ``limit``, cut to ``limit`` edges (a page with fewer is whole, or
    was cut at exactly ``limit``)."""
    if len(page.edges) <= limit:
        return page
    return page.model_copy(update={"edges": page.edges[:limit], "truncated": True})


def _first_pairs(read: AdjacentIds, limit: int) -> AdjacentIds:
    """:func:`_first_edges` for an ID-level read (``limit`` counts pairs and values together)."""
    if len(read.pairs) + len(read.values) <= limit:
        return read
    pairs = read.pairs[:limit]
    return AdjacentIds.model_construct(pairs=pairs, values=read.values[: limit - len(pairs)], truncated=True)


#: the result cache every entry point puts in front of KGs that do I/O (``tot-mcp --cache-size`` changes it)
DEFAULT_CACHE_WEIGHT = 200_000
DEFAULT_CACHE_TTL = 600.0


def with_result_cache(kgs: dict[str, KnowledgeGraph], max_weight: int, ttl: float) -> dict[str, KnowledgeGraph]:
    """One bounded LRU/TTL result cache in front of every KG that does I/O (SPARQL, stores, composites). In-memory
    KGs stay bare: a lookup there is as fast as a cache hit, and strategies use their index directly."""
    if max_weight <= 0:
        return kgs
    cache = ResultCache(max_weight, ttl)
    return {name: kg if kg.capabilities.local_index else CachedKG(kg, cache) for name, kg in kgs.items()}
