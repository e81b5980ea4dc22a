"""What the Tree-of-Traversals driver knows at one node of the search tree.

``TraversalState`` is plain data: the ASM (:mod:`strategies.tot.asm`) builds new states from old
ones by :meth:`TraversalState.fork`, never mutating a state that a tree node already holds.
Entities, edges and relations are frozen models, so forks share them and only copy the containers.
"""

from __future__ import annotations

import copy
import math
import re
from collections import defaultdict
from enum import Enum

from pydantic import BaseModel, Field, PrivateAttr

from tot_mcp.kg_adapters.models import Direction, Edge, Entity, EntityMatch, Relation, inverse_of
from tot_mcp.kg_adapters.text import key as text_key

from .actions import Action, Answer, AnswerItem, ExpandKG

#: an entity or relation ID as a model writes it ("movies:E12", "wd:Q42"): how answers and replies
#: name things
ID_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}:[^\s,;|\[\]()]+")

#: actions one expansion takes: EXPAND_KG, SELECT_ENTITIES, SELECT_RELATION (once begun it always
#: completes)
EXPANSION_STEPS = 3
#: the default budget: expansions (hops) per trajectory — a 3-hop question, linked or not, with one
#: to spare
DEFAULT_MAX_HOPS = 4
#: edges one expansion keeps, and entities one selection takes: a cut answer set cannot be mended
#: within the hop budget, and on MetaQA 3-hop dev one hop of the question's own path holds more than
#: 50 edges in 49 of 300 questions, more than 100 in 6 (docs/tot-search.md, "Edge caps")
DEFAULT_MAX_EDGES = 100
DEFAULT_MAX_SELECTED = 100


class AsmState(str, Enum):
    DEFAULT = "default"
    SELECTING_ENTITIES = "selecting_entities"
    SELECTING_RELATION = "selecting_relation"
    DONE = "done"


class Expansion(BaseModel):
    """One completed EXPAND_KG → SELECT_ENTITIES → SELECT_RELATION round."""

    entity_ids: list[str]
    relation_id: str
    direction: Direction
    edges_added: int = 0
    entities_added: list[str] = Field(default_factory=list)
    truncated: bool = Field(
        default=False, description="More edges existed than the per-expansion cap."
    )
    empty_sources: list[str] = Field(
        default_factory=list, description="Selected entities that had no such edge."
    )
    cut_sources: list[str] = Field(
        default_factory=list, description="Entities some of whose edges the cap left out."
    )
    total_edges: int | None = Field(
        default=None, description="Edges the relation has from these entities, if known."
    )
    note: str = ""

    def cut_text(self, label) -> str:
        """One line saying what the cap left out, naming the entities it cut (first few)."""
        if not self.truncated:
            return ""
        total = f" of {self.total_edges}" if self.total_edges else ""
        who = ", ".join(f"{i} ({label(i)})" for i in self.cut_sources[:4])
        more = f" +{len(self.cut_sources) - 4} more" if len(self.cut_sources) > 4 else ""
        return f"capped: kept {self.edges_added}{total} edges" + (
            f"; not all edges of {who}{more}" if who else ""
        )


