"""Best-first Tree-of-Traversals search driven by a scripted policy over a tiny KG."""

from __future__ import annotations

import json

from tot_fixtures import FunctionPolicy, eid, make_kg

from tot_mcp.kg_adapters.models import Direction
from tot_mcp.strategies.tot.actions import Answer, ExpandKG, SelectEntities, SelectRelation, Think
from tot_mcp.strategies.tot.asm import TraversalASM
from tot_mcp.strategies.tot.search import SearchConfig, SearchResult, TreeSearch
from tot_mcp.strategies.tot.state import AsmState, TraversalState

QUESTION = "who directed the films [Keanu Reeves] acted in"


def _labels(state: TraversalState, *names: str) -> list[str]:
    by_label = {e.label: i for i, e in state.subgraph.entities.items()}
    return [by_label[n] for n in names if n in by_label]


def two_hop_policy(state: TraversalState) -> list:
    """Keanu → his films → their directors, then answer; also proposes a distracting thought at the
    start."""
    if state.asm_state is AsmState.DEFAULT:
        directors = _labels(state, "Lana Wachowski", "Jan de Bont")
        if directors or state.must_answer:
            return [Answer(entity_ids=directors or state.topic_entities)]
        return [ExpandKG(), Think(text="hmm")]
    if state.asm_state is AsmState.SELECTING_ENTITIES:
        films = _labels(state, "The Matrix", "Speed")
        return [SelectEntities(entity_ids=films or state.topic_entities)]
    rels = {(r.id, r.direction) for r in state.candidate_relations}
    if ("m:directed_by", Direction.forward) in rels:
        return [SelectRelation(relation_id="m:directed_by")]
    return [SelectRelation(relation_id="m:starred_actors", direction=Direction.backward)]


def correct_answer_value(state: TraversalState) -> float:
    if state.asm_state is AsmState.DONE:
        labels = {state.subgraph.label(i) for i in state.answer.entity_ids}
        return 0.95 if labels == {"Lana Wachowski", "Jan de Bont"} else 0.2
    if state.actions and isinstance(state.actions[-1], Think):
        return 0.3
    return 0.6


async def test_finds_the_two_hop_answer_and_stops_at_tau():
    kg = make_kg()
    policy = FunctionPolicy(two_hop_policy, correct_answer_value)
    result = await TreeSearch(TraversalASM(kg), policy, SearchConfig(k=3)).run(QUESTION)
    assert result.status == "answered" and result.value == 0.95
    assert set(result.answer.labels) == {"Lana Wachowski", "Jan de Bont"}
    assert set(result.answer.entity_ids) == {
        await eid(kg, "Lana Wachowski"),
        await eid(kg, "Jan de Bont"),
    }
    # root, EXPAND, SELECT_ENTITIES, SELECT_RELATION, EXPAND, SELECT_ENTITIES, SELECT_RELATION,
    # ANSWER
    kinds = [result.nodes[i].action.kind if result.nodes[i].action else "root" for i in result.path]
    assert kinds == ["root", "expand_kg", "select_entities", "select_relation"] * 1 + [
        "expand_kg",
        "select_entities",
        "select_relation",
        "answer",
    ]
    # the thought proposed beside EXPAND_KG costs nothing: no node, no value, recorded as dropped
    assert not [n for n in result.nodes if isinstance(n.action, Think)]
    assert any(isinstance(r.action, Think) for r in result.nodes[0].rejected)
    assert result.expansions == 7
    assert result.usage.calls == policy.usage.calls > 0
    assert "Lana Wachowski" in result.subgraph_text


