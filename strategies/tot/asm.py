"""The action-state machine of Tree-of-Traversals (Markowitz et al. 2024, §3.2).

DEFAULT ──THINK──▶ DEFAULT, ──ANSWER──▶ DONE, ──EXPAND_KG──▶ SELECTING_ENTITIES ──SELECT_ENTITIES
(get_relations)──▶ SELECTING_RELATION ──SELECT_RELATION (get_edges)──▶ DEFAULT.

:meth:`TraversalASM.apply` never mutates its input and never raises for a bad proposal: an invalid
action (wrong state, unknown entity, relation not among the candidates, unparseable output, a KG
error) comes back as a fork of the state with the rejection appended to ``invalid_actions`` and
everything else unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from dataclasses import dataclass

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import KGError
from tot_mcp.kg_adapters.link_grade import best_per_mention
from tot_mcp.kg_adapters.routing import LinkedKG
from tot_mcp.kg_adapters.models import Entity, EntityMatch, split_id

from .actions import (
    Action,
    Answer,
    AnswerItem,
    ExpandKG,
    Invalid,
    SelectEntities,
    SelectRelation,
    Think,
)
from .state import (
    DEFAULT_MAX_EDGES,
    DEFAULT_MAX_HOPS,
    DEFAULT_MAX_SELECTED,
    AsmState,
    Expansion,
    InvalidAction,
    TraversalState,
)


#: candidates the start state links per question (the router links with the same, so the KG answers
#: twice from one label search)
LINK_LIMIT = 10


@dataclass(frozen=True)
class AsmConfig:
    """Bounds on what one step may pull from the KG."""

    max_edges_per_expansion: int = DEFAULT_MAX_EDGES
    # "all the films of these directors", read in batches the KG takes
    max_selected_entities: int = DEFAULT_MAX_SELECTED
    topic_limit: int = 5  # linked topic entities kept from initialize
    link_min_score: float = 0.99  # further matches of one mention kept only when (near-)exact
    link_new_entities: bool = (
        True  # with several KGs, record every new entity's equivalents (same_as)
    )
    describe_twins: bool = (
        True  # keep each equivalent's own summary (what a model reads; an offline policy does not)
    )


#: edges read at once to share an expansion's cap among its sources (more: pages per source instead)
FAIR_SHARE_READ = 2000


def _shares(have: dict[str, int], sources: list[str], cap: int) -> dict[str, int]:
    """How many of each source's ``have`` edges an expansion keeps: an equal quota of ``cap`` each,
    then, in a few rounds, what the small ones left goes to the ones that have more (the rule
    :meth:`TraversalASM._fair_pages` applies page by page)."""
    taken = {s: min(have[s], max(1, cap // len(sources))) for s in sources}
    for _ in range(3):
        want = [s for s in sources if taken[s] < have[s]]
        hungry, extra = _top_up(sum(taken.values()), want, cap)
        for s in hungry:
            taken[s] = min(have[s], taken[s] + extra)
    return taken


def _top_up(used: int, hungry: list[str], cap: int) -> tuple[list[str], int]:
    """One round of sharing what ``used`` leaves of ``cap``: ``extra`` more each for ``hungry`` (one
    each for the first few when less is left than they are); none when nothing is left or wanted."""
    if not hungry or used >= cap:
        return [], 0
    extra = (cap - used) // len(hungry)
    return (hungry, extra) if extra >= 1 else (hungry[: cap - used], 1)


async def link_topics(
    kg: Graph,
    question: str,
    limit: int = AsmConfig.topic_limit,
    min_score: float = AsmConfig.link_min_score,
) -> list[EntityMatch]:
    """The question's entities, best first: per mention only the best match, plus other matches
    of score ≥ ``min_score``, so a fuzzy near-namesake never stands beside the exact one."""
    matches = await kg.initialize(question, limit=LINK_LIMIT)
    keep = {m.entity.id for m in best_per_mention(matches).values()}
    keep |= {m.entity.id for m in matches if m.score >= min_score}
    chosen = sorted((m for m in matches if m.entity.id in keep), key=lambda m: -m.score)
    return list({m.entity.id: m for m in chosen}.values())[:limit]


#: the ASM state each action is valid in (a refusing ANSWER: any)
VALID_IN = {
    Answer: AsmState.DEFAULT,
    Think: AsmState.DEFAULT,
    ExpandKG: AsmState.DEFAULT,
    SelectEntities: AsmState.SELECTING_ENTITIES,
    SelectRelation: AsmState.SELECTING_RELATION,
}


class TraversalASM:
    """Applies actions to states against a KG — typically several linked KGs answered as one
    (:class:`~kg_adapters.routing.LinkedKG`), which routes IDs by namespace and follows links across
    KGs."""

    def __init__(self, kg: Graph | Sequence[Graph], config: AsmConfig | None = None) -> None:
        if not isinstance(kg, Graph):
            if not kg:
                raise ValueError("TraversalASM needs at least one knowledge graph")
            kg = LinkedKG.of(
                list(kg)
            )  # several KGs given: linked by label (build one graph per run to share links)
        self.kg = kg
        self.linked = len(kg.members()) > 1
        self.config = config or AsmConfig()

    # -- the start state ---------------------------------------------------------------------------
    async def initial_state(
        self, question: str, max_depth: int | None = None, max_hops: int | None = DEFAULT_MAX_HOPS
    ) -> TraversalState:
        """The question's entities (:func:`link_topics`, in every KG; an entity's equivalents come
        with it) as the initial local subgraph. KG errors propagate (KGError): a question whose
        entities cannot be linked at all is the caller's to report."""
        cfg = self.config
        chosen = await link_topics(self.kg, question, cfg.topic_limit, cfg.link_min_score)
        state = TraversalState(
            question=question,
            max_depth=max_depth,
            max_hops=max_hops,
            topic_matches=chosen,
            topic_entities=[m.entity.id for m in chosen],
        )
        for m in chosen:
            state.subgraph.add_entity(m.entity)
            for other in m.same_as:
                state.subgraph.link(m.entity.id, other)
        await self._describe_twins(state)
        return state

    # -- transitions -------------------------------------------------------------------------------
    async def apply(self, state: TraversalState, action: Action) -> TraversalState:
        """The state after ``action``; a rejected action yields a fork carrying the rejection (same
        depth, see :func:`was_rejected`)."""
        if state.asm_state is AsmState.DONE:
            return self._reject(state, action, "the search already answered; no further actions")
        if isinstance(action, Invalid):
            return self._reject(state, None, action.reason, raw=action.raw)
        if state.must_answer and not isinstance(action, Answer):
            return self._reject(state, action, "no expansions left: only ANSWER is allowed now")
        # each step takes the action type it is listed under (Any: the lookup by type says which)
        steps: dict[type, Callable[[TraversalState, Any], Awaitable[TraversalState]]] = {
            Answer: self._answer,
            Think: self._think,
            ExpandKG: self._expand,
            SelectEntities: self._select_entities,
            SelectRelation: self._select_relation,
        }
        step = steps.get(type(action))
        if step is None:
            return self._reject(state, None, f"unknown action {action!r}")
        refuses = isinstance(action, Answer) and action.refuses  # "the graph lacks this": any time
        if state.asm_state is not VALID_IN[type(action)] and not refuses:
            why = f"{action.kind.upper()} is not allowed while {state.asm_state.value}"
            return self._reject(state, action, why)
        return await step(state, action)

    async def _answer(self, state: TraversalState, action: Answer) -> TraversalState:
        """An answer is what the model said, kept only as far as the subgraph shows it: each claimed
        item is grounded (an entity by ID or name, a value on an edge or in a summary); items the
        subgraph does not show are dropped and listed in ``ungrounded``. An answer none of whose
        items is shown is turned down."""
        sub = state.subgraph
        unknown = [i for i in action.entity_ids if i not in sub.entities]
        if unknown and not action.claims:
            return self._reject(
                state, action, f"answer entities not in the local subgraph: {', '.join(unknown)}"
            )
        if action.status == "none":
            answer = action.model_copy(
                update={"text": "NONE", "entity_ids": [], "items": [], "ungrounded": []}
            )
        elif action.refuses:  # nothing to ground: the model's reason is the answer
            answer = action.model_copy(
                update={"entity_ids": [], "claims": [], "items": [], "ungrounded": []}
            )
        else:
            claims = (
                action.claims
                or list(action.entity_ids)
                or ([action.text] if action.text.strip() and action.status == "answer" else [])
            )
            if not claims and action.status == "answer":
                return self._reject(state, action, "empty answer")
            avoid = frozenset(state.topic_entities)
            items: list[AnswerItem] = []
            missing: list[str] = []
            for claim in claims:
                item = sub.ground(claim, avoid)
                if item is None and "(" in claim:  # "Harvey (1950)": the name before the aside
                    item = sub.ground(claim.split("(", 1)[0], avoid)
                if item is None:
                    missing.append(claim)
                elif all(item.id != it.id for it in items):
                    items.append(item)
            if claims and not items and action.status == "answer":
                return self._reject(
                    state,
                    action,
                    "no answer item is shown in the local subgraph ("
                    + "; ".join(missing[:5])
                    + "): cite entity IDs, or values as the subgraph shows "
                    "them; expand first if the answer is not there yet",
                )
            answer = action.model_copy(
                update={
                    "items": items,
                    "ungrounded": missing,
                    "entity_ids": [it.entity_id for it in items if it.entity_id],
                    "text": " ; ".join(it.text for it in items) or action.text.strip(),
                }
            )
        return self._step(
            state,
            answer,
            asm_state=AsmState.DONE,
            answer=answer,
            selected_entities=[],
            candidate_relations=[],
        )

    async def _think(self, state: TraversalState, action: Think) -> TraversalState:
        if not action.text.strip():
            return self._reject(state, action, "empty thought")
        if state.max_depth is None and state.actions and isinstance(state.actions[-1], Think):
            return self._reject(state, action, "two THINKs in a row: act now (EXPAND_KG or ANSWER)")
        return self._step(state, action)

    async def _expand(self, state: TraversalState, action: ExpandKG) -> TraversalState:
        if not state.subgraph.entities:
            return self._reject(state, action, "the local subgraph has no entities to expand")
        if state.expansions_left() <= 0:
            return self._reject(state, action, "no expansions left: only ANSWER is allowed now")
        return self._step(state, action, asm_state=AsmState.SELECTING_ENTITIES)

    async def _select_entities(
        self, state: TraversalState, action: SelectEntities
    ) -> TraversalState:
        ids = list(dict.fromkeys(action.entity_ids))
        if not ids:
            return self._reject(state, action, "no entities selected")
        if len(ids) > self.config.max_selected_entities:
            return self._reject(
                state,
                action,
                f"{len(ids)} entities selected; at most {self.config.max_selected_entities}",
            )
        sub = state.subgraph
        unknown = [
            i
            for i in ids
            if i not in sub.entities and not any(i in v for v in sub.same_as.values())
        ]
        if unknown:
            return self._reject(
                state, action, f"entities not in the local subgraph: {', '.join(unknown)}"
            )
        # with linked KGs: the equivalents' relations too; more IDs than one call takes: in batches
        try:
            result = await (
                self.kg.get_relations(ids)
                if len(ids) <= self.kg.limits.max_ids
                else self.kg.relation_counts(ids)
            )
        except KGError as e:
            return self._reject(state, action, f"get_relations failed: {e}")
        if not result.relations:
            return self._reject(
                state, action, "the selected entities have no relations; select others"
            )
        return self._step(
            state,
            action.model_copy(update={"entity_ids": ids}),
            asm_state=AsmState.SELECTING_RELATION,
            selected_entities=ids,
            candidate_relations=result.relations,
            relations_truncated=result.truncated,
        )

    async def _select_relation(
        self, state: TraversalState, action: SelectRelation
    ) -> TraversalState:
        relation = next(
            (
                r
                for r in state.candidate_relations
                if r.id == action.relation_id and r.direction == action.direction
            ),
            None,
        )
        if relation is None:
            flipped = any(r.id == action.relation_id for r in state.candidate_relations)
            hint = " in that direction" if flipped else ""
            return self._reject(
                state, action, f"relation {action.relation_id!r} is not among the candidates{hint}"
            )
        sources = list(
            state.selected_entities
        )  # entities of another KG are followed through their equivalents
        try:
            page, cut = await self._fair_edges(sources, action.relation_id, action.direction)
        except KGError as e:
            return self._reject(state, action, f"get_edges failed: {e}")
        new = self._step(
            state,
            action,
            asm_state=AsmState.DEFAULT,
            selected_entities=[],
            candidate_relations=[],
            relations_truncated=False,
        )
        sub = new.subgraph
        sub.relations.setdefault(relation.id, relation)
        added_edges = 0
        new_entities: list[Entity] = []
        for edge in page.edges:
            for node in (edge.source, edge.target):
                if node is not None and node not in sub.entities:
                    ent = page.entities.get(node) or Entity(
                        id=node, label=node, kg=split_id(node)[0]
                    )
                    sub.add_entity(ent)
                    new_entities.append(ent)
            added_edges += sub.add_edge(edge)
            if edge.via:
                sub.link(edge.via, edge.source)
        if self.config.link_new_entities and self.linked and new_entities:
            # the paper's "entity linking when adding new entities": each new entity's equivalents
            # in the other KGs (the KG's link rules decide), so the subgraph shows where a walk may
            # cross
            for eid, others in (await self.kg.same_as_many([e.id for e in new_entities])).items():
                for other in others:
                    sub.link(eid, other)
        await self._describe_twins(new)
        note = "" if added_edges else "expansion added nothing new"
        if page.truncated:
            note = (
                note + "; " if note else ""
            ) + f"capped at {self.config.max_edges_per_expansion} edges"
        reached_from = {e.via or e.source for e in page.edges}
        sub.expansions.append(
            Expansion(
                empty_sources=[s for s in sources if s not in reached_from and s not in cut],
                cut_sources=cut,
                total_edges=relation.count,
                entity_ids=sources,
                relation_id=action.relation_id,
                direction=action.direction,
                edges_added=added_edges,
                entities_added=[e.id for e in new_entities],
                truncated=page.truncated,
                note=note,
            )
        )
        return new

    # -- helpers -----------------------------------------------------------------------------------
    async def _fair_edges(self, sources: list[str], relation_id: str, direction) -> tuple:
        """The relation's edges from ``sources`` within the per-expansion cap, shared fairly: when
        one request overflows the cap, each source gets an equal quota (what one leaves unused goes
        to the others), so no selected entity is left with nothing while another fills the cap.
        Returns the page and the sources whose edges were cut."""
        cap = self.config.max_edges_per_expansion
        if len(sources) <= self.kg.limits.max_ids:
            page = await self.kg.get_edges(sources, relation_id, direction, limit=cap)
        else:  # more sources than one call takes: one bulk read, as for sharing
            page = await self.kg.adjacent(sources, relation_id, direction, limit=cap)
        if not page.truncated or len(sources) == 1:  # nothing cut, or nothing to share
            return page, list(sources) if page.truncated else []
        # every source's edges in one bulk read (on a linked or remote KG, one read per batch
        # instead of a page per source and round), shared out here; a read too big for that falls
        # back to pages per source
        bulk = await self.kg.adjacent(sources, relation_id, direction, limit=FAIR_SHARE_READ)
        if bulk.truncated:
            return await self._fair_pages(page, sources, relation_id, direction)
        per: dict[str, list] = {s: [] for s in sources}
        for edge in bulk.edges:
            got = per.get(edge.via or edge.source)
            if got is not None:
                got.append(edge)
        for (
            edges
        ) in per.values():  # a source's edges in one fixed order (the bulk read promises none)
            edges.sort(key=lambda e: (e.target or "", e.value.value if e.value is not None else ""))
        taken = _shares({s: len(es) for s, es in per.items()}, sources, cap)
        edges = [e for s in sources for e in per[s][: taken[s]]]
        keep = {n for e in edges for n in (e.source, e.target) if n is not None}
        cut = [s for s in sources if taken[s] < len(per[s])]
        entities = {k: v for k, v in bulk.entities.items() if k in keep}
        return page.model_copy(
            update={"edges": edges[:cap], "entities": entities, "truncated": bool(cut)}
        ), cut

    async def _fair_pages(self, page, sources: list[str], relation_id: str, direction) -> tuple:
        """:meth:`_fair_edges` by pages per source, for sources with too many edges to read at
        once."""
        cap = self.config.max_edges_per_expansion
        sem = asyncio.Semaphore(8)

        async def fetch(src: str, limit: int, offset: int = 0):
            async with sem:
                return await self.kg.get_edges(
                    [src], relation_id, direction, limit=limit, offset=offset
                )

        quota = max(1, cap // len(sources))
        pages = dict(zip(sources, await asyncio.gather(*(fetch(s, quota) for s in sources))))
        for _ in range(
            3
        ):  # what the small ones left goes to the ones that were cut, in a few rounds
            used = sum(len(p.edges) for p in pages.values())
            hungry, extra = _top_up(used, [s for s in sources if pages[s].truncated], cap)
            more = await asyncio.gather(
                *(fetch(s, extra, offset=len(pages[s].edges)) for s in hungry)
            )
            for s, p in zip(hungry, more):
                pages[s] = pages[s].model_copy(
                    update={
                        "edges": pages[s].edges + p.edges,
                        "entities": {**pages[s].entities, **p.entities},
                        "truncated": p.truncated,
                    }
                )
        edges, entities = [], {}
        for s in sources:
            edges.extend(pages[s].edges)
            entities.update(pages[s].entities)
        cut = [s for s in sources if pages[s].truncated]
        return page.model_copy(
            update={"edges": edges[:cap], "entities": entities, "truncated": bool(cut)}
        ), cut

    async def _describe_twins(self, state: TraversalState) -> None:
        """Keep each linked equivalent's own summary, so an entity's line says what the other KG
        knows of it (a film's release year held only by the catalog). A describe call per twin:
        skipped when no reader needs it (``AsmConfig.describe_twins``)."""
        if not self.config.describe_twins:
            return
        sub = state.subgraph
        wanted = [
            t
            for ts in sub.same_as.values()
            for t in ts
            if t not in sub.entities and t not in sub.twins
        ]
        wanted = list(dict.fromkeys(wanted))[:60]
        sem = asyncio.Semaphore(8)

        async def one(twin: str):
            async with sem:
                try:
                    return (await self.kg.describe_entity(twin)).entity
                except KGError:
                    return None

        for twin, ent in zip(wanted, await asyncio.gather(*(one(t) for t in wanted))):
            if ent is not None:
                sub.twins[twin] = ent

    def _step(self, state: TraversalState, action: Action, **fields) -> TraversalState:
        """A fork of ``state`` with ``action`` taken and ``fields`` (the next ASM state's) set."""
        new = state.fork()
        new.actions.append(action)
        new.depth = state.depth + 1
        for name, value in fields.items():
            setattr(new, name, value)
        return new

    def _reject(
        self, state: TraversalState, action: Action | None, reason: str, raw: str | None = None
    ) -> TraversalState:
        new = state.fork()
        new.invalid_actions.append(
            InvalidAction(asm_state=state.asm_state, action=action, raw=raw, reason=reason)
        )
        return new


def was_rejected(before: TraversalState, after: TraversalState) -> bool:
    """True when :meth:`TraversalASM.apply` turned the action down (valid actions always add to the
    trajectory)."""
    return after.depth == before.depth
