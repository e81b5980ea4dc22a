"""``OfflinePolicy``: every Tree-of-Traversals decision and value judgement from the KG and sentence
embeddings.

The reasoning core (:class:`OfflineReasoner`) ranks whole relation paths once per question; the
policy then reads the trajectory so far (the expansions in the local subgraph) as a prefix of those
plans and proposes the next step of the best plans that are still consistent with it. Values are the
plans' calibrated confidences, so a trajectory that left every good plan scores low and the tree
search backtracks.
"""

from __future__ import annotations

from collections.abc import Sequence

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.routing import LinkedKG
from tot_mcp.kg_adapters.models import Direction

from ..embeddings import Embedder
from ..tot.actions import Action, Answer, ExpandKG, SelectEntities, SelectRelation, distinct
from ..tot.policy import Policy
from ..tot.state import AsmState, TraversalState
from .graph import LITERAL_PREFIX, is_literal
from .paths import OfflineReasoner, Plan, Reasoning
from .settings import OfflineSettings

UNSUPPORTED_VALUE = (
    0.3  # the most an answer is worth when the relation the question names is out of reach
)
# the ASM's default cap on entities per SELECT_ENTITIES: a selection the policy cuts is an answer it
# cuts
MAX_SELECT = 50


class OfflinePolicy(Policy):
    """No LLM, no network. ``options`` may override :class:`OfflineSettings` fields (e.g. ``{"beam":
    20}``).

    ``shared`` is a dict owned by whoever builds a policy per question (a server runtime, a
    benchmark run): the reasoner — with its per-KG statistics, minutes of embedding on a large KG —
    is kept there between questions. Without it the policy builds its own."""

    facts_decide = (
        False  # its plans are relation sequences: the relation walked matters, not only the facts
    )

    def __init__(
        self,
        kg: Graph | Sequence[Graph],
        embedder: Embedder | None = None,
        options: dict | None = None,
        settings: OfflineSettings | None = None,
        shared: dict | None = None,
    ) -> None:
        super().__init__()
        # several KGs are reasoned over as one linked graph (pass the run's LinkedKG to share its
        # links and statistics)
        self.kg = kg if isinstance(kg, Graph) else LinkedKG.of(list(kg))
        fields = set(OfflineSettings.model_fields)
        overrides = {k: v for k, v in (options or {}).items() if k in fields}
        self.settings = settings or OfflineSettings(**overrides)
        self.embedder = embedder or Embedder()
        key = ("offline-reasoner", self.embedder, self.settings)
        reasoner = shared.get(key) if shared is not None else None
        if reasoner is None:
            reasoner = OfflineReasoner(self.embedder, self.settings)
            if shared is not None:
                shared[key] = reasoner
        self.reasoner = reasoner
        self._reasoning: dict[tuple[str, tuple[str, ...]], Reasoning] = {}

    # -- the plans for this question ---------------------------------------------------------------
    async def plans(self, state: TraversalState) -> list[Plan]:
        key = (state.question, tuple(state.topic_entities))
        res = self._reasoning.get(key)
        if res is None:
            res = self._reasoning[key] = await self.reasoner.reason(
                self.kg, state.question, list(state.topic_entities)
            )
        return res.plans

    @staticmethod
    def trajectory(state: TraversalState) -> list[tuple[str, Direction]]:
        return [(x.relation_id, x.direction) for x in state.subgraph.expansions]

    async def consistent(self, state: TraversalState) -> list[Plan]:
        """Plans (best first) whose first hops are exactly the expansions made so far."""
        done = self.trajectory(state)
        return [
            p
            for p in await self.plans(state)
            if list(p.hops[: len(done)]) == done and len(p.hops) >= len(done)
        ]

    # -- decisions ---------------------------------------------------------------------------------
    async def propose(self, state: TraversalState, k: int) -> list[Action]:
        step = {
            AsmState.DEFAULT: self._propose_default,
            AsmState.SELECTING_ENTITIES: self._propose_entities,
            AsmState.SELECTING_RELATION: self._propose_relations,
        }.get(state.asm_state)
        out = await step(state) if step is not None else []
        return distinct(out)[: max(1, k)]

    async def _propose_default(self, state: TraversalState) -> list[Action]:
        done = len(self.trajectory(state))
        out: list[Action] = []
        for p in await self.consistent(state):
            if len(p.hops) == done:
                ids = self.answer_ids(p, state)
                if ids:  # entity IDs, and values (literal:<text>) as the text the subgraph shows
                    out.append(
                        Answer(
                            claims=[
                                i.removeprefix(LITERAL_PREFIX) if is_literal(i) else i for i in ids
                            ]
                        )
                    )
            elif not state.must_answer:
                out.append(ExpandKG())
        if not out or state.must_answer and not any(isinstance(a, Answer) for a in out):
            ids = self.fallback_answer(state)
            if ids:
                out.append(Answer(entity_ids=ids))
        return out

    async def _propose_entities(self, state: TraversalState) -> list[Action]:
        done = len(self.trajectory(state))
        out: list[Action] = []
        for p in await self.consistent(state):
            if len(p.hops) <= done:
                continue
            ids = await self.sources(p, done, state)
            if ids:
                out.append(SelectEntities(entity_ids=ids))
        if not out:
            last = state.subgraph.expansions[-1].entities_added if state.subgraph.expansions else []
            ids = [i for i in (last or state.topic_entities) if i in state.subgraph.entities][
                :MAX_SELECT
            ]
            if ids:
                out.append(SelectEntities(entity_ids=ids))
        return out

    async def _propose_relations(self, state: TraversalState) -> list[Action]:
        done = len(self.trajectory(state))
        cands = {(r.id, Direction(r.direction)) for r in state.candidate_relations}
        out: list[Action] = []
        for p in await self.consistent(state):
            if len(p.hops) > done and p.hops[done] in cands:
                out.append(SelectRelation(relation_id=p.hops[done][0], direction=p.hops[done][1]))
        # then every other candidate, by how well its phrase matches the question
        ranked = sorted(cands, key=lambda h: (-self._hop_score(state, h), h[0], h[1].value))
        out.extend(SelectRelation(relation_id=r, direction=d) for r, d in ranked)
        return out

    def _hop_score(self, state: TraversalState, hop: tuple[str, Direction]) -> float:
        res = self._reasoning.get((state.question, tuple(state.topic_entities)))
        if res is None:
            return 0.0
        return max((p.score for p in res.plans if hop in p.hops), default=-1.0)

    # -- entity choice -----------------------------------------------------------------------------
    async def sources(self, plan: Plan, level: int, state: TraversalState) -> list[str]:
        """Entities of the local subgraph to expand for hop ``level`` of ``plan``: those on the
        plan's frontier, preferring the ones that lead to its best-ranked answers, at most
        ``MAX_SELECT``."""
        sub = state.subgraph.entities
        if level == 0:
            return [t for t in state.topic_entities if t in sub][:MAX_SELECT]
        frontier = [e for e in plan.frontiers[level - 1] if e in sub]
        topics = set(state.topic_entities)
        frontier = [e for e in frontier if e not in topics] or frontier
        if len(frontier) <= MAX_SELECT:
            return frontier
        ranked = await self.reasoner.rank_sources(
            self.kg, plan, level, frontier, state.topic_entities
        )
        return ranked[:MAX_SELECT]

    @staticmethod
    def answer_ids(plan: Plan, state: TraversalState) -> list[str]:
        """The plan's answers the subgraph holds, leaving out the question's own entities (as the
        prompt asks of a model) unless nothing else is left."""
        sub = state.subgraph.entities
        shown = {
            f"{LITERAL_PREFIX}{e.value.value}" for e in state.subgraph.edges if e.value is not None
        }
        ids = [a for a in plan.answers if a in sub or a in shown]
        topics = set(
            state.topic_entities
        )  # the question's own entity, in every KG it is linked into
        topics |= {t for e in state.topic_entities for t in state.subgraph.same_as.get(e, [])}
        return ([a for a in ids if a not in topics] or ids)[:50]

    @staticmethod
    def fallback_answer(state: TraversalState) -> list[str]:
        """Nothing consistent is left: answer with what the last expansion found (else the
        topic)."""
        for x in reversed(state.subgraph.expansions):
            ids = [i for i in x.entities_added if i not in state.topic_entities]
            if ids:
                return ids[:50]
        return [t for t in state.topic_entities if t in state.subgraph.entities][:1]

    # -- judgement ---------------------------------------------------------------------------------
    def caveat(self, state: TraversalState) -> str | None:
        res = self._reasoning.get((state.question, tuple(state.topic_entities)))
        if res is None or not res.unreached:
            return None
        reader = self.reasoner.stats_for(self.kg).reader
        parts = [
            f"'{phrase}' reads as {rel} ({reader.relation_label(rel)})"
            for phrase, rel in res.unreached[:3]
        ]
        why = "the KG may not record it for them" + (
            ", or a link between KGs is missing" if len(self.kg.members()) > 1 else ""
        )
        return (
            f"unsupported: the question's {'; '.join(parts)}, which no walk from its entities "
            f"reaches ({why})"
        )

    async def value(self, state: TraversalState) -> float:
        plans = await self.consistent(state)
        if state.asm_state is AsmState.DONE:
            ans = state.answer.entity_ids if state.answer else []
            done = len(self.trajectory(state))
            first = state.answer.items[0].id if state.answer and state.answer.items else None
            for p in plans:
                if len(p.hops) == done and (
                    ans and ans[0] in p.answers or first is not None and first in p.answers
                ):
                    # an answer of the wrong kind (the relation asked for is out of reach) is never
                    # confident
                    return (
                        min(p.confidence, UNSUPPORTED_VALUE) if self.caveat(state) else p.confidence
                    )
            return 0.05
        if not plans:
            return 0.05
        if state.asm_state is AsmState.SELECTING_RELATION:
            done = len(self.trajectory(state))
            cands = {(r.id, Direction(r.direction)) for r in state.candidate_relations}
            plans = [p for p in plans if len(p.hops) > done and p.hops[done] in cands] or plans
        # a trajectory is worth its best completion; a hair less than the answer itself so answers
        # win ties
        return max(p.confidence for p in plans) * 0.99