async def test_best_first_backtracks_from_a_branch_that_scores_low():
    """Two initial thoughts: the better-scored one leads to a dead end whose children score low, so
    the search returns to the other branch."""
    kg = make_kg()

    def propose(state):
        if state.depth == 0:
            return [Think(text="dead end"), Think(text="good idea")]
        if state.actions[0].text == "dead end":
            return [Think(text="still stuck")]
        return [Answer(text="Keanu Reeves")]

    def value(state):
        if state.depth == 0:
            return 1.0
        if state.actions[0].text == "dead end":
            return 0.9 if state.depth == 1 else 0.1
        return 0.5 if state.asm_state is not AsmState.DONE else 0.85

    # the paper's action budget: a THINK may follow a THINK
    result = await TreeSearch(
        TraversalASM(kg), FunctionPolicy(propose, value), SearchConfig(max_depth=7)
    ).run(QUESTION)
    order = sorted(
        (n for n in result.nodes if n.expanded_at is not None), key=lambda n: n.expanded_at
    )
    texts = [n.action.text if n.action else "root" for n in order]
    assert texts == ["root", "dead end", "good idea"]
    assert result.status == "answered" and result.answer.text == "Keanu Reeves"


async def test_ties_prefer_the_deeper_node():
    kg = make_kg()

    def propose(state):
        return [Think(text=f"t{state.depth}a"), Think(text=f"t{state.depth}b")]

    result = await TreeSearch(
        TraversalASM(kg),
        FunctionPolicy(propose, lambda s: 0.5),
        SearchConfig(max_expansions=4, max_depth=50),
    ).run(QUESTION)
    expanded = sorted(
        (n for n in result.nodes if n.expanded_at is not None), key=lambda n: n.expanded_at
    )
    assert [n.depth for n in expanded] == [0, 1, 2, 3]


async def test_answers_below_tau_do_not_stop_the_search_and_the_best_is_returned():
    kg = make_kg()

    def propose(state):
        return [Answer(text="Keanu Reeves"), Think(text=f"think {state.depth}")]

    def value(state):
        return 0.3 if state.asm_state is AsmState.DONE else 0.5

    result = await TreeSearch(
        TraversalASM(kg),
        FunctionPolicy(propose, value),
        SearchConfig(max_expansions=5, tau=0.8, max_depth=50),
    ).run(QUESTION)
    assert result.expansions == 5
    assert (
        result.status == "below_tau"
        and result.answer.labels == ["Keanu Reeves"]
        and result.value == 0.3
    )
    # the same answer on the same facts after each thought is not a new place: it is dropped, not
    # judged again
    answers = [n for n in result.nodes if n.action is not None and n.action.kind == "answer"]
    assert len(answers) == 1
    assert any("repeats node" in r.reason for n in result.nodes for r in n.rejected)


async def test_a_thought_beside_an_expansion_costs_nothing_so_backtracking_goes_somewhere_new():
    """A THINK beside EXPAND_KG would only redo the expansion from a THINK node: it is dropped
    before it is valued or expanded, and the search gives up on the low branch instead of paying for
    it twice."""
    kg = make_kg()
    proposals = []

    def propose(state):
        proposals.append(state.asm_state)
        if state.asm_state is AsmState.DEFAULT:
            return (
                [ExpandKG(), Think(text="first his films")] if not state.actions else [ExpandKG()]
            )
        if state.asm_state is AsmState.SELECTING_ENTITIES:
            return [SelectEntities(entity_ids=state.topic_entities)]
        return [SelectRelation(relation_id="m:starred_actors", direction=Direction.backward)]

    def value(state):  # the expansion's result scores low
        return 0.1 if state.subgraph.expansions else 0.6

    result = await TreeSearch(
        TraversalASM(kg), FunctionPolicy(propose, value), SearchConfig(max_expansions=10)
    ).run(QUESTION)
    assert not [n for n in result.nodes if n.action is not None and n.action.kind == "think"]
    assert [r.reason for r in result.nodes[0].rejected] == [
        "a thought beside EXPAND_KG: the expansion is the step"
    ]
    assert proposals.count(
        AsmState.SELECTING_ENTITIES
    ) == len(  # each expansion's choices asked for once
        [
            n
            for n in result.nodes
            if n.action is not None and n.action.kind == "expand_kg" and n.expanded_at is not None
        ]
    )


