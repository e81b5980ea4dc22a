"""The contract every backend implements (:class:`KnowledgeGraph`), its limits and declared
capabilities.

Callers never use a backend directly: :class:`~kg_adapters.graph.Graph` builds the
Tree-of-Traversals interface (Markowitz et al. 2024: ``initialize``, ``get_relations``,
``get_edges``) and everything else on top of it. Everything is async because most backends do I/O;
the in-memory backend runs its CPU work off the event loop.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import overload

from .errors import InvalidInput, UnknownKG
from .models import (
    AdjacentIds,
    Direction,
    EdgePage,
    EntityDescription,
    EntityMatch,
    KGInfo,
    Relation,
    RelationList,
    split_id,
)


@dataclass(frozen=True)
class Limits:
    """Caps that keep every result bounded. Shared by all adapters; the server exposes them as
    configuration."""

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
    """What a backend offers, declared by the backend (as rdflib's ``Store`` declares its flags) so
    callers never guess from class names or attributes."""

    backend: str = "unknown"  # shown to users: memory, oxigraph, sparql, wikidata, linked
    # answers come from a server we do not control (tools get openWorldHint; worth caching)
    remote: bool = False
    local_index: bool = (
        False  # every triple is in memory: ``kg.local_graph()`` gives the integer-indexed view
    )
    sparql: bool = False  # answers caller-written read-only SPARQL (``sparql_query``), guarded
    relation_search: bool = (
        False  # searches relations by meaning itself (``search_relations``); else ranked here
    )


#: one step of a walk: a relation ID and the direction it is followed in
Hop = tuple[str, Direction]

#: ``find(names, LABEL)``: entities by exact name (no relation ID has this form: they are
#: ``kg:local``)
LABEL = "label"


class KnowledgeGraph(abc.ABC):
    """The contract a backend implements: ten reads, each over many IDs at once where it can, so
    that a walk costs one query per hop per KG. Everything callers use beyond them (pages with
    labels, counts over a frontier, descriptions, links, the result cache, fan-out across KGs) is
    written once above it, in :class:`~kg_adapters.graph.Graph` — the way rdflib's ``Graph`` builds
    on a few ``Store`` primitives.

    IDs a backend accepts and returns are namespaced with ``self.name``. Optional abilities are
    declared in :attr:`capabilities` and then implemented under a fixed name: ``sparql_query``
    (``sparql``), ``search_relations`` (``relation_search``), ``local_graph`` (``local_index``)."""

    name: str
    limits: Limits
    capabilities: Capabilities = Capabilities()

    def __init__(self, name: str, limits: Limits | None = None) -> None:
        self.name = name
        self.limits = limits or Limits()

    @property
    def backend(self) -> str:
        return self.capabilities.backend

    @property
    def vocabulary(self) -> Mapping[str, str] | None:
        """Every relation's label by ID, when the backend knows them without I/O (local backends);
        else None."""
        return None

    @abc.abstractmethod
    async def initialize(
        self, query: str, limit: int = 10, named: frozenset[str] = frozenset()
    ) -> list[EntityMatch]:
        """Entities mentioned in ``query`` (entity linking); ``[bracketed]`` spans are explicit
        mentions. ``named``: bracketed mentions another KG already matched by name — their fuzzy
        look-alikes here are left out of a linked answer anyway, so a backend whose fuzzy fallback
        is a scan may skip it for them."""

    @abc.abstractmethod
    async def search_entities(self, text: str, limit: int = 10) -> list[EntityMatch]:
        """Entities whose label matches ``text`` (exact, case-insensitive, fuzzy, BM25 — best
        first)."""

    @abc.abstractmethod
    async def relations(self, entity_ids: list[str]) -> dict[str, RelationList]:
        """Each entity's relations, forward and backward, with edge counts: ``{id: its relations}``
        for any number of IDs, read in as few queries as the backend can. An ID naming nothing here
        is left out; a malformed ID or one of another KG raises
        :class:`~kg_adapters.errors.InvalidInput`."""

    @abc.abstractmethod
    async def edges(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int | None = None,
        offset: int = 0,
        labelled: bool = True,
    ) -> EdgePage:
        """One stable page of edges from at most ``limits.max_ids`` entities along one relation,
        with the entities they touch — by label only if ``labelled``, else with descriptions. An
        unknown relation raises :class:`~kg_adapters.errors.NotFound`."""

    @overload
    async def adjacent_ids(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = ...,
        limit: int = ...,
        labelled: bool = ...,
        then: Sequence[str] = ...,
        with_relations: bool = ...,
    ) -> AdjacentIds: ...
    @overload
    async def adjacent_ids(
        self,
        entity_ids: list[str],
        relation_id: Sequence[Hop],
        direction: Direction = ...,
        limit: int = ...,
        labelled: bool = ...,
        then: Sequence[str] = ...,
        with_relations: bool = ...,
    ) -> dict[Hop, AdjacentIds]: ...
    @abc.abstractmethod
    async def adjacent_ids(
        self,
        entity_ids: list[str],
        relation_id: str | Sequence[Hop],
        direction: Direction = Direction.forward,
        limit: int = 2000,
        labelled: bool = False,
        then: Sequence[str] = (),
        with_relations: bool = False,
    ) -> AdjacentIds | dict[Hop, AdjacentIds]:
        """Up to ``limit`` edges of one relation from any number of entities, as IDs, in no promised
        order; ``truncated`` when more exist. No IDs: a sample of the relation's edges anywhere in
        the KG. ``labelled``: the caller will ask :meth:`labels` of the targets next (a backend that
        can read them with the edges does). ``relation_id`` a sequence of hops (relation ID,
        direction): each hop's read as above, keyed by hop, in as few queries as the backend can (a
        walk expands a frontier along several relations at once); a backend that reads one relation
        at a time answers through :func:`hop_by_hop`. ``then``: relation IDs the caller reads of
        the targets next (a link rule's identifiers), read forward from them with a sequence of
        hops into each hop's ``then`` by a backend that saves a round trip so; others ignore it.
        ``with_relations``: the caller asks :meth:`relations` of the targets next (a walk's
        frontier), which such a backend then answers from this read.
        """

    @abc.abstractmethod
    async def labels(self, entity_ids: list[str], key: bool = False) -> dict[str, str]:
        """Each entity's label (``key``: the IRI, or triple-file name, behind it — what :meth:`find`
        resolves). An ID malformed, of another KG or naming nothing is left out; a failed backend
        raises."""

    @abc.abstractmethod
    async def describe_entity(self, entity_id: str) -> EntityDescription:
        """Label, description, aliases and relation summary of one entity."""

    @abc.abstractmethod
    async def find(
        self, values: list[str], relation_id: str | None = None, limit: int = 20
    ) -> dict[str, list[str]]:
        """Entities by value, for each value: with ``relation_id``, those whose relation has that
        literal (an external identifier back to its item); with :data:`LABEL`, those named exactly
        so, else case-insensitively (how label links join KGs; never fuzzy); without, the entity
        whose key (IRI, triple-file name, a literal's lexical form) it is."""

    @abc.abstractmethod
    async def info(self) -> KGInfo:
        """Name, backend, size and a sample of the relation vocabulary."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections or files."""

    # -- shared validation for backends (not part of what callers use) -----------------------------
    def _local_ids(self, entity_ids: list[str], bulk: bool = False) -> list[str]:
        """Strip this KG's namespace, rejecting IDs of other KGs with a clear message; the batch
        size checked unless ``bulk`` (a reasoner's frontier is not bounded by a tool call's
        ``max_ids``)."""
        if not bulk:
            self.limits.check_ids(entity_ids)
        out = []
        for qid in entity_ids:
            kg, local = split_id(qid)
            if kg != self.name:
                raise UnknownKG(f"ID {qid!r} belongs to KG {kg!r}, not {self.name!r}")
            out.append(local)
        return out

    def _local_relation(self, relation_id: str) -> str:
        kg, local = split_id(relation_id)
        if kg != self.name:
            raise UnknownKG(f"relation {relation_id!r} belongs to KG {kg!r}, not {self.name!r}")
        return local


def hops_of(relation_id: object) -> list[Hop]:
    """The distinct hops of an ``adjacent_ids`` call given a sequence, validated."""
    if isinstance(relation_id, (str, bytes)) or not isinstance(relation_id, Sequence):
        raise InvalidInput(
            "relation_id must be a relation ID or a sequence of (relation ID, direction)"
        )
    hops: dict[Hop, None] = {}
    for hop in relation_id:
        if not (isinstance(hop, Sequence) and len(hop) == 2 and isinstance(hop[0], str)):
            raise InvalidInput(f"a hop is (relation ID, direction), not {hop!r}")
        try:
            hops[(hop[0], Direction(hop[1]))] = None
        except ValueError as e:
            raise InvalidInput(f"direction must be forward or backward, not {hop[1]!r}") from e
    return list(hops)


def hop_by_hop(
    read: Callable[..., AdjacentIds],
    entity_ids: list[str],
    relation_id: str | Sequence[Hop],
    direction: Direction,
    limit: int,
    labelled: bool,
) -> AdjacentIds | dict[Hop, AdjacentIds]:
    """``adjacent_ids`` of a backend that reads one relation at a time (``read``), for one relation
    or a sequence of hops (read in turn: a local backend pays no round trip a read)."""
    if isinstance(relation_id, str):
        return read(entity_ids, relation_id, direction, limit, labelled)
    return {hop: read(entity_ids, hop[0], hop[1], limit, labelled) for hop in hops_of(relation_id)}


def merge_relation_lists(lists: Sequence[RelationList]) -> RelationList:
    """Several entities' relations as one list: counts added up per (relation, direction) — edges,
    and the entities having it — flags and warnings combined, the first answer's order kept."""
    if len(lists) == 1:
        return lists[0]
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
            having = r.entities if r.entities is not None else 1
            if old is None:
                merged[key] = r.model_copy(update={"entities": having})
            else:
                count = (
                    None
                    if old.count is None and r.count is None
                    else (old.count or 0) + (r.count or 0)
                )
                entities = (old.entities or 0) + having  # set when first merged
                merged[key] = old.model_copy(update={"count": count, "entities": entities})
    return RelationList.model_construct(
        relations=list(merged.values()), truncated=truncated, partial=partial, warnings=warnings
    )