class LocalSubgraph(BaseModel):
    """The part of the KG the model has seen: entities (by ID), edges (deduplicated), relation
    labels, history."""

    entities: dict[str, Entity] = Field(default_factory=dict)
    edges: list[Edge] = Field(default_factory=list)
    relations: dict[str, Relation] = Field(
        default_factory=dict, description="Labels of relations on edges."
    )
    expansions: list[Expansion] = Field(default_factory=list)
    same_as: dict[str, list[str]] = Field(
        default_factory=dict, description="Cross-KG links found by label."
    )
    twins: dict[str, Entity] = Field(
        default_factory=dict,
        description="Linked equivalents not in the subgraph "
        "itself, kept for their summaries (what the other KG knows).",
    )
    _keys: set | None = PrivateAttr(default=None)  # the triple keys of ``edges`` (see add_edge)

    def copy_containers(self) -> "LocalSubgraph":
        flat = ("entities", "edges", "relations", "expansions", "twins")
        new = self.model_copy(update={k: copy.copy(getattr(self, k)) for k in flat})
        new.same_as = {k: list(v) for k, v in self.same_as.items()}
        new._keys = None if self._keys is None else set(self._keys)
        return new

    def add_entity(self, entity: Entity) -> None:
        self.entities.setdefault(entity.id, entity)

    def add_edge(self, edge: Edge) -> bool:
        """Add unless the same KG triple is already there (an edge seen from either end counts
        once). The keys of the edges held are kept in a set, so an expansion of n edges costs O(n),
        not O(n²)."""
        if self._keys is None or len(self._keys) != len(self.edges):
            self._keys = {_triple_key(e) for e in self.edges}
        t = _triple_key(edge)
        if t in self._keys:
            return False
        self.edges.append(edge)
        self._keys.add(t)
        return True

    def link(self, a: str, b: str) -> None:
        """Record that ``a`` and ``b`` are the same thing in two KGs (both directions)."""
        for x, y in ((a, b), (b, a)):
            if y not in self.same_as.setdefault(x, []):
                self.same_as[x].append(y)

    def label(self, entity_id: str) -> str:
        e = self.entities.get(entity_id)
        return e.label if e else entity_id

    def render(self, max_edges_per_group: int = DEFAULT_MAX_EDGES) -> str:
        """The paper's token-efficient form: ``id: label - description`` lines, then edges grouped
        by source entity and relation with counts (a group longer than one expansion keeps is
        elided; ENTITIES names all)."""
        lines = ["ENTITIES:"]
        for e in self.entities.values():
            desc = f" - {e.description}" if e.description else ""
            same = ""
            if self.same_as.get(e.id):
                twins = [self._twin_text(t) for t in self.same_as[e.id]]
                same = f" (same as {'; '.join(twins)})"
            lines.append(f"  {e.id}: {e.label}{desc}{same}")
        if not self.entities:
            lines.append("  (none)")
        groups: dict[str, dict[tuple[str, Direction], list[str]]] = defaultdict(
            lambda: defaultdict(list)
        )
        for edge in self.edges:
            if edge.target is not None:
                other = f"{edge.target} ({self.label(edge.target)})"
            else:
                other = repr(edge.value.value) if edge.value else "?"
            # a statement's qualifiers, or a structured (blank-node) value's own properties, which
            # say what the bare value cannot: `` {start time: '1999'; end time: '2004'}``
            quals = edge.qualifier_text(
                lambda q: (
                    self.label(q.target) if q.target else repr(q.value.value) if q.value else "?"
                ),
                shown=5,
            )
            groups[edge.source][(edge.relation, edge.direction)].append(other + quals)
        lines.append("EDGES:")
        if not groups:
            lines.append("  (none)")
        for source, by_rel in groups.items():
            lines.append(f"  {source} ({self.label(source)}):")
            for (rel_id, direction), others in by_rel.items():
                rel = self.relations.get(rel_id)
                name = rel.label if rel else rel_id
                if direction is Direction.backward:
                    name = rel.inverse_label if rel and rel.inverse_label else inverse_of(name)
                shown = others[:max_edges_per_group]
                cut = len(others) - len(shown)
                more = f", ... (+{cut} more, all in ENTITIES)" if cut else ""
                lines.append(f"    {rel_id} [{name}] ({len(others)}): {', '.join(shown)}{more}")
        if self.expansions:  # what was looked up, including what found nothing (negative evidence)
            lines.append("EXPANSIONS:")
            for n, x in enumerate(self.expansions, 1):
                who = ", ".join(x.entity_ids[:3]) + (
                    f" +{len(x.entity_ids) - 3} more" if len(x.entity_ids) > 3 else ""
                )
                what = (
                    f"{x.edges_added} new edge{'s' if x.edges_added != 1 else ''}"
                    if x.edges_added
                    else "nothing new"
                )
                empty = ""
                if x.empty_sources:
                    none = ", ".join(x.empty_sources[:3]) + (
                        f" +{len(x.empty_sources) - 3}" if len(x.empty_sources) > 3 else ""
                    )
                    empty = f"; none for {none}"
                cut_note = f"; {x.cut_text(self.label)}" if x.truncated else ""
                lines.append(
                    f"  {n}. {who} → {x.relation_id} {x.direction.value}: {what}{empty}{cut_note}"
                )
        return "\n".join(lines)

    def _twin_text(self, twin_id: str) -> str:
        """A linked equivalent: its ID and, when it is not itself listed, what its own KG says of
        it."""
        twin = self.twins.get(twin_id)
        if twin_id in self.entities or twin is None or not twin.description:
            return twin_id
        return f"{twin_id}: {twin.description}"

    # -- grounding an answer -----------------------------------------------------------------------
    def ground(self, claim: str, avoid: frozenset[str] = frozenset()) -> AnswerItem | None:
        """The subgraph's evidence for one answer item the model wrote: an entity named by ID or
        label (not one of ``avoid``, the question's own entities, when another carries the name),
        else a literal value on an edge, else a value shown in an entity's summary. None when the
        subgraph does not show it."""
        claim = claim.strip().strip(" ;\"'")
        if not claim:
            return None
        if claim.endswith(".") and not any(
            text_key(e.label) == text_key(claim) for e in self.entities.values()
        ):
            claim = claim.rstrip(". ")  # a sentence's full stop, unless a label ends so ("… R.N.")
        ids = [i for i in ID_RE.findall(claim) if i in self.entities or i in self.twins]
        if ids:
            i = ids[0]
            return AnswerItem(
                text=self.label(i) if i in self.entities else self.twins[i].label,
                entity_id=i,
                source="entity",
            )
        want = text_key(claim)
        if not want:
            return None
        named = [i for i, e in self.entities.items() if text_key(e.label) == want]
        named.sort(key=lambda i: i in avoid)
        if named:
            return AnswerItem(
                text=self.entities[named[0]].label, entity_id=named[0], source="entity"
            )
        for edge in self.edges:
            if edge.value is not None and text_key(str(edge.value.value)) == want:
                return AnswerItem(text=str(edge.value.value), source="edge value")
        pattern = re.compile(rf"(?<!\w){re.escape(want)}(?!\w)")
        for owner, e in [*self.entities.items(), *self.twins.items()]:
            if e.description and pattern.search(text_key(e.description)):
                return AnswerItem(text=claim, source=f"summary of {owner}")
        return None


