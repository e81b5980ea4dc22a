"""A fixed, gold-blind policy for end-to-end ``tot-search`` tests until/unless the offline policy is
wanted: expand the topic along the relation whose label shares most words with the question, then
answer with what it reached."""

from __future__ import annotations

from tot_mcp.kg_adapters.text import key
from tot_mcp.strategies.tot.actions import Answer, ExpandKG, SelectEntities, SelectRelation
from tot_mcp.strategies.tot.policy import Policy
from tot_mcp.strategies.tot.state import AsmState, TraversalState


class OneHopPolicy(Policy):
    async def propose(self, state: TraversalState, k: int):
        self.usage.calls += 1
        if state.asm_state is AsmState.DEFAULT:
            if state.subgraph.expansions or state.must_answer or not state.topic_entities:
                reached = (
                    state.subgraph.expansions[-1].entities_added
                    if state.subgraph.expansions
                    else []
                )
                return (
                    [Answer(entity_ids=reached[:20], text="")]
                    if reached
                    else [Answer(text="unknown")]
                )
            return [ExpandKG()]
        if state.asm_state is AsmState.SELECTING_ENTITIES:
            return [SelectEntities(entity_ids=state.topic_entities[:1])]
        words = set(key(state.question).split())
        best = max(state.candidate_relations, key=lambda r: len(words & set(key(r.label).split())))
        return [SelectRelation(relation_id=best.id, direction=best.direction)]

    async def value(self, state: TraversalState) -> float:
        self.usage.calls += 1
        return 0.9 if state.asm_state is AsmState.DONE and state.answer.entity_ids else 0.5