async def test_gives_up_with_no_answer_after_max_expansions():
    kg = make_kg()
    policy = FunctionPolicy(lambda s: [Think(text=f"step {s.depth}")], lambda s: 0.5)
    result = await TreeSearch(
        TraversalASM(kg), policy, SearchConfig(max_expansions=3, max_depth=50)
    ).run(QUESTION)
    assert (
        result.status == "no_answer"
        and result.answer.text == "no answer found"
        and result.answer.entity_ids == []
    )
    assert result.expansions == 3 and result.path == []


async def test_at_max_depth_only_answers_are_accepted():
    kg = make_kg()
    seen_must_answer = []

    def propose(state):
        seen_must_answer.append(state.must_answer)
        # a stubborn policy that keeps thinking, plus one answer
        return [Think(text=f"more {state.depth}"), Answer(text="Keanu Reeves")]

    result = await TreeSearch(
        TraversalASM(kg),
        FunctionPolicy(propose, lambda s: 0.9 if s.depth < 3 else 0.85),
        SearchConfig(max_depth=2, k=2, tau=0.99, max_expansions=10),
    ).run(QUESTION)
    forced = [n for n in result.nodes if n.expanded_at is not None and n.state.must_answer]
    assert forced, "a node at max depth was expanded"
    for n in forced:
        assert all(result.nodes[c].action.kind == "answer" for c in n.children)
        assert any("only ANSWER" in r.reason for r in n.rejected)
    assert max(n.state.depth for n in result.nodes) <= 3  # depth 2 + at most the forced answer
    assert True in seen_must_answer


async def test_k1_is_chain_of_traversals():
    kg = make_kg()
    policy = FunctionPolicy(two_hop_policy, correct_answer_value)
    result = await TreeSearch(TraversalASM(kg), policy, SearchConfig(k=1)).run(QUESTION)
    assert all(len(n.children) <= 1 for n in result.nodes)
    assert len(result.nodes) == len(result.path) == 8
    assert result.status == "answered"


async def test_invalid_proposals_leave_a_retry_node_with_feedback():
    kg = make_kg()
    attempts = []

    def propose(state):
        attempts.append(len(state.invalid_actions))
        if not state.invalid_actions:
            return [SelectEntities(entity_ids=["m:E1"])]  # wrong state
        return [Answer(text="Keanu Reeves")]

    result = await TreeSearch(TraversalASM(kg), FunctionPolicy(propose, lambda s: 0.9)).run(
        QUESTION
    )
    root = result.nodes[0]
    assert "not allowed while default" in root.rejected[0].reason
    retry = result.nodes[root.children[0]]
    assert retry.retry and retry.value == 0.9 and retry.state.invalid_actions  # 1.0 - penalty 0.1
    assert attempts == [0, 1]
    assert result.status == "answered" and result.answer.text == "Keanu Reeves"


async def test_progress_is_reported_once_per_expansion():
    kg = make_kg()
    reports = []

    async def progress(p):
        reports.append(p)

    result = await TreeSearch(
        TraversalASM(kg), FunctionPolicy(two_hop_policy, correct_answer_value)
    ).run(QUESTION, progress=progress)
    assert [p.expansions for p in reports] == list(range(1, result.expansions + 1))
    assert reports[-1].best_answer_value == 0.95


async def test_result_serialises_to_json_and_prints_a_readable_tree():
    kg = make_kg()
    result = await TreeSearch(
        TraversalASM(kg), FunctionPolicy(two_hop_policy, correct_answer_value)
    ).run(QUESTION)
    data = json.loads(result.model_dump_json())
    assert data["status"] == "answered" and data["path"][0] == 0
    assert data["nodes"][1]["action"]["kind"] == "expand_kg"
    assert "state" not in data["nodes"][0] and data["nodes"][0]["summary"]["entities"] == 1
    back = SearchResult.model_validate_json(result.model_dump_json())
    assert (
        back.answer == result.answer
        and back.path == result.path
        and len(back.nodes) == len(result.nodes)
    )
    assert back.tree_text() == result.tree_text()
    text = result.tree_text()
    assert text.splitlines()[0].startswith("* [1.00] ROOT:")
    assert "* " in text and "ANSWER: Lana Wachowski ; Jan de Bont" in text
    assert "+2 edges" in text


