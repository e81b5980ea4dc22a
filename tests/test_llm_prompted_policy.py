"""PromptedPolicy: prompts per ASM state, k samples, forgiving parsing, garbage recorded as
invalid."""

from __future__ import annotations

import pytest
from tot_fixtures import eid, make_kg

from tot_mcp.kg_adapters.models import Direction
from tot_mcp.strategies.llm.base import LLMError
from tot_mcp.strategies.llm.scripted import ScriptedLLM
from tot_mcp.strategies.tot.actions import (
    Answer,
    ExpandKG,
    Invalid,
    SelectEntities,
    SelectRelation,
    Think,
)
from tot_mcp.strategies.tot.asm import TraversalASM
from tot_mcp.strategies.tot.prompted import PromptedPolicy, parse_action_text, parse_score
from tot_mcp.strategies.tot.search import SearchConfig, TreeSearch
from tot_mcp.strategies.tot.state import AsmState

Q = "who directed the films [Keanu Reeves] acted in"


@pytest.fixture
def kg():
    return make_kg()


async def _at_relation_choice(kg):
    asm = TraversalASM(kg)
    s = await asm.initial_state(Q)
    s = await asm.apply(s, ExpandKG())
    return await asm.apply(s, SelectEntities(entity_ids=s.topic_entities))


async def test_samples_k_completions_and_dedupes_them(kg):
    """The paper's protocol (batch=False): the same prompt sampled k times, duplicates dropped."""
    llm = ScriptedLLM(["EXPAND_KG", "expand_kg", "THINK: find his films first"])
    policy = PromptedPolicy(llm, batch=False)
    state = await TraversalASM(kg).initial_state(Q)
    actions = await policy.propose(state, 3)
    assert actions == [ExpandKG(), Think(text="find his films first")]
    assert llm.usage.calls == 3 and policy.usage.calls == 3
    assert "Question: " + Q in llm.prompts[0] and "Keanu Reeves" in llm.prompts[0]
    assert "EXPAND_KG: follow one relation one hop" in llm.prompts[0]
    assert llm.systems[0] and "knowledge graph" in llm.systems[0]


async def test_default_state_parses_answers_with_ids_or_labels(kg):
    """The parser keeps what the model claimed; the ASM grounds each claim in the subgraph (the
    reported answer)."""
    asm = TraversalASM(kg)
    state = await asm.initial_state(Q)
    keanu = state.topic_entities[0]
    for reply in (
        f"ANSWER: Keanu Reeves | {keanu}",
        "Sure!\nAnswer: keanu reeves",
        f"ANSWER: {keanu}",
    ):
        done = await asm.apply(state, parse_action_text(reply, state))
        assert [it.entity_id for it in done.answer.items] == [keanu], reply
    nobody = parse_action_text("ANSWER: nobody", state)
    assert nobody == Answer(claims=["nobody"], text="nobody")
    rejected = await asm.apply(state, nobody)
    assert (
        rejected.answer is None
        and "not shown in the local subgraph" in rejected.invalid_actions[-1].reason
        or "no answer item is shown" in rejected.invalid_actions[-1].reason
    )
    assert isinstance(parse_action_text("ANSWER:", state), Invalid)


@pytest.mark.parametrize("garbage", ["", "I am not sure what to do.", "{json: 1}", "THINK:"])
async def test_garbage_becomes_invalid_with_a_reason(kg, garbage):
    state = await TraversalASM(kg).initial_state(Q)
    action = parse_action_text(garbage, state)
    assert isinstance(action, Invalid) and action.reason


async def test_entity_selection_accepts_ids_and_labels_of_the_subgraph_only(kg):
    asm = TraversalASM(kg)
    s = await asm.apply(await asm.initial_state(Q), ExpandKG())
    keanu = s.topic_entities[0]
    assert parse_action_text(f"SELECT_ENTITIES: {keanu}", s) == SelectEntities(entity_ids=[keanu])
    assert parse_action_text("select entities: Keanu Reeves", s) == SelectEntities(
        entity_ids=[keanu]
    )
    bad = parse_action_text("SELECT_ENTITIES: m:E999, Tom Hanks", s)
    assert isinstance(bad, Invalid) and "no entity of the local subgraph" in bad.reason


