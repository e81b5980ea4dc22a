"""OfflinePolicy: Tree-of-Traversals proposals per ASM state and calibrated values, with no LLM and
no network."""

from __future__ import annotations

import pytest
from retrieval_fixtures import shared_embedder
from test_offline_core import build_kg

from tot_mcp.kg_adapters.models import Direction
from tot_mcp.strategies.tot.actions import Answer, ExpandKG, SelectEntities, SelectRelation
from tot_mcp.strategies.tot.asm import TraversalASM
from tot_mcp.strategies.tot.search import SearchConfig, TreeSearch
from tot_mcp.strategies.tot.state import AsmState

from tot_mcp.strategies.offline import OfflinePolicy

Q2 = "what genres are the films directed by [Eli Fox]"


@pytest.fixture(scope="module")
def kg():
    return build_kg()


@pytest.fixture()
def policy(kg):
    return OfflinePolicy([kg], embedder=shared_embedder())


def label(kg, entity_id: str) -> str:
    return kg.store._entity(int(entity_id.split(":E")[1])).label


async def test_walks_the_best_plan_state_by_state(kg, policy):
    asm = TraversalASM([kg])
    state = await asm.initial_state(Q2)
    eli = state.topic_entities[0]

    first = await policy.propose(state, 1)
    assert first == [ExpandKG()]
    state = await asm.apply(state, first[0])
    assert state.asm_state is AsmState.SELECTING_ENTITIES

    sel = await policy.propose(state, 1)
    assert sel == [SelectEntities(entity_ids=[eli])]
    state = await asm.apply(state, sel[0])

    rel = await policy.propose(state, 1)
    assert rel == [SelectRelation(relation_id="films:directed_by", direction=Direction.backward)]
    state = await asm.apply(state, rel[0])

    state = await asm.apply(
        state, (await policy.propose(state, 1))[0]
    )  # EXPAND_KG again: the plan has 2 hops
    films = (await policy.propose(state, 1))[0]
    assert isinstance(films, SelectEntities) and {label(kg, i) for i in films.entity_ids} == {
        "Gamma",
        "Delta",
    }
    state = await asm.apply(state, films)
    state = await asm.apply(state, (await policy.propose(state, 1))[0])

    answer = (await policy.propose(state, 1))[0]
    assert isinstance(answer, Answer)
    assert {label(kg, i) for i in answer.claims} == {
        "Thriller",
        "Horror",
    }  # claimed by ID, grounded by the ASM
    done = await asm.apply(state, answer)
    assert done.asm_state is AsmState.DONE and set(done.answer.entity_ids) == set(answer.claims)
    assert await policy.value(done) >= 0.8


async def test_k_alternatives_are_distinct_and_valid(kg, policy):
    asm = TraversalASM([kg])
    state = await asm.initial_state("who directed [Alpha]")
    state = await asm.apply(state, ExpandKG())
    state = await asm.apply(state, SelectEntities(entity_ids=state.topic_entities))
    options = await policy.propose(state, 3)
    assert options[0] == SelectRelation(
        relation_id="films:directed_by", direction=Direction.forward
    )
    assert len(options) == 3 and len({a.key() for a in options}) == 3
    cands = {(r.id, r.direction) for r in state.candidate_relations}
    assert all(
        isinstance(a, SelectRelation) and (a.relation_id, a.direction) in cands for a in options
    )


async def test_value_is_in_unit_interval_and_prefers_the_plan(kg, policy):
    asm = TraversalASM([kg])
    root = await asm.initial_state("who wrote [Gamma]")
    base = await asm.apply(
        await asm.apply(root, ExpandKG()), SelectEntities(entity_ids=root.topic_entities)
    )
    good = await asm.apply(
        base, SelectRelation(relation_id="films:written_by", direction=Direction.forward)
    )
    wrong = await asm.apply(
        base, SelectRelation(relation_id="films:release_year", direction=Direction.forward)
    )
    values = [await policy.value(s) for s in (root, base, good, wrong)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert await policy.value(good) > await policy.value(wrong)
    right = await asm.apply(good, (await policy.propose(good, 1))[0])
    bad = await asm.apply(good, Answer(entity_ids=root.topic_entities))
    assert right.asm_state is bad.asm_state is AsmState.DONE
    assert {label(kg, i) for i in right.answer.entity_ids} == {"Sam Poe"}
    assert await policy.value(right) > 0.5 > 0.1 > await policy.value(bad)


async def test_must_answer_yields_only_answers(kg, policy):
    asm = TraversalASM([kg])
    state = await asm.initial_state(Q2, max_depth=1)
    state = await asm.apply(state, ExpandKG())
    state = await asm.apply(state, SelectEntities(entity_ids=state.topic_entities))
    state = await asm.apply(
        state, SelectRelation(relation_id="films:directed_by", direction=Direction.backward)
    )
    assert state.must_answer
    proposals = await policy.propose(state, 3)
    assert proposals and all(isinstance(a, Answer) for a in proposals)


@pytest.mark.parametrize(
    "question, expected",
    [
        ("who directed [Alpha]", {"Dana Reed"}),
        (Q2, {"Thriller", "Horror"}),
        ("who directed the films that share actors with [Alpha]", {"Fay Gold", "Eli Fox"}),
    ],
)
async def test_tree_search_answers_through_the_asm(kg, question, expected):
    policy = OfflinePolicy([kg], embedder=shared_embedder())
    result = await TreeSearch(TraversalASM([kg]), policy, SearchConfig(k=3)).run(question)
    assert result.status == "answered"
    assert set(result.answer.labels) == expected
    assert policy.usage.calls == 0  # no LLM anywhere


async def test_options_override_settings(kg):
    policy = OfflinePolicy(
        [kg], embedder=shared_embedder(), options={"max_hops": 1, "unrelated": 3}
    )
    assert policy.settings.max_hops == 1
    state = await TraversalASM([kg]).initial_state(
        "who directed the films that share actors with [Alpha]"
    )
    assert all(len(p.hops) == 1 for p in await policy.plans(state))


async def test_policies_built_with_one_shared_dict_reuse_one_reasoner_and_its_kg_statistics(kg):
    shared: dict = {}
    first = OfflinePolicy([kg], embedder=shared_embedder(), shared=shared)
    second = OfflinePolicy([kg], embedder=shared_embedder(), shared=shared)
    assert first.reasoner is second.reasoner
    assert (
        OfflinePolicy([kg], embedder=shared_embedder()).reasoner is not first.reasoner
    )  # nothing global
    assert (
        OfflinePolicy([kg], embedder=shared_embedder(), shared=shared, options={"beam": 5}).reasoner
        is not first.reasoner
    )  # other settings, other statistics
