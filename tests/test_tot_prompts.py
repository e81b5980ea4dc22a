"""What the LLM is shown: the remaining budget, only the formats allowed now (with an explicit "no
answer"), every expansion including those that found nothing, and a pending expansion named as
such."""

from __future__ import annotations

import re

import pytest
from tot_fixtures import make_kg

from tot_mcp.kg_adapters.models import Direction
from tot_mcp.strategies.llm.scripted import ScriptedLLM
from tot_mcp.strategies.tot.actions import Answer, ExpandKG, SelectEntities, SelectRelation, Think
from tot_mcp.strategies.tot.state import AsmState
from tot_mcp.strategies.tot.asm import AsmConfig, TraversalASM
from tot_mcp.strategies.tot.prompted import PromptedPolicy, parse_action_text

Q = "who directed the films [Keanu Reeves] acted in"


@pytest.fixture
def kg():
    return make_kg()


def policy() -> PromptedPolicy:
    return PromptedPolicy(ScriptedLLM([]))


async def test_the_budget_is_stated_in_expansions_and_the_forced_answer_offers_only_answers(kg):
    asm = TraversalASM(kg)
    s = await asm.initial_state(Q)
    prompt = policy().prompt_for(s)
    assert (
        "Expansions left: 4 (an expansion follows one relation one hop" in prompt
        and "EXPAND_KG" in prompt
    )
    forced = s.model_copy(update={"max_hops": 0})
    last = policy().prompt_for(forced)
    formats = last.rsplit("one of:", 1)[1]
    assert "Expansions left: 0. You must answer now." in last
    assert "THINK" not in formats and "EXPAND_KG" not in formats
    assert "ANSWER: NONE" in formats and "ANSWER: INCOMPLETE" in formats


def _stated(prompt: str) -> int:
    m = re.search(r"Expansions left(?: after it)?: (\d+)", prompt)
    assert m, prompt
    return int(m.group(1))


@pytest.mark.parametrize(
    "budget, think_first",
    [
        ({}, False),
        ({}, True),
        ({"max_depth": 7}, False),
        ({"max_depth": 7}, True),
        ({"max_hops": 1}, False),
    ],
)
async def test_the_stated_budget_is_exactly_what_the_asm_accepts(kg, budget, think_first):
    """Whatever the prompt says is left, the ASM accepts exactly that many more expansions (each
    completes once begun), then only ANSWER — with the default hop budget, the paper's action
    budget, and after a THINK."""
    asm = TraversalASM(kg)
    s = await asm.initial_state(Q, **budget)
    if think_first:
        s = await asm.apply(s, Think(text="first the films, then their directors"))
        assert s.depth == 1
    promised = _stated(policy().prompt_for(s))
    assert promised >= 1
    for n in range(promised):
        assert not s.must_answer and _stated(policy().prompt_for(s)) == promised - n
        s = await asm.apply(s, ExpandKG())
        assert (
            _stated(policy().prompt_for(s)) == promised - n - 1
        )  # said while the expansion is pending
        s = await asm.apply(s, SelectEntities(entity_ids=list(s.subgraph.entities)))
        assert s.candidate_relations, "the fixture KG always has a relation to follow"
        r = s.candidate_relations[0]
        s = await asm.apply(s, SelectRelation(relation_id=r.id, direction=r.direction))
        assert s.asm_state is AsmState.DEFAULT, "a begun expansion always completes"
    assert s.must_answer and _stated(policy().prompt_for(s)) == 0
    refused = await asm.apply(s, ExpandKG())
    assert refused.depth == s.depth and "only ANSWER" in refused.invalid_actions[-1].reason


async def test_the_default_budget_fits_a_three_hop_question_with_one_to_spare(kg):
    s = await TraversalASM(kg).initial_state(Q)
    assert s.expansions_left() == 4


async def test_a_think_says_what_it_costs(kg):
    paper = await TraversalASM(kg).initial_state(Q, max_depth=7)
    assert "one expansion fewer is left after it" in policy().prompt_for(paper)
    hops = await TraversalASM(kg).initial_state(Q)
    assert "free, but not twice in a row" in policy().prompt_for(hops)