# -- a real model's calls where they change the answer ---------------------------------------------
async def test_an_answer_ranked_below_an_expansion_waits_for_it():
    """The model proposes EXPAND_KG first and a provisional answer second; the answer reaches τ, but
    the expansion the model ranked above it is valued higher, so it is searched first and its fuller
    answer is returned."""
    kg = make_kg()

    def propose(state):
        if state.asm_state is AsmState.DEFAULT:
            films = _labels(state, "The Matrix", "Speed")
            if films:
                return [Answer(entity_ids=films)]
            return [ExpandKG(), Answer(entity_ids=state.topic_entities)]  # "just in case"
        if state.asm_state is AsmState.SELECTING_ENTITIES:
            return [SelectEntities(entity_ids=state.topic_entities)]
        return [SelectRelation(relation_id="m:starred_actors", direction=Direction.backward)]

    def value(state):
        if state.asm_state is AsmState.DONE:
            return 0.95 if len(state.answer.entity_ids) == 2 else 0.8
        return 1.0

    result = await TreeSearch(
        TraversalASM(kg), FunctionPolicy(propose, value), SearchConfig(k=3)
    ).run("which films did [Keanu Reeves] act in")
    assert result.status == "answered" and result.value == 0.95
    assert set(result.answer.labels) == {"The Matrix", "Speed"}


async def test_an_inverse_relation_reaching_the_same_place_is_dropped_before_it_is_valued():
    kg = make_kg(
        "m", [("Speed", "starred_actors", "Keanu Reeves"), ("Keanu Reeves", "acted_in", "Speed")]
    )
    valued: list[TraversalState] = []

    def propose(state):
        if state.asm_state is AsmState.DEFAULT:
            return [Answer(text="Speed")] if state.subgraph.expansions else [ExpandKG()]
        if state.asm_state is AsmState.SELECTING_ENTITIES:
            return [SelectEntities(entity_ids=state.topic_entities)]
        return [
            SelectRelation(relation_id="m:acted_in"),
            SelectRelation(relation_id="m:starred_actors", direction=Direction.backward),
        ]

    def value(state):
        valued.append(state)
        return 0.9

    result = await TreeSearch(
        TraversalASM(kg), FunctionPolicy(propose, value), SearchConfig(k=3)
    ).run("which films did [Keanu Reeves] act in")
    assert result.answer.labels == ["Speed"]
    reached = [s for s in valued if s.subgraph.expansions and s.asm_state is AsmState.DEFAULT]
    assert len(reached) == 1 and reached[0].subgraph.expansions[0].relation_id == "m:acted_in"
    rejected = [r.reason for n in result.nodes for r in n.rejected]
    assert "reaches what proposal 1 reaches: nothing new" in rejected


async def test_an_answer_judged_once_is_not_judged_again():
    """The same answer after two different expansions: one judge call; nodes valued below floor then
    wait."""
    kg = make_kg()
    judged = []

    def propose(state):
        if state.asm_state is AsmState.DEFAULT:
            if state.subgraph.expansions:
                return [Answer(text="Keanu Reeves"), ExpandKG()]
            return [ExpandKG()]
        if state.asm_state is AsmState.SELECTING_ENTITIES:
            return [SelectEntities(entity_ids=state.topic_entities)]
        return [
            SelectRelation(relation_id="m:starred_actors", direction=Direction.backward),
            SelectRelation(relation_id="m:starred_actors", direction=Direction.forward),
        ]

    def value(state):
        if state.asm_state is AsmState.DONE:
            judged.append(state)
            return 0.6
        return 0.5

    result = await TreeSearch(
        TraversalASM(kg), FunctionPolicy(propose, value), SearchConfig(k=3, max_expansions=12)
    ).run("who is [Keanu Reeves]")
    assert result.status == "below_tau" and result.value == 0.6
    assert len(judged) == 1
