"""The façade every caller uses: the Tree-of-Traversals interface and everything else, built once
over the ten reads of :class:`~kg_adapters.base.KnowledgeGraph` (as rdflib's ``Graph`` builds on
``Store``).

A :class:`Graph` wraps one backend. Its methods fall in two layers: the *reads*, each one backend
read answered through the result cache (``relations_by_entity``,
``get_edges``/``get_labelled_edges``, ``adjacent_ids``, ``labels_of``, ``describe_entity``,
``find_by_values``, ``entity_key``, ``resolve_key``, linking, search and info), and everything
*derived*, which asks only those reads. :class:`~kg_adapters.routing.LinkedKG` is a Graph over
several Graphs: it answers the reads by routing them across its members, and inherits the rest.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .base import LABEL, Capabilities, Hop, KnowledgeGraph, Limits, hops_of, merge_relation_lists
from .cache import ResultCache
from .cpu import run_cpu
from .errors import InvalidInput, NotFound
from .models import (
    AdjacentIds,
    Direction,
    Edge,
    EdgePage,
    Entity,
    EntityDescription,
    EntityMatch,
    KGInfo,
    Literal,
    RelationList,
    split_id,
)
from .text import humanize

if TYPE_CHECKING:
    from .local_graph import LocalGraph
    from .sparql.guard import SparqlRows
    from .sparql.relsearch import RelationHit

T = TypeVar("T")
_tokens = itertools.count(1)


class Graph:
    """One KG as callers see it. ``cache``: repeated reads answered from a shared
    :class:`ResultCache` (worth it for backends that do I/O; None: every read goes to the
    backend)."""

    def __init__(self, backend: KnowledgeGraph | None, cache: ResultCache | None = None) -> None:
        self.store = backend
        self.cache = cache
        if backend is not None:
            self.name, self.limits, self.capabilities = (
                backend.name,
                backend.limits,
                backend.capabilities,
            )
        # keys carry this wrapper's identity: one cache serves every KG of a process, never one KG's
        # answer to another (two KGs may share a name across reconfigurations)
        self._identity = (self.name if backend is not None else None, next(_tokens))
        # relations read of every hop's targets (read_with_targets), in order
        self._then: dict[str, None] = {}

    name: str
    limits: Limits
    capabilities: Capabilities

    @property
    def _backend(self) -> KnowledgeGraph:
        """The backend that answers the reads; only a graph that links several (which answers
        every read itself) has none."""
        if self.store is None:
            raise TypeError(f"{self!r} has no backend of its own to read")
        return self.store

    @property
    def backend(self) -> str:
        return self.capabilities.backend

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.backend})"

    def members(self) -> Mapping[str, Graph]:
        """The KGs this one answers from, by name: itself, unless it links several."""
        return {self.name: self}

    def local_graph(self) -> LocalGraph:
        """The integer-indexed view of a KG held in memory (``capabilities.local_index``)."""
        if not self.capabilities.local_index or self.store is None:
            raise InvalidInput(f"KG {self.name!r} ({self.backend}) is not held in memory")
        return self.store.local_graph()  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        if self.store is not None:
            await self.store.aclose()

    # -- the cache ---------------------------------------------------------------------------------
    async def _cached(self, key: tuple, compute: Callable[[], Awaitable[T]]) -> T:
        """``compute()``, kept under ``key`` unless partial or unreachable (a backend failed: asked
        again next time)."""
        if self.cache is None:
            return await compute()
        full = (self._identity, *key)
        try:
            value = self.cache.get(full)
        except TypeError:  # malformed input (a dict as an ID): the backend refuses it
            return await compute()
        if value is ResultCache._MISSING:
            value = await compute()
            if not (getattr(value, "partial", False) or getattr(value, "unreachable", None)):
                self.cache.put(full, value)
        return value

    def _peek(self, *key: Any, counted: bool = False) -> Any:
        """The value kept under ``key``; ``counted``: as the answer to this call (a miss and an
        expiry count), else as another call's answer that may serve this one."""
        if self.cache is None:
            return ResultCache._MISSING
        try:
            full = (self._identity, *key)
            return self.cache.get(full) if counted else self.cache.find(full)
        except TypeError:
            return ResultCache._MISSING

    # -- reads: one backend read each, through the cache -------------------------------------------
    async def initialize_named(
        self, query: str, limit: int = 10, named: frozenset[str] = frozenset()
    ) -> list[EntityMatch]:
        """:meth:`initialize`, told which ``[bracketed]`` mentions another KG already matched by
        name (a backend whose fuzzy fallback is a scan may skip it for those)."""
        return list(
            await self._cached(
                ("initialize", query, limit, frozenset(named)),
                lambda: self._backend.initialize(query, limit, frozenset(named)),
            )
        )

    async def search_entities(self, text: str, limit: int = 10) -> list[EntityMatch]:
        """Entities whose label matches ``text`` (exact, case-insensitive, fuzzy, BM25 — best
        first)."""
        return list(
            await self._cached(
                ("search", text, limit), lambda: self._backend.search_entities(text, limit)
            )
        )

    async def relations_by_entity(self, entity_ids: list[str]) -> dict[str, RelationList]:
        """Each entity's relations, any number of IDs at once: ``{id: its relations}``; an ID naming
        nothing is left out. Cached per entity, so a frontier read and a tool call on one of its
        entities share the answer."""
        ids = list(dict.fromkeys(entity_ids))
        out: dict[str, RelationList] = {}
        missing = []
        for eid in ids:
            value = self._peek("relations", eid, counted=True)
            if value is ResultCache._MISSING:
                missing.append(eid)
            else:
                out[eid] = value
        if missing:
            got = await self._backend.relations(missing)
            for eid, rl in got.items():
                if self.cache is not None and not rl.partial:
                    self.cache.put((self._identity, "relations", eid), rl)
            out.update(got)
        return {e: out[e] for e in ids if e in out}

    async def get_edges(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int | None = None,
        offset: int = 0,
    ) -> EdgePage:
        """Edges from the entities along one relation, plus every entity they reach, with
        descriptions."""
        return await self._page(entity_ids, relation_id, direction, limit, offset, labelled=False)

    async def get_labelled_edges(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int | None = None,
        offset: int = 0,
    ) -> EdgePage:
        """:meth:`get_edges` with the entities by label only: what a page shown to a model carries
        (a page of 200 targets would otherwise carry 200 descriptions no one asked for; they are
        describe_entity's job)."""
        return await self._page(entity_ids, relation_id, direction, limit, offset, labelled=True)

    async def _page(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction,
        limit: int | None,
        offset: int,
        labelled: bool,
    ) -> EdgePage:
        def read() -> Awaitable[EdgePage]:
            return self._backend.edges(
                list(entity_ids), relation_id, direction, limit, offset, labelled
            )

        if not isinstance(entity_ids, (list, tuple)):
            return await read()  # the backend refuses it
        return await self._cached(
            ("edges", tuple(entity_ids), relation_id, direction, limit, offset, labelled), read
        )

    async def adjacent_ids(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int = 2000,
        labelled: bool = False,
    ) -> AdjacentIds:
        """Up to ``limit`` edges of one relation from any number of entities, as IDs, in no promised
        order; ``truncated`` when more exist. A walk reads thousands of edges to name a few answers
        at its end (:meth:`labels_of`). A read with a larger limit answers a smaller one (its first
        ``limit`` edges are an answer): a link rule's 20-edge read of an entity a reasoner has read
        in full costs nothing."""
        if not isinstance(entity_ids, (list, tuple)) or not isinstance(relation_id, str):
            return await self._backend.adjacent_ids(
                entity_ids, relation_id, direction, limit, labelled=labelled
            )
        hop = (relation_id, Direction(direction))
        return (await self.adjacent_along(entity_ids, [hop], limit, labelled))[hop]

    async def adjacent_along(
        self,
        entity_ids: list[str],
        hops: Sequence[Hop],
        limit: int = 2000,
        labelled: bool = False,
        with_relations: bool = False,
    ) -> dict[Hop, AdjacentIds]:
        """:meth:`adjacent_ids` of the same entities along several hops (relation, direction), each
        with its own ``limit``: the hops the cache does not answer in one backend read (a walk
        expands a frontier along several relations at once). A read that left nothing out is
        kept for each of its entities too, so any read of some of them is answered from it (a
        link lookup or a page source among a frontier read). ``with_relations``: the caller reads
        the targets' relations next (a backend that can reads them with the hops)."""
        hops = hops_of(hops)
        ids = tuple(dict.fromkeys(entity_ids))
        out: dict[Hop, AdjacentIds] = {}
        todo: list[tuple[Hop, Any]] = []
        for hop in hops:
            wide = self._peek("adjacent", ids, *hop)
            known = self._known(ids, hop, limit, labelled) if wide is ResultCache._MISSING else None
            if known is not None:
                out[hop] = known
            elif _serves(wide, limit, labelled):
                out[hop] = _first_pairs(wide[1], limit)
            else:
                todo.append((hop, wide))
        got: dict[Hop, AdjacentIds] = {}
        if todo:
            # nothing along a read of them alone (a link rule's own read of its values)
            alone = {h[0] for h, _ in todo} <= self._then.keys()
            then = list(self._then) if self.cache is not None and not alone else []
            got = await self._backend.adjacent_ids(
                list(ids),
                [h for h, _ in todo],
                Direction.forward,
                limit,
                labelled=labelled,
                then=then,
                with_relations=with_relations,
            )
        for hop, wide in todo:
            if got[hop].then:  # kept per target, not in the read (the cache weighs no ``then``)
                self._keep_then(got[hop])
                got[hop] = got[hop].model_copy(update={"then": {}})
            out[hop] = got[hop]
            if self.cache is not None and (wide is ResultCache._MISSING or wide[0] < limit):
                self.cache.put((self._identity, "adjacent", ids, *hop), (limit, got[hop], labelled))
                if len(ids) > 1 and not got[hop].truncated:
                    self._keep_each(ids, hop, got[hop], limit, labelled)
        return {h: out[h] for h in hops}

    def read_with_targets(self, relation_id: str) -> None:
        """Read ``relation_id`` forward from the targets of every hop read from now on, where the
        backend can in the same query, and keep each target's read (:meth:`adjacent_ids` of it
        then costs nothing): a link rule reads identifiers of the nodes a walk reached, one round
        trip after the walk's own on a remote KG."""
        self._then[relation_id] = None

    def _keep_then(self, read: AdjacentIds) -> None:
        """Keep each target's read of each relation in ``read.then``, as a complete read of it."""
        targets = tuple(dict.fromkeys(t for _, t in read.pairs))
        for relation_id, more in read.then.items():
            self._keep_each(targets, (relation_id, Direction.forward), more, 0, False)

    def _known(
        self, ids: tuple[str, ...], hop: Hop, limit: int, labelled: bool
    ) -> AdjacentIds | None:
        """The read of ``ids`` along ``hop`` from complete reads of each, if all are kept."""
        if self.cache is None or len(ids) < 2:
            return None
        pairs: list[tuple[str, str]] = []
        values: list[tuple[str, str]] = []
        for eid in ids:
            one = self._peek("adjacent", (eid,), *hop)
            if one is ResultCache._MISSING or one[1].truncated or (labelled and not one[2]):
                return None
            pairs += one[1].pairs
            values += one[1].values
        whole = AdjacentIds.model_construct(pairs=pairs, values=values, truncated=False)
        return _first_pairs(whole, limit)

    def _keep_each(
        self, ids: tuple[str, ...], hop: Hop, read: AdjacentIds, limit: int, labelled: bool
    ) -> None:
        if self.cache is None:
            return
        pairs: dict[str, list[tuple[str, str]]] = {eid: [] for eid in ids}
        values: dict[str, list[tuple[str, str]]] = {eid: [] for eid in ids}
        for s, t in read.pairs:
            pairs.setdefault(s, []).append((s, t))
        for s, v in read.values:
            values.setdefault(s, []).append((s, v))
        for eid in ids:
            one = AdjacentIds.model_construct(pairs=pairs[eid], values=values[eid], truncated=False)
            self.cache.put((self._identity, "adjacent", (eid,), *hop), (limit, one, labelled))

    async def labels_of(self, entity_ids: list[str]) -> dict[str, str]:
        """Each entity's label; an ID malformed, of another KG or naming nothing is left out."""
        return await self._backend.labels(list(dict.fromkeys(entity_ids)))

    async def entity_key(self, entity_id: str) -> str | None:
        """The IRI (or triple-file name) behind an entity ID, the inverse of :meth:`resolve_key`."""
        return (await self._backend.labels([entity_id], key=True)).get(entity_id)

    async def describe_entity(self, entity_id: str) -> EntityDescription:
        """Label, description, aliases and relation summary of one entity."""
        return await self._cached(
            ("describe", entity_id), lambda: self._backend.describe_entity(entity_id)
        )

    async def find_by_values(
        self, relation_id: str, values: list[str], limit: int = 20
    ) -> dict[str, list[str]]:
        """Entities whose ``relation_id`` has each literal value (external identifiers back to their
        items)."""
        return await self._backend.find(list(dict.fromkeys(values)), relation_id, limit)

    async def find_by_labels(self, labels: list[str], limit: int = 20) -> dict[str, list[Entity]]:
        """:meth:`find_by_label` for many names at once (a label link joins a whole frontier by its
        names): one backend read, then one for the names of what it found."""
        wanted = [x for x in dict.fromkeys(labels) if isinstance(x, str) and x.strip()]
        found = await self._backend.find(wanted, LABEL, limit) if wanted else {}
        names = await self.labels_of([e for ids in found.values() for e in ids])
        kg = self.name
        return {
            x: [
                Entity.model_construct(id=e, label=names.get(e, x), description=None, kg=kg)
                for e in found.get(x, [])[:limit]
            ]
            for x in dict.fromkeys(labels)
        }

    async def resolve_key(self, key: str) -> str | None:
        """The ID of the entity whose IRI (or triple-file name; a literal's lexical form) is
        ``key``, or None."""
        if not isinstance(key, str):
            return None
        return next(iter((await self._backend.find([key])).get(key, [])), None)

    async def info(self) -> KGInfo:
        """Name, backend, size and a sample of the relation vocabulary: kept as a read is (a linker,
        the relation listing and the reasoner each ask it, and on SPARQL it is a count over the
        whole KG), but not from an endpoint that did not answer."""
        return await self._cached(("info",), self._backend.info)

    def relation_labels(self) -> Mapping[str, str] | None:
        """Every relation's label by ID, when the KG knows them without I/O (local backends); else
        None."""
        return self._backend.vocabulary

    def relation_vocabulary(self) -> frozenset[str] | None:
        """Every relation ID, when known without I/O: a configuration naming one that does not exist
        is refused."""
        labels = self.relation_labels()
        return None if labels is None else frozenset(labels)

    async def search_relations(self, text: str, limit: int = 10) -> list[RelationHit]:
        """Relations whose label, alias or description matches ``text``, best first: the backend's
        own search where it has one, else its vocabulary ranked lexically (labels and counts from
        :meth:`info`'s sample)."""
        from .sparql.relsearch import rank

        if self.capabilities.relation_search:
            backend: Any = self._backend  # a backend with relation_search defines the method
            return await backend.search_relations(text, limit)
        labels = self.relation_labels()
        if labels is None:
            raise InvalidInput(
                f"KG {self.name!r} ({self.backend}) cannot list its relations to search them"
            )
        sample = {r.id: r for r in (await self.info()).relation_sample}
        candidates: list[tuple[str, str, None, list[str], int | None]] = []
        for rid in sorted(labels):
            known = sample.get(rid)
            label = labels[rid] or humanize(rid.split(":", 1)[-1])
            candidates.append((rid, label, None, [], known.count if known is not None else None))
        return rank(text, candidates, limit)

    async def sparql_query(
        self, query: str, *, limit: int | None = None, timeout: float | None = None
    ) -> SparqlRows:
        """A caller-written **read-only** SPARQL query, guarded (:mod:`kg_adapters.sparql.guard`):
        at most ``limit`` rows, within ``timeout`` seconds. Only KGs whose ``capabilities.sparql``
        is True answer."""
        if not self.capabilities.sparql:
            raise InvalidInput(f"KG {self.name!r} ({self.backend}) does not answer SPARQL queries")
        backend: Any = self._backend  # a backend that answers SPARQL defines the method
        return await backend.sparql_query(query, limit=limit, timeout=timeout)

    async def same_as(self, entity_id: str, into: str | None = None) -> list[str]:
        """The same entity in the other linked KGs (only in KG ``into``, if given): none for a KG on
        its own."""
        return []

    async def same_as_many(self, entity_ids: list[str]) -> dict[str, list[str]]:
        """:meth:`same_as` of many entities."""
        return {e: [] for e in dict.fromkeys(entity_ids)}

    # -- derived: only the reads above are asked ---------------------------------------------------
    async def initialize(self, query: str, limit: int = 10) -> list[EntityMatch]:
        """Entities mentioned in ``query`` (entity linking). ``[bracketed]`` spans are taken as
        explicit mentions."""
        return await self.initialize_named(query, limit)

    async def get_relations(self, entity_ids: list[str]) -> RelationList:
        """Relation types the entities have, forward and backward, with edge counts (at most
        ``max_relations``)."""
        self.limits.check_ids(entity_ids)
        merged = await self.relation_counts(entity_ids, strict=True)
        cap = self.limits.max_relations
        if len(merged.relations) <= cap:
            return merged
        return merged.model_copy(update={"relations": merged.relations[:cap], "truncated": True})

    async def relation_counts(self, entity_ids: list[str], strict: bool = False) -> RelationList:
        """:meth:`get_relations` of any number of entities, counts (edges, and entities having the
        relation) added up, every relation kept. An ID naming nothing is skipped, or with ``strict``
        an error (what a caller named is a mistake to say, not "no relations") — unless a KG failed,
        and so cannot tell."""
        ids = list(dict.fromkeys(entity_ids))
        by = await self.relations_by_entity(ids)
        if strict and not any(rl.partial for rl in by.values()):
            for eid in ids:
                if eid not in by:
                    raise NotFound(f"no entity {eid} in KG {split_id(eid)[0]!r}")
        return merge_relation_lists([by[e] for e in ids if e in by])

    async def adjacent(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int = 2000,
    ) -> EdgePage:
        """:meth:`adjacent_ids` with the entities by label: edges and the labels of what they reach,
        no qualifiers; literal targets the KG gives no ID carry their text as the value."""
        direction = Direction(direction)
        read = await self.adjacent_ids(entity_ids, relation_id, direction, limit, labelled=True)
        ids = list(
            dict.fromkeys(
                [s for s, _ in read.pairs]
                + [t for _, t in read.pairs]
                + [s for s, _ in read.values]
            )
        )
        labels = await self.labels_of(ids)
        # thousands of models: a unit of CPU work, off the event loop in a server (kg_adapters.cpu)
        return await run_cpu(_labelled_page, read, ids, labels, self.name, relation_id, direction)

    async def label_of(self, entity_id: str) -> str:
        """The entity's label."""
        label = (await self.labels_of([entity_id])).get(entity_id)
        if label is None:
            raise NotFound(f"no entity {entity_id} in KG {self.name!r}")
        return label

    async def find_by_value(self, relation_id: str, value: str, limit: int = 20) -> list[str]:
        """Entities whose ``relation_id`` has the literal ``value``."""
        return (await self.find_by_values(relation_id, [value], limit)).get(value, [])

    async def find_by_label(self, label: str, limit: int = 20) -> list[Entity]:
        """Entities named exactly ``label``, else case-insensitively (how label links are made;
        never fuzzy)."""
        return (await self.find_by_labels([label], limit)).get(label, [])

    async def subjects_of(self, relation_id: str, limit: int = 20) -> list[str]:
        """A few entities that have ``relation_id`` (forward): a sample to try a link rule on at
        start-up."""
        read = await self.adjacent_ids([], relation_id, Direction.forward, limit)
        return list(dict.fromkeys([s for s, _ in read.pairs] + [s for s, _ in read.values]))[:limit]


