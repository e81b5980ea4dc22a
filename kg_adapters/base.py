"""The one interface every backend implements, mirroring Tree-of-Traversals' KG interface (Markowitz et al. 2024).

``initialize`` links a natural-language query to entities; ``get_relations`` lists the relation types the given
entities have (both directions); ``get_edges`` follows one relation and returns the edges and the entities they
reach. Everything is async because most backends do I/O; the in-memory backend simply never awaits.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .eager import gather_eager
from .errors import InvalidInput, KGError, NotFound, UnknownKG
from .models import (
    AdjacentIds,
    Direction,
    EdgePage,
    EntityDescription,
    EntityMatch,
    Entity,
    KGInfo,
    Relation,
    RelationList,
    split_id,
)
from .text import key as label_key

if TYPE_CHECKING:  # the SPARQL package imports this module; the result models are only needed for annotations
    from .sparql.guard import SparqlRows
    from .sparql.relsearch import RelationHit


@dataclass(frozen=True)
class Limits:
    """Caps that keep every result bounded. Shared by all adapters; the server exposes them as configuration."""

    max_ids: int = 50  # entity IDs per call (also Wikidata's batch size)
    max_relations: int = 500
    max_edges: int = 200  # per page of get_edges
    max_search: int = 50
    max_query_chars: int = 2000

    def check_ids(self, ids: list[str]) -> None:
        if not ids:
            raise InvalidInput("no entity IDs given")
        if len(ids) > self.max_ids:
            raise InvalidInput(f"{len(ids)} IDs given; at most {self.max_ids} per call")

    def check_query(self, query: str) -> str:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query is empty")
        if len(query) > self.max_query_chars:
            raise InvalidInput(f"query is {len(query)} characters; at most {self.max_query_chars}")
        return query.strip()

    def clamp(self, limit: int | None, cap: int) -> int:
        if limit is None:
            return cap
        if limit < 1:
            raise InvalidInput("limit must be ≥ 1")
        return min(limit, cap)


@dataclass(frozen=True)
class Capabilities:
    """What a backend offers, declared by the backend (as rdflib's ``Store`` declares its flags) so callers never
    guess from class names or attributes."""

    backend: str = "unknown"  # shown to users: memory, oxigraph, sparql, wikidata, linked
    remote: bool = False  # answers come from a server we do not control (tools get openWorldHint; worth caching)
    local_index: bool = False  # every triple is in memory: ``kg.local_graph()`` gives the integer-indexed view
    sparql: bool = False  # answers caller-written read-only SPARQL (:meth:`KnowledgeGraph.sparql_query`), guarded


def labels_only(entities: Mapping[str, Entity]) -> dict[str, Entity]:
    """The entities without their descriptions (see :meth:`KnowledgeGraph.get_labelled_edges`)."""
    return {k: e.model_copy(update={"description": None}) if e.description else e for k, e in entities.items()}


class KnowledgeGraph(abc.ABC):
    """A named KG. IDs it accepts and returns are namespaced with ``self.name``."""

    name: str
    limits: Limits
    capabilities: Capabilities = Capabilities()

    @property
    def backend(self) -> str:
        return self.capabilities.backend

    def __init__(self, name: str, limits: Limits | None = None) -> None:
        self.name = name
        self.limits = limits or Limits()

    # -- the Tree-of-Traversals interface -------------------------------------------------------------------
    @abc.abstractmethod
    async def initialize(self, query: str, limit: int = 10) -> list[EntityMatch]:
        """Entities mentioned in ``query`` (entity linking). ``[bracketed]`` spans are taken as explicit mentions."""

    async def initialize_named(self, query: str, limit: int = 10, named: frozenset[str] = frozenset()
                               ) -> list[EntityMatch]:
        """:meth:`initialize`, told which ``[bracketed]`` mentions another KG already matched by name. Such a
        mention's fuzzy look-alikes here are left out of a linked answer anyway (unless as good as a name match,
        :data:`~kg_adapters.routing.EXACT_ENOUGH`), so a backend whose fuzzy fallback is a scan (SPARQL ``CONTAINS``
        over every label) may skip it for them. The default is :meth:`initialize`."""
        return await self.initialize(query, limit)

    @abc.abstractmethod
    async def get_relations(self, entity_ids: list[str]) -> RelationList:
        """Relation types the entities have, forward and backward, with edge counts where cheap."""

    async def relation_counts(self, entity_ids: list[str]) -> RelationList:
        """:meth:`get_relations` of any number of entities, counts (edges, and entities having the relation) added
        up, every relation kept (a caller shows what it can). Read in batches of ``max_ids``; a backend with its
        own bulk batches overrides it (SPARQL: ``batch_size`` IDs a query, more than a tool call takes)."""
        step = max(1, self.limits.max_ids)
        lists = [await self.get_relations(entity_ids[i : i + step]) for i in range(0, len(entity_ids), step)]
        return merge_relation_lists(lists)

    async def relations_by_entity(self, entity_ids: list[str]) -> dict[str, RelationList]:
        """Each entity's own :meth:`get_relations` answer, asked of many entities at once: ``{id: what
        get_relations([id]) returns}``; an ID that call refuses (:class:`~kg_adapters.errors.KGError`: unknown,
        malformed) is left out. Strategies that need every node's relations separately (the offline reasoner's
        chain statistics) ask this instead of one call per node. This default makes those calls, concurrently; a
        backend that can read many entities' relations apart in one query overrides it."""
        ids = list(dict.fromkeys(entity_ids))

        async def one(eid: str) -> RelationList | None:
            try:
                return await self.get_relations([eid])
            except KGError:
                return None

        got = await gather_eager(one(e) for e in ids)
        return {e: rl for e, rl in zip(ids, got) if rl is not None}

    @abc.abstractmethod
    async def get_edges(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int | None = None,
        offset: int = 0,
    ) -> EdgePage:
        """Edges from the entities along one relation, plus labels of every entity they reach."""

    async def get_labelled_edges(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int | None = None,
        offset: int = 0,
    ) -> EdgePage:
        """:meth:`get_edges` with the entities by label only, no description: what a page shown to a model
        carries (a page of 200 targets would otherwise carry 200 descriptions no one asked for; they are
        describe_entity's job). A backend that makes descriptions while reading edges skips that work here
        (:class:`LabelledEdgesKG`); this default drops them from :meth:`get_edges`' page."""
        page = await self.get_edges(entity_ids, relation_id, direction, limit, offset)
        return page.model_copy(update={"entities": labels_only(page.entities)})

    async def adjacent(
        self, entity_ids: list[str], relation_id: str, direction: Direction = Direction.forward, limit: int = 2000
    ) -> EdgePage:
        """Up to ``limit`` edges of one relation from any number of entities, with the labels of what they reach,
        no qualifiers, in no promised order; ``truncated`` when more exist. Strategies that walk whole frontiers
        (the offline reasoner reads a genre's thousands of films) need one bulk read, not the tools' pages: on a
        SPARQL endpoint, paging costs a sorted query per 200 edges. This default pages :meth:`get_edges`; a
        backend with a cheaper bulk read overrides it."""
        from .follow import edges_from  # the tools' paged walk over batches, bounded by a budget

        # one edge over the limit is what tells "cut" from "exactly the limit" (a budget reached at the end of a
        # batch says nothing of the batches after it)
        reach = await edges_from(self, list(dict.fromkeys(entity_ids)), relation_id, direction, budget=limit + 1)
        return EdgePage.model_construct(
            edges=reach.edges[:limit], entities=reach.entities, truncated=len(reach.edges) > limit,
            next_offset=None, partial=reach.partial, warnings=reach.warnings, relation=reach.relation,
        )

    async def adjacent_ids(
        self, entity_ids: list[str], relation_id: str, direction: Direction = Direction.forward, limit: int = 2000
    ) -> AdjacentIds:
        """:meth:`adjacent`'s edges as IDs, without the labels: a walk reads thousands of edges to name a few
        answers at its end (:meth:`labels_of`), and a label costs a store two index lookups an edge and a SPARQL
        read a join. Same ``limit`` and ``truncated``. This default reads :meth:`adjacent`; a backend with a
        cheaper unlabelled read overrides it."""
        return AdjacentIds.of_page(await self.adjacent(entity_ids, relation_id, direction, limit))

    async def labels_of(self, entity_ids: list[str]) -> dict[str, str]:
        """:meth:`label_of` of many entities (the answers a walk shows); an ID malformed, of another KG or (where
        the backend can tell without a query) naming nothing is left out; a failed backend raises. A backend that
        can ask for many in one query overrides it."""
        out: dict[str, str] = {}
        for eid in dict.fromkeys(entity_ids):
            try:
                out[eid] = await self.label_of(eid)
            except (InvalidInput, NotFound):
                continue
        return out

    # -- helpers every client wants ---------------------------------------------------------------------------
    @abc.abstractmethod
    async def search_entities(self, text: str, limit: int = 10) -> list[EntityMatch]:
        """Entities whose label matches ``text`` (exact, case-insensitive, fuzzy, BM25 — best first)."""

    @abc.abstractmethod
    async def describe_entity(self, entity_id: str) -> EntityDescription:
        """Label, description, aliases and relation summary of one entity."""

    @abc.abstractmethod
    async def info(self) -> KGInfo:
        """Name, backend, size and a sample of the relation vocabulary."""

    # -- optional: identity across KGs (used by CompositeKG to link members) ----------------------------------
    async def resolve_key(self, key: str) -> str | None:
        """The ID of the entity whose IRI (or name, in a ``head|relation|tail`` file; or lexical form, for a
        literal node) is ``key``, or None. Backends that cannot look that up return None."""
        return None

    async def entity_key(self, entity_id: str) -> str | None:
        """The IRI (or triple-file name) behind an entity ID, the inverse of :meth:`resolve_key`."""
        return (await self.describe_entity(entity_id)).iri

    async def find_by_value(self, relation_id: str, value: str, limit: int = 20) -> list[str]:
        """Entities whose ``relation_id`` has the literal ``value`` (an external ID back to its item). The fallback
        finds the literal as a node (:meth:`resolve_key`) and walks the relation backward; SPARQL asks directly."""
        node = await self.resolve_key(value)
        if node is None:
            return []
        page = await self.get_edges([node], relation_id, Direction.backward, limit=limit)
        return [e.target for e in page.edges if e.target]

    async def find_by_values(self, relation_id: str, values: list[str], limit: int = 20) -> dict[str, list[str]]:
        """:meth:`find_by_value` for many values at once, by value (a link rule joins a whole frontier by its
        identifiers); a backend that can ask for many in one query overrides it (SPARQL)."""
        return {v: await self.find_by_value(relation_id, v, limit) for v in dict.fromkeys(values)}

    async def label_of(self, entity_id: str) -> str:
        """The entity's label (backends with the label at hand answer without describing the whole entity)."""
        return (await self.describe_entity(entity_id)).entity.label

    async def find_by_label(self, label: str, limit: int = 20) -> list[Entity]:
        """Entities named exactly ``label``, else case-insensitively (how label links are made; no fuzzy matches).
        The fallback filters :meth:`search_entities`; backends with a label index answer directly."""
        if not label.strip():
            return []
        hits = await self.search_entities(label, limit=min(max(limit, 1), self.limits.max_search))
        exact = [h.entity for h in hits if h.match == "exact" and h.entity.label == label]
        want = label_key(label)
        return (exact or [h.entity for h in hits if label_key(h.entity.label) == want])[:limit]

    async def find_by_labels(self, labels: list[str], limit: int = 20) -> dict[str, list[Entity]]:
        """:meth:`find_by_label` for many labels at once (a label link joins a whole frontier by its names); a
        backend with a label index that can look many up in one go overrides it."""
        return {label: await self.find_by_label(label, limit) for label in dict.fromkeys(labels)}

    async def same_as(self, entity_id: str, into: str | None = None) -> list[str]:
        """The same entity in the other linked KGs (only in KG ``into``, if given). A KG on its own knows none;
        :class:`~kg_adapters.routing.LinkedKG` answers by its link rules."""
        return []

    async def same_as_many(self, entity_ids: list[str]) -> dict[str, list[str]]:
        """:meth:`same_as` of many entities (a walk links every entity it adds); one whose lookup failed is left
        out. A KG that links overrides it to ask in bulk first."""
        out: dict[str, list[str]] = {}
        for eid in dict.fromkeys(entity_ids):
            try:
                out[eid] = await self.same_as(eid)
            except KGError:
                continue
        return out

    async def same_as_in(self, entity_ids: list[str], into: str) -> dict[str, list[str]]:
        """:meth:`same_as` into KG ``into`` for many entities (a reasoner links whole frontiers); an entity whose
        lookup failed links nowhere. A KG that links answers from its link cache where it can."""
        out: dict[str, list[str]] = {}
        for eid in dict.fromkeys(entity_ids):
            try:
                out[eid] = await self.same_as(eid, into)
            except KGError:
                out[eid] = []
        return out

    async def sparql_query(
        self, query: str, *, limit: int | None = None, timeout: float | None = None
    ) -> SparqlRows:
        """Run a caller-written **read-only** SPARQL query (SELECT, ASK, CONSTRUCT, DESCRIBE) through
        :func:`kg_adapters.sparql.guard.check_query`: at most ``limit`` rows (the backend's cap when None), within
        ``timeout`` seconds. Only backends whose ``capabilities.sparql`` is True answer; the default refuses."""
        raise InvalidInput(f"KG {self.name!r} ({self.backend}) does not answer SPARQL queries")

    async def search_relations(self, text: str, limit: int = 10) -> list[RelationHit]:
        """Relations whose label, alias or description matches ``text`` (what they mean), best first. The default
        ranks :meth:`relation_vocabulary` lexically (labels and counts from :meth:`info`'s sample, else the
        humanized ID); SPARQL backends search the endpoint's property labels instead."""
        from .sparql.relsearch import rank
        from .text import humanize

        vocabulary = self.relation_vocabulary()
        if vocabulary is None:
            raise InvalidInput(f"KG {self.name!r} ({self.backend}) cannot list its relations to search them")
        sample = {r.id: r for r in (await self.info()).relation_sample}
        candidates = []
        for rid in sorted(vocabulary):
            known = sample.get(rid)
            label = known.label if known is not None else humanize(rid.split(":", 1)[-1])
            candidates.append((rid, label, None, [], known.count if known is not None else None))
        return rank(text, candidates, limit)

    def relation_vocabulary(self) -> frozenset[str] | None:
        """Every relation ID this KG has, when it can say without I/O (local backends); None when unknown. Used to
        reject a configuration naming a relation that does not exist."""
        return None

    async def subjects_of(self, relation_id: str, limit: int = 20) -> list[str]:
        """A few entities that have ``relation_id`` (forward): a sample to try a link rule on at start-up. Backends
        that cannot say return [] (the rule then goes untried, not failed)."""
        return []

    def relation_labels(self) -> Mapping[str, str] | None:
        """Every relation's label by ID, when the KG can say without I/O (local backends); None when unknown. Lets
        a link rule name a relation by its label."""
        return None

    def members(self) -> Mapping[str, "KnowledgeGraph"]:
        """The KGs this one answers from, by name: itself, unless it federates several (:class:`LinkedKG`)."""
        return {self.name: self}

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections or files."""

    # -- shared validation ----------------------------------------------------------------------------------
    def local_ids(self, entity_ids: list[str]) -> list[str]:
        """Check the batch size and strip this KG's namespace; reject IDs of other KGs with a clear message."""
        self.limits.check_ids(entity_ids)
        out = []
        for qid in entity_ids:
            kg, local = split_id(qid)
            if kg != self.name:
                raise UnknownKG(f"ID {qid!r} belongs to KG {kg!r}, not {self.name!r}")
            out.append(local)
        return out

    def bulk_local_ids(self, entity_ids: list[str]) -> list[str]:
        """:meth:`local_ids` of any number of IDs, as a bulk read takes them: a tool call's ``max_ids`` does not
        bound a reasoner's frontier, every ID is still checked."""
        step = max(1, self.limits.max_ids)
        return [x for i in range(0, len(entity_ids), step) for x in self.local_ids(entity_ids[i : i + step])]

    def local_relation(self, relation_id: str) -> str:
        kg, local = split_id(relation_id)
        if kg != self.name:
            raise UnknownKG(f"relation {relation_id!r} belongs to KG {kg!r}, not {self.name!r}")
        return local


