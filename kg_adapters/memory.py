"""A KG held in memory: triple files and RDF files small enough to index in RAM (the embedded
default too).

Entity IDs are ``<kg>:E<n>`` (stable for a given file); relation IDs are the relation's own name
where that is a safe token (``movies:directed_by``), else ``<kg>:R<n>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .base import LABEL, Capabilities, Hop, KnowledgeGraph, Limits, hop_by_hop
from .cpu import cpu_bound
from .describe import Describer
from .errors import InvalidInput, NotFound
from .label_index import Hit, LabelIndex
from .local_graph import LocalGraph
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
    Relation,
    RelationList,
    inverse_of,
)
from .triple_index import TripleIndex

_ENTITY_LOCAL = re.compile(r"^E(0|[1-9][0-9]{0,9})$")


class MemoryKG(KnowledgeGraph):
    capabilities = Capabilities(backend="memory", local_index=True)

    def __init__(
        self,
        name: str,
        index: TripleIndex,
        *,
        description: str = "",
        limits: Limits | None = None,
        derive_descriptions: bool = True,
    ):
        """``derive_descriptions``: give each entity with no description of its own a short one read
        off its edges (``release year 1994; directed by Robert Zemeckis; …``; see
        :mod:`kg_adapters.describe`)."""
        super().__init__(name, limits)
        self.index = index
        self.description = description
        self._local: LocalGraph | None = None
        # ties between equally good label matches go to the better-connected entity
        self._labels = LabelIndex(
            [n.label for n in index.nodes], priors=self.local_graph().degrees()
        )
        self._prefix = f"{name}:"
        self._entity_prefix = f"{name}:E"
        # Entity models are immutable, so each node's is built once, on first use: building them was
        # the main cost of get_edges (bounded by the KG's own size).
        self._entities: list[Entity | None] = [None] * len(index.nodes)
        self._labelled: list[Entity | None] = [None] * len(index.nodes)  # the same, by label only
        self._describe = Describer(index) if derive_descriptions else None

    # -- id mapping: the one place this backend's entity IDs are spelt and read --------------------
    def node_id(self, i: int) -> str:
        return f"{self._prefix}E{i}"

    def node_of(self, entity_id: str) -> int | None:
        """The node an ID of this KG names, else None (another KG's, malformed, out of range)."""
        # what _ENTITY_LOCAL accepts, without a regex: frontiers of thousands of IDs come through
        # here
        start = self._entity_prefix
        if type(entity_id) is not str or not entity_id.startswith(start):
            return None
        digits = entity_id[len(start) :]
        if (
            not (digits.isascii() and digits.isdigit())
            or len(digits) > 10
            or (digits[0] == "0" and len(digits) > 1)
        ):
            return None
        i = int(digits)
        return i if i < len(self.index.nodes) else None

    def local_graph(self) -> LocalGraph:
        """The integer-indexed view of this KG (built once)."""
        if self._local is None:
            self._local = LocalGraph(self)
        return self._local

    def _nodes(self, entity_ids: list[str]) -> dict[int, None]:
        """Each ID's node, once, in order: read with :meth:`node_of` (a frontier of thousands comes
        through here; no pattern match per ID); another KG's ID or one naming nothing is refused as
        a tool call's is."""
        out: dict[int, None] = {}
        for eid in dict.fromkeys(entity_ids):
            i = self.node_of(eid)
            if i is None:
                (local,) = self._local_ids([eid], bulk=True)
                i = self._node_index(local)
            out[i] = None
        return out

    def _node_index(self, local: str) -> int:
        m = _ENTITY_LOCAL.match(local)
        if not m or int(m.group(1)) >= len(self.index.nodes):
            raise NotFound(f"no entity {self._prefix}{local} in KG {self.name!r}")
        return int(m.group(1))

    def _entity(self, i: int) -> Entity:
        e = self._entities[i]
        if e is None:
            n = self.index.nodes[i]
            desc = n.description or (self._describe(i) if self._describe is not None else None)
            e = Entity.model_construct(
                id=self.node_id(i), label=n.label, description=desc, kg=self.name
            )
            self._entities[i] = e
        return e

    def _labelled_entity(self, i: int) -> Entity:
        """Node ``i`` by label only: never derives a description (the work :meth:`entity` does the
        first time)."""
        e = self._labelled[i]
        if e is None:
            e = self._entities[i]
            if e is None or e.description:
                e = Entity.model_construct(
                    id=self.node_id(i),
                    label=self.index.nodes[i].label,
                    description=None,
                    kg=self.name,
                )
            self._labelled[i] = e
        return e

    def _relation_model(
        self, r: int, direction: Direction, count: int | None = None, entities: int | None = None
    ) -> Relation:
        label = self.index.rel_labels[r]
        return Relation.model_construct(
            id=f"{self._prefix}{self.index.rel_local_ids[r]}",
            label=label,
            inverse_label=inverse_of(label),
            direction=direction,
            count=count,
            entities=entities,
            kg=None,
        )

    def _relation_index(self, relation_id: str) -> int:
        local = self._local_relation(relation_id)
        r = self.index.relation_by_local_id(local)
        if r is None:
            raise NotFound(
                f"no relation {relation_id!r} in KG {self.name!r}; call get_relations to list them"
            )
        return r

    # -- interface ---------------------------------------------------------------------------------
    def _matches(
        self, find: Callable[[str, int], list[Hit]], text: str, limit: int
    ) -> list[EntityMatch]:
        """The entities the label index ``find`` (its ``link``, or its ``search``, whose hits have
        no mention) names for ``text``."""
        found = find(
            self.limits.check_query(text), self.limits.clamp(limit, self.limits.max_search)
        )
        return [
            EntityMatch.model_construct(
                entity=self._entity(h.index), score=h.score, match=h.match, mention=h.mention
            )
            for h in found
        ]

    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def initialize(
        self, query: str, limit: int = 10, named: frozenset[str] = frozenset()
    ) -> list[EntityMatch]:
        return self._matches(self._labels.link, query, limit)

    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def search_entities(self, text: str, limit: int = 10) -> list[EntityMatch]:
        return self._matches(self._labels.search, text, limit)

    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def relations(self, entity_ids: list[str]) -> dict[str, RelationList]:
        out: dict[str, RelationList] = {}
        keys = self.index.rel_keys
        for eid in dict.fromkeys(entity_ids):
            i = self.node_of(eid)
            if i is None:
                self._local_ids([eid], bulk=True)  # another KG's ID is an error, not a miss
                continue
            rels = [
                self._relation_model(r, d, len(ends), 1)
                for d, table in (
                    (Direction.forward, self.index.out),
                    (Direction.backward, self.index.inc),
                )
                for r, ends in sorted(table[i].items(), key=lambda kv: keys[kv[0]])
            ]
            out[eid] = RelationList.model_construct(
                relations=rels, truncated=False, partial=False, warnings=[]
            )
        return out

    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def edges(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction = Direction.forward,
        limit: int | None = None,
        offset: int = 0,
        labelled: bool = True,
    ) -> EdgePage:
        entity = self._labelled_entity if labelled else self._entity
        nodes = [self._node_index(x) for x in self._local_ids(entity_ids)]
        r = self._relation_index(relation_id)
        direction = Direction(direction)
        limit = self.limits.clamp(limit, self.limits.max_edges)
        if offset < 0:
            raise InvalidInput("offset must be ≥ 0")
        table = self.index.out if direction is Direction.forward else self.index.inc
        rel_id = f"{self._prefix}{self.index.rel_local_ids[r]}"
        edges: list[Edge] = []
        entities: dict[str, Entity] = {}
        skip, room, truncated = offset, limit, False
        for i in nodes:
            targets = table[i].get(r)
            if not targets:
                continue
            if skip >= len(targets):
                skip -= len(targets)
                continue
            if room == 0:
                truncated = True
                break
            source = entity(i)
            src = source.id
            entities[src] = source
            chunk = targets[skip : skip + room]
            truncated = skip + room < len(targets)
            skip = 0
            room -= len(chunk)
            for j in chunk:
                node = self.index.nodes[j]
                target = entity(j)
                tid = target.id
                value = (
                    Literal.model_construct(value=node.key, datatype=node.datatype, lang=node.lang)
                    if node.is_literal
                    else None
                )
                edges.append(
                    Edge.model_construct(
                        source=src,
                        relation=rel_id,
                        direction=direction,
                        target=tid,
                        value=value,
                        qualifiers=[],
                    )
                )
                entities[tid] = target
            if truncated:
                break
        end = offset + len(edges)
        return EdgePage.model_construct(
            edges=edges,
            entities=entities,
            truncated=truncated,
            next_offset=end if truncated else None,
            partial=False,
            warnings=[],
            relation=self._relation_model(r, direction),
        )

    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def adjacent_ids(
        self,
        entity_ids: list[str],
        relation_id: str | Sequence[Hop],
        direction: Direction = Direction.forward,
        limit: int = 2000,
        labelled: bool = False,
        then: Sequence[str] = (),  # local: a read of them later costs no round trip
        with_relations: bool = False,
    ) -> AdjacentIds | dict[Hop, AdjacentIds]:
        return hop_by_hop(self._adjacent, entity_ids, relation_id, direction, limit, labelled)

    def _adjacent(
        self,
        entity_ids: list[str],
        relation_id: str,
        direction: Direction,
        limit: int,
        labelled: bool,
    ) -> AdjacentIds:
        r = self._relation_index(relation_id)
        table = self.index.out if Direction(direction) is Direction.forward else self.index.inc
        nid = self.node_id
        if entity_ids:
            nodes = self._nodes(entity_ids)
        else:  # a sample from anywhere: the nodes having the relation
            nodes = dict.fromkeys(i for i, rels in enumerate(table) if r in rels)
        pairs: list[tuple[str, str]] = []
        room = max(0, limit)
        for i in nodes:
            targets = table[i].get(r)
            if not targets:
                continue
            src = nid(i)
            if len(targets) > room:
                pairs.extend((src, nid(j)) for j in targets[:room])
                return AdjacentIds.model_construct(pairs=pairs, values=[], truncated=True)
            pairs.extend((src, nid(j)) for j in targets)
            room -= len(targets)
        return AdjacentIds.model_construct(pairs=pairs, values=[], truncated=False)

    @cpu_bound  # a unit of CPU work: off the event loop in a server (kg_adapters.cpu)
    def labels(self, entity_ids: list[str], key: bool = False) -> dict[str, str]:
        nodes = self.index.nodes
        return {
            eid: nodes[i].key if key else nodes[i].label
            for eid in dict.fromkeys(entity_ids)
            if (i := self.node_of(eid)) is not None
        }

    async def describe_entity(self, entity_id: str) -> EntityDescription:
        (local,) = self._local_ids([entity_id])
        i = self._node_index(local)
        rels = (await self.relations([entity_id]))[entity_id].relations
        node = self.index.nodes[i]
        return EntityDescription(
            entity=self._entity(i),
            aliases=list(node.aliases),
            relations=rels[: self.limits.max_relations],
            iri=node.key if node.key.startswith(("http://", "https://", "urn:")) else None,
        )

    @property
    def vocabulary(self) -> dict[str, str]:
        return {
            f"{self._prefix}{loc}": label
            for loc, label in zip(self.index.rel_local_ids, self.index.rel_labels)
        }

    def _node_by_key(self, key: str) -> int | None:
        """The node a key names: an entity's name, else a literal's value."""
        i = self.index.find_node(key)
        return self.index.find_literal(key) if i is None else i

    async def find(
        self, values: list[str], relation_id: str | None = None, limit: int = 20
    ) -> dict[str, list[str]]:
        if relation_id == LABEL:
            return {
                v: [self.node_id(i) for i in self._labels.named(v)[:limit]]
                for v in dict.fromkeys(values)
            }
        r = None if relation_id is None else self._relation_index(relation_id)
        out: dict[str, list[str]] = {}
        for v in dict.fromkeys(values):
            i = self._node_by_key(v) if isinstance(v, str) else None
            if r is None:
                out[v] = [] if i is None else [self.node_id(i)]
                continue
            subjects = self.index.inc[i].get(r, ()) if i is not None else ()
            out[v] = [self.node_id(j) for j in subjects[:limit]]
        return out

    async def info(self) -> KGInfo:
        top = sorted(range(len(self.index.rel_keys)), key=lambda r: -self.index.rel_counts[r])[:20]
        return KGInfo(
            name=self.name,
            backend=self.backend,
            description=self.description,
            entities=len(self.index.nodes),
            triples=self.index.triples,
            relations=len(self.index.rel_keys),
            relation_sample=[
                self._relation_model(r, Direction.forward, self.index.rel_counts[r]) for r in top
            ],
        )