async def test_relation_selection_by_number_id_or_label_with_direction(kg):
    s = await _at_relation_choice(kg)
    want = SelectRelation(relation_id="m:starred_actors", direction=Direction.backward)
    assert parse_action_text("SELECT_RELATION: 1", s) == want
    assert parse_action_text("SELECT_RELATION: m:starred_actors backward", s) == want
    assert parse_action_text("SELECT_RELATION: starred actors", s) == want
    # a direction the model insists on is kept, so the ASM can reject it with a clear reason
    assert (
        parse_action_text("SELECT_RELATION: m:starred_actors forward", s).direction
        is Direction.forward
    )
    assert isinstance(parse_action_text("SELECT_RELATION: m:directed_by", s), Invalid)


async def test_relation_prompt_lists_numbered_candidates(kg):
    s = await _at_relation_choice(kg)
    llm = ScriptedLLM(["SELECT_RELATION: 1"])
    await PromptedPolicy(llm, batch=False).propose(
        s, 1
    )  # batched, a lone candidate would need no call at all
    assert "1. m:starred_actors backward: inverse of starred actors [2]" in llm.prompts[0]


@pytest.mark.parametrize(
    "text, want",
    [
        ("SCORE: 0.7", 0.7),
        ("0.25", 0.25),
        ("Score = 8/10", 0.8),
        ("85/100", 0.85),
        ("score: 9", 0.9),
        ("I'd say 1.0", 1.0),
        ("SCORE: -3", 0.0),
        ("no idea", None),
        ("", None),
    ],
)
def test_scores_are_parsed_into_0_1(text, want):
    got = parse_score(text)
    assert got == pytest.approx(want) if want is not None else got is None


async def test_unparseable_value_falls_back_neutral_for_states_and_zero_for_answers(kg):
    asm = TraversalASM(kg)
    s = await asm.initial_state(Q)
    policy = PromptedPolicy(ScriptedLLM(["hmm", "hmm"]))
    assert await policy.value(s) == 0.5
    done = await asm.apply(s, Answer(text="Keanu Reeves"))
    assert done.answer is not None and await policy.value(done) == 0.0


async def test_rejection_feedback_reaches_the_next_prompt(kg):
    llm = ScriptedLLM(
        ["SELECT_ENTITIES: whatever", "SCORE: 0.1", "ANSWER: Keanu Reeves", "SCORE: 0.9"]
    )

    result = await TreeSearch(TraversalASM(kg), PromptedPolicy(llm), SearchConfig(k=1)).run(Q)
    assert "Your previous reply was rejected" in llm.prompts[1]
    assert result.status == "answered" and result.answer.labels == ["Keanu Reeves"]


async def test_full_two_hop_search_with_a_scripted_model(kg):
    def respond(prompt: str) -> str:
        asked = prompt.rsplit("Reply with", 1)[
            -1
        ]  # the requested format; the trajectory above may name actions
        if "SCORE" in asked and "Proposed answer" in prompt:
            return (
                "SCORE: 0.9"
                if "Lana Wachowski" in prompt.split("Proposed answer:")[1]
                else "SCORE: 0.1"
            )
        if "SCORE" in asked:
            return "SCORE: 0.6"
        if "SELECT_RELATION" in asked:
            return (
                "SELECT_RELATION: directed_by forward"
                if "directed by" in prompt
                else "SELECT_RELATION: 1"
            )
        if "SELECT_ENTITIES" in asked:
            return (
                "SELECT_ENTITIES: The Matrix, Speed"
                if "(The Matrix)" in prompt
                else "SELECT_ENTITIES: Keanu Reeves"
            )
        if (
            ": Lana Wachowski" in prompt.split("Actions so far")[0]
        ):  # her entity line, not a film's description
            return "ANSWER: Lana Wachowski, Jan de Bont"
        return "EXPAND_KG"

    llm = ScriptedLLM(respond)
    result = await TreeSearch(TraversalASM(kg), PromptedPolicy(llm), SearchConfig(k=2)).run(Q)
    assert result.status == "answered"
    assert set(result.answer.entity_ids) == {
        await eid(kg, "Lana Wachowski"),
        await eid(kg, "Jan de Bont"),
    }
    assert result.usage.calls == llm.usage.calls and result.usage.input_tokens > 0


async def test_llm_failure_ends_the_search_with_the_error_recorded(kg):
    result = await TreeSearch(TraversalASM(kg), PromptedPolicy(ScriptedLLM([]))).run(Q)
    assert result.status == "no_answer" and "ran out of responses" in (result.error or "")


async def test_scripted_llm_raises_when_exhausted():
    with pytest.raises(LLMError):
        await ScriptedLLM([]).complete("x")
    assert AsmState.DEFAULT  # module imported