class LabelledEdgesKG(KnowledgeGraph):
    """A backend whose :meth:`~KnowledgeGraph.get_edges` and :meth:`~KnowledgeGraph.get_labelled_edges` are one
    read, :meth:`_edges`, told whether the page's entities need their labels only (then no description is read or
    made, the work the default :meth:`~KnowledgeGraph.get_labelled_edges` would do and throw away)."""

    @abc.abstractmethod
    async def _edges(self, entity_ids: list[str], relation_id: str, direction: Direction, limit: int | None,
                     offset: int, labelled: bool) -> EdgePage:
        """One page of edges: :meth:`~KnowledgeGraph.get_edges`' if not ``labelled``, else
        :meth:`~KnowledgeGraph.get_labelled_edges`'."""

    async def get_edges(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int | None = None,
        offset: int = 0,
    ) -> EdgePage:
        return await self._edges(entity_ids, relation_id, direction, limit, offset, labelled=False)

    async def get_labelled_edges(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int | None = None,
        offset: int = 0,
    ) -> EdgePage:
        return await self._edges(entity_ids, relation_id, direction, limit, offset, labelled=True)


def merge_relation_lists(lists: Sequence[RelationList]) -> RelationList:
    """Several answers of :meth:`KnowledgeGraph.get_relations` as one: counts added up per (relation, direction),
    flags and warnings combined, the first answer's order kept."""
    merged: dict[tuple[str, Direction], Relation] = {}
    truncated = partial = False
    warnings: list[str] = []
    for rl in lists:
        truncated |= rl.truncated
        partial |= rl.partial
        warnings.extend(w for w in rl.warnings if w not in warnings)
        for r in rl.relations:
            key = (r.id, r.direction)
            old = merged.get(key)
            if old is None:
                merged[key] = r
            else:
                add = {f: (getattr(old, f) or 0) + (getattr(r, f) or 0) for f in ("count", "entities")
                       if getattr(old, f) is not None or getattr(r, f) is not None}
                merged[key] = old.model_copy(update=add)
    return RelationList.model_construct(relations=list(merged.values()), truncated=truncated, partial=partial,
                                        warnings=warnings)