async def test_no_answer_is_an_answer_the_asm_accepts(kg):
    s = await TraversalASM(kg).initial_state(Q)
    action = parse_action_text("ANSWER: NONE |", s)
    assert isinstance(action, Answer) and action.status == "none" and action.entity_ids == []
    done = await TraversalASM(kg).apply(s, action)
    assert done.answer is not None and done.answer.text == "NONE" and done.answer.status == "none"


async def test_running_out_is_incomplete_not_none(kg):
    """INCOMPLETE (the budget ran out) is distinct from NONE (expanded, nothing there), with or
    without items."""
    s = await TraversalASM(kg).initial_state(Q)
    for reply in ("ANSWER: INCOMPLETE", "ANSWER: INCOMPLETE: Keanu Reeves"):
        action = parse_action_text(reply, s)
        assert isinstance(action, Answer) and action.status == "incomplete"
        done = await TraversalASM(kg).apply(s, action)
        assert done.answer is not None and done.answer.status == "incomplete"


async def test_expansions_that_found_nothing_stay_visible(kg):
    """Keanu's films, then their release years: Speed has none in this KG, and the subgraph says
    so."""
    asm = TraversalASM(kg)
    s = await asm.initial_state(Q)
    for a in (
        ExpandKG(),
        SelectEntities(entity_ids=s.topic_entities),
        SelectRelation(relation_id="m:starred_actors", direction=Direction.backward),
    ):
        s = await asm.apply(s, a)
    films = s.subgraph.expansions[-1].entities_added
    for a in (
        ExpandKG(),
        SelectEntities(entity_ids=films),
        SelectRelation(relation_id="m:release_year"),
    ):
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


async def test_the_selection_the_prompt_allows_is_what_the_asm_takes_beyond_one_kg_call():
    """ "Select all of them together, up to N": N entities are taken, followed and capped fairly
    even when the KG takes fewer IDs per call (here 5: read in batches), and N + 1 are refused."""
    from tot_mcp.kg_adapters.base import Limits
    from tot_mcp.kg_adapters.graph import Graph
    from tot_mcp.kg_adapters.memory import MemoryKG
    from tot_mcp.kg_adapters.triple_index import TripleIndex

    index = TripleIndex()
    for n in range(12):  # a director of twelve films, two actors each
        film = index.node(f"Film {n}")
        index.add(film, index.relation("directed_by"), index.node("Ada Director"))
        for a in range(2):
            index.add(film, index.relation("starred_actors"), index.node(f"Actor {n}-{a}"))
    index.freeze()
    small = Graph(MemoryKG("m", index, limits=Limits(max_ids=5)))
    asm = TraversalASM(small, AsmConfig(max_selected_entities=12, max_edges_per_expansion=20))
    s = await asm.initial_state("who starred in the films directed by [Ada Director]")
    for a in (
        ExpandKG(),
        SelectEntities(entity_ids=s.topic_entities),
        SelectRelation(relation_id="m:directed_by", direction=Direction.backward),
    ):
        s = await asm.apply(s, a)
    films = s.subgraph.expansions[-1].entities_added
    assert len(films) == 12
    s = await asm.apply(s, ExpandKG())
    stated = PromptedPolicy(ScriptedLLM([]), max_entities=12, max_edges=20).prompt_for(s)
    assert "select all of them together, up to 12" in stated and "at most 20 edges" in stated
    too_many = await asm.apply(s, SelectEntities(entity_ids=films + s.topic_entities))
    assert "13 entities selected; at most 12" in too_many.invalid_actions[-1].reason
    s = await asm.apply(s, SelectEntities(entity_ids=films))
    assert [(r.id, r.count) for r in s.candidate_relations if r.id == "m:starred_actors"] == [
        ("m:starred_actors", 24)
    ]
    s = await asm.apply(s, SelectRelation(relation_id="m:starred_actors"))
    x = s.subgraph.expansions[-1]
    assert x.edges_added == 20 and x.truncated
    assert not x.empty_sources  # every film kept at least one
