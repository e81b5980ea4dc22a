"""What the LLM is shown: the remaining budget, only the formats allowed now (with an explicit "no answer"), every
expansion including those that found nothing, and a pending expansion named as such."""

from __future__ import annotations

import pytest
from tot_fixtures import make_kg

from kg_adapters.models import Direction
from strategies.llm.scripted import ScriptedLLM
from strategies.tot.actions import Answer, ExpandKG, SelectEntities, SelectRelation
from strategies.tot.asm import TraversalASM
from strategies.tot.prompted import PromptedPolicy, parse_action_text

Q = "who directed the films [Keanu Reeves] acted in"


@pytest.fixture
def kg():
    return make_kg()


def policy() -> PromptedPolicy:
    return PromptedPolicy(ScriptedLLM([]))


async def test_the_budget_is_shown_and_the_forced_answer_offers_only_answers(kg):
    asm = TraversalASM(kg)
    s = await asm.initial_state(Q, max_depth=4)
    prompt = policy().prompt_for(s)
    assert "Steps left before you must answer: 4" in prompt and "EXPAND_KG" in prompt
    forced = s.fork()
    forced.depth, forced.must_answer = 4, True
    last = policy().prompt_for(forced)
    formats = last.rsplit("one of:", 1)[1]
    assert "Steps left before you must answer: 0" in last
    assert "THINK" not in formats and "EXPAND_KG" not in formats and "ANSWER: NONE" in formats


async def test_no_answer_is_an_answer_the_asm_accepts(kg):
    s = await TraversalASM(kg).initial_state(Q)
    action = parse_action_text("ANSWER: NONE |", s)
    assert isinstance(action, Answer) and action.text == "NONE" and action.entity_ids == []
    done = await TraversalASM(kg).apply(s, action)
    assert done.answer is not None and done.answer.text == "NONE"


async def test_expansions_that_found_nothing_stay_visible(kg):
    """Keanu's films, then their release years: Speed has none in this KG, and the subgraph says so."""
    asm = TraversalASM(kg)
    s = await asm.initial_state(Q)
    for a in (ExpandKG(), SelectEntities(entity_ids=s.topic_entities),
              SelectRelation(relation_id="m:starred_actors", direction=Direction.backward)):
        s = await asm.apply(s, a)
    films = s.subgraph.expansions[-1].entities_added
    for a in (ExpandKG(), SelectEntities(entity_ids=films), SelectRelation(relation_id="m:release_year")):
        s = await asm.apply(s, a)
    speed = next(i for i in films if s.subgraph.label(i) == "Speed")
    text = s.subgraph.render()
    assert "EXPANSIONS:" in text
    assert f"→ m:release_year forward: 1 new edge; none for {speed}" in text


async def test_a_pending_expansion_says_what_it_is_about(kg):
    asm = TraversalASM(kg)
    s = await asm.initial_state(Q)
    s = await asm.apply(s, ExpandKG())
    assert "(an expansion is pending: its entities are not chosen yet)" in policy().prompt_for(s)
    s = await asm.apply(s, SelectEntities(entity_ids=s.topic_entities))
    assert f"relation not chosen yet for {s.topic_entities[0]}" in policy().prompt_for(s)


async def test_selection_may_take_all_entities_of_one_kind(kg):
    s = await TraversalASM(kg).apply(await TraversalASM(kg).initial_state(Q), ExpandKG())
    assert "select all of them together, up to 50" in policy().prompt_for(s)