def _labelled_page(
    read: AdjacentIds,
    ids: list[str],
    labels: Mapping[str, str],
    kg: str,
    relation_id: str,
    direction: Direction,
) -> EdgePage:
    """:meth:`Graph.adjacent`'s page: the edges read, and every entity they touch by label."""

    def entity(eid: str) -> Entity:
        return Entity.model_construct(id=eid, label=labels.get(eid, eid), description=None, kg=kg)

    edges = [
        Edge.model_construct(
            source=s, relation=relation_id, direction=direction, target=t, value=None, qualifiers=[]
        )
        for s, t in read.pairs
    ]
    edges += [
        Edge.model_construct(
            source=s,
            relation=relation_id,
            direction=direction,
            target=None,
            value=Literal.model_construct(value=v, datatype=None, lang=None),
            qualifiers=[],
        )
        for s, v in read.values
    ]
    return EdgePage.model_construct(
        edges=edges,
        entities={e: entity(e) for e in ids},
        truncated=read.truncated,
        next_offset=None,
        partial=False,
        warnings=[],
        relation=None,
    )


def _serves(wide: Any, limit: int, labelled: bool) -> bool:
    """Whether a kept read (its limit, the read, labelled) answers a read of ``limit``: one of a
    larger limit, or one that left nothing out."""
    return (
        wide is not ResultCache._MISSING
        and (wide[0] >= limit or not wide[1].truncated)
        and (wide[2] or not labelled)
    )


def _first_pairs(read: AdjacentIds, limit: int) -> AdjacentIds:
    """A bulk read with a limit of at least ``limit``, cut to ``limit`` (pairs and values
    together)."""
    if len(read.pairs) + len(read.values) <= limit:
        return read
    pairs = read.pairs[:limit]
    return AdjacentIds.model_construct(
        pairs=pairs, values=read.values[: limit - len(pairs)], truncated=True
    )


def graphs(
    kgs: Mapping[str, KnowledgeGraph] | Sequence[KnowledgeGraph], cache: ResultCache | None = None
) -> dict[str, Graph]:
    """Each backend as a :class:`Graph`, those that do I/O sharing ``cache`` (one bound for the
    process); in-memory ones read without it (a lookup there is as fast as a cache hit)."""
    items = kgs.values() if isinstance(kgs, Mapping) else kgs
    return {kg.name: Graph(kg, None if kg.capabilities.local_index else cache) for kg in items}