def _triple_key(edge: Edge) -> tuple:
    """The KG statement an edge shows, the same from either end. A value with no node of its own (a
    blank node over generic SPARQL: "(structured value)") is told apart by its properties, so two
    awards stay two edges."""
    s, r, o = edge.triple()
    if isinstance(o, str):
        return (s, r, o)
    quals = tuple(
        (q.relation.id, q.target, q.value.value if q.value else None) for q in edge.qualifiers
    )
    return (s, r, ("literal", o.value, o.datatype, o.lang), quals)


class InvalidAction(BaseModel):
    """A rejected proposal: what was proposed, in which ASM state, and why (shown back to the
    policy)."""

    asm_state: AsmState
    action: Action | None = None
    raw: str | None = None
    reason: str


class TraversalState(BaseModel):
    """Everything a policy may look at. The driver's guarantees per ASM state are documented on
    :class:`strategies.tot.policy.Policy`."""

    question: str
    topic_entities: list[str] = Field(
        default_factory=list, description="IDs linked by initialize, best first."
    )
    topic_matches: list[EntityMatch] = Field(default_factory=list)
    subgraph: LocalSubgraph = Field(default_factory=LocalSubgraph)
    asm_state: AsmState = AsmState.DEFAULT
    selected_entities: list[str] = Field(default_factory=list)
    candidate_relations: list[Relation] = Field(default_factory=list)
    relations_truncated: bool = False
    actions: list[Action] = Field(
        default_factory=list, description="The trajectory: valid actions applied so far."
    )
    depth: int = Field(default=0, description="Number of valid actions applied (len(actions)).")
    max_hops: int | None = Field(
        default=DEFAULT_MAX_HOPS, description="Expansions a trajectory may begin."
    )
    max_depth: int | None = Field(
        default=None,
        description="The paper's budget: actions before an answer is "
        "forced (an expansion takes 3, THINK 1). None: only max_hops counts.",
    )
    answer: Answer | None = None
    invalid_actions: list[InvalidAction] = Field(default_factory=list)

    def fork(self) -> "TraversalState":
        """A copy whose containers can be changed without touching this state."""
        lists = (
            "selected_entities",
            "candidate_relations",
            "actions",
            "invalid_actions",
            "topic_entities",
            "topic_matches",
        )
        return self.model_copy(
            update={
                "subgraph": self.subgraph.copy_containers(),
                **{k: list(getattr(self, k)) for k in lists},
            }
        )

    @property
    def must_answer(self) -> bool:
        """In DEFAULT with no expansion left (:meth:`expansions_left` == 0): only ANSWER now."""
        return self.asm_state is AsmState.DEFAULT and self.expansions_left() <= 0

    @property
    def hops(self) -> int:
        """Expansions begun so far (a pending one included)."""
        return sum(isinstance(a, ExpandKG) for a in self.actions)

    def expansions_left(self) -> int:
        """Expansions the ASM will still accept on this trajectory — after the pending one, if any,
        completes — when no THINK is spent (with ``max_depth`` a THINK costs an action). The one
        number the prompt states and the ASM enforces."""
        left = [] if self.max_hops is None else [max(0, self.max_hops - self.hops)]
        if self.max_depth is not None:
            pending = {AsmState.SELECTING_ENTITIES: 2, AsmState.SELECTING_RELATION: 1}.get(
                self.asm_state, 0
            )
            left.append(math.ceil(max(0, self.max_depth - self.depth - pending) / EXPANSION_STEPS))
        return min(left) if left else 1_000

    def signature(self) -> tuple:
        """What makes two search nodes the same place: the facts gathered (edges), the ASM state,
        the pending selection, the answer and the budget left — not the thoughts or the order the
        facts came in."""
        edges = frozenset(_triple_key(e) for e in self.subgraph.edges)
        answer = self.answer.key() if self.answer is not None else None
        return (
            self.asm_state.value,
            edges,
            tuple(sorted(self.selected_entities)),
            answer,
            self.expansions_left(),
        )

    def think_costs_expansion(self) -> bool:
        """With an action budget, whether one THINK now leaves one expansion fewer."""
        after = self.model_copy(update={"depth": self.depth + 1})
        return after.expansions_left() < self.expansions_left()

    @property
    def last_invalid(self) -> InvalidAction | None:
        return self.invalid_actions[-1] if self.invalid_actions else None
