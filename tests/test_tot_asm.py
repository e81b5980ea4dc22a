"""The Tree-of-Traversals action-state machine: valid transitions call the KG, invalid ones are
recorded, not fatal."""

from __future__ import annotations

import pytest
from tot_fixtures import eid, make_kg

from tot_mcp.kg_adapters.models import Direction
from tot_mcp.strategies.tot.actions import (
    Answer,
    ExpandKG,
    Invalid,
    SelectEntities,
    SelectRelation,
    Think,
)
from tot_mcp.strategies.tot.asm import AsmConfig, TraversalASM, was_rejected
from tot_mcp.strategies.tot.state import AsmState, TraversalState


@pytest.fixture
def kg():
    return make_kg()


async def test_initial_state_links_the_bracketed_topic_entity_only(kg):
    asm = TraversalASM(kg)
    state = await asm.initial_state("who directed the films [Keanu Reeves] acted in")
    keanu = await eid(kg, "Keanu Reeves")
    assert state.topic_entities == [keanu]
    assert list(state.subgraph.entities) == [keanu]
    assert state.asm_state is AsmState.DEFAULT and state.depth == 0 and not state.must_answer


async def test_full_expansion_round_adds_edges_and_returns_to_default(kg):
    asm = TraversalASM(kg)
    s0 = await asm.initial_state("who directed the films [Keanu Reeves] acted in")
    keanu = s0.topic_entities[0]
    s1 = await asm.apply(s0, ExpandKG())
    assert s1.asm_state is AsmState.SELECTING_ENTITIES and s1.depth == 1
    s2 = await asm.apply(s1, SelectEntities(entity_ids=[keanu]))
    assert s2.asm_state is AsmState.SELECTING_RELATION
    assert s2.selected_entities == [keanu]
    assert [(r.id, r.direction) for r in s2.candidate_relations] == [
        ("m:starred_actors", Direction.backward)
    ]
    s3 = await asm.apply(
        s2, SelectRelation(relation_id="m:starred_actors", direction=Direction.backward)
    )
    assert s3.asm_state is AsmState.DEFAULT and s3.depth == 3
    labels = {e.label for e in s3.subgraph.entities.values()}
    assert labels == {"Keanu Reeves", "The Matrix", "Speed"}
    assert len(s3.subgraph.edges) == 2
    x = s3.subgraph.expansions[-1]
    assert x.edges_added == 2 and len(x.entities_added) == 2 and not x.truncated
    assert s3.selected_entities == [] and s3.candidate_relations == []
    # the earlier states are untouched: tree nodes can share them
    assert (
        len(s0.subgraph.entities) == 1
        and s0.actions == []
        and s2.asm_state is AsmState.SELECTING_RELATION
    )


async def test_rendered_subgraph_groups_edges_by_source_and_relation_with_counts(kg):
    asm = TraversalASM(kg)
    s = await asm.initial_state("[Keanu Reeves]")
    for a in (
        ExpandKG(),
        SelectEntities(entity_ids=s.topic_entities),
        SelectRelation(relation_id="m:starred_actors", direction=Direction.backward),
    ):
        s = await asm.apply(s, a)
    text = s.subgraph.render()
    keanu = s.topic_entities[0]
    assert f"  {keanu}: Keanu Reeves" in text
    assert f"  {keanu} (Keanu Reeves):" in text
    assert "m:starred_actors [inverse of starred actors] (2):" in text
    assert "(The Matrix)" in text and "(Speed)" in text


async def test_answer_moves_to_done_and_fills_text_from_labels(kg):
    asm = TraversalASM(kg)
    s = await asm.initial_state("[Keanu Reeves]")
    done = await asm.apply(s, Answer(entity_ids=s.topic_entities))
    assert done.asm_state is AsmState.DONE
    assert done.answer is not None and done.answer.text == "Keanu Reeves"
    after = await asm.apply(done, Think(text="more"))
    assert was_rejected(done, after) and "already answered" in after.invalid_actions[-1].reason


async def test_think_stays_in_default_and_extends_the_trajectory(kg):
    asm = TraversalASM(kg)
    s = await asm.initial_state("[Keanu Reeves]")
    t = await asm.apply(s, Think(text="first find his films"))
    assert (
        t.asm_state is AsmState.DEFAULT
        and t.depth == 1
        and t.actions == [Think(text="first find his films")]
    )


@pytest.mark.parametrize(
    "setup, action, reason",
    [
        ([], SelectEntities(entity_ids=["m:E0"]), "not allowed while default"),
        ([], SelectRelation(relation_id="m:directed_by"), "not allowed while default"),
        ([ExpandKG()], Think(text="x"), "not allowed while selecting_entities"),
        ([ExpandKG()], Answer(text="x"), "not allowed while selecting_entities"),
        ([ExpandKG()], SelectEntities(entity_ids=["m:E9999"]), "not in the local subgraph"),
        ([ExpandKG()], SelectEntities(entity_ids=[]), "no entities selected"),
        ([ExpandKG()], ExpandKG(), "not allowed while selecting_entities"),
        ([], Answer(entity_ids=["m:E9999"]), "not in the local subgraph"),
        ([], Answer(), "empty answer"),
        ([], Think(text="  "), "empty thought"),
        ([], Invalid(raw="garbage", reason="could not parse"), "could not parse"),
    ],
)
async def test_invalid_actions_are_recorded_and_leave_the_state_unchanged(
    kg, setup, action, reason
):
    asm = TraversalASM(kg)
    s = await asm.initial_state("[Keanu Reeves]")
    for a in setup:
        s = await asm.apply(s, a)
    after = await asm.apply(s, action)
    assert was_rejected(s, after)
    assert reason in after.invalid_actions[-1].reason
    assert after.asm_state is s.asm_state and after.actions == s.actions
    assert (
        after.subgraph.entities == s.subgraph.entities and after.subgraph.edges == s.subgraph.edges
    )
    assert len(s.invalid_actions) == len(after.invalid_actions) - 1


async def test_relation_must_be_a_candidate_in_the_chosen_direction(kg):
    asm = TraversalASM(kg)
    s = await asm.initial_state("[Keanu Reeves]")
    s = await asm.apply(await asm.apply(s, ExpandKG()), SelectEntities(entity_ids=s.topic_entities))
    wrong_dir = await asm.apply(
        s, SelectRelation(relation_id="m:starred_actors", direction=Direction.forward)
    )
    assert (
        was_rejected(s, wrong_dir) and "in that direction" in wrong_dir.invalid_actions[-1].reason
    )
    unknown = await asm.apply(
        s, SelectRelation(relation_id="m:directed_by", direction=Direction.forward)
    )
    assert (
        was_rejected(s, unknown)
        and "not among the candidates" in unknown.invalid_actions[-1].reason
    )


async def test_a_kg_error_during_selection_is_recorded_not_raised(kg):
    asm = TraversalASM(kg)
    s = await asm.initial_state("[Keanu Reeves]")
    # an ID the KG does not know (as if the subgraph held a stale entity)
    from tot_mcp.kg_adapters.models import Entity

    lonely = Entity(id="m:E424242", label="ghost", kg="m")
    s.subgraph.add_entity(lonely)
    s = await asm.apply(s, ExpandKG())
    after = await asm.apply(s, SelectEntities(entity_ids=[lonely.id]))
    assert was_rejected(s, after) and "get_relations failed" in after.invalid_actions[-1].reason


async def test_repeated_expansion_is_recorded_as_adding_nothing(kg):
    asm = TraversalASM(kg)
    s = await asm.initial_state("[Keanu Reeves]")
    rel = SelectRelation(relation_id="m:starred_actors", direction=Direction.backward)
    for _ in range(2):
        for a in (ExpandKG(), SelectEntities(entity_ids=s.topic_entities), rel):
            s = await asm.apply(s, a)
    assert [x.edges_added for x in s.subgraph.expansions] == [2, 0]
    assert s.subgraph.expansions[-1].note == "expansion added nothing new"
    assert len(s.subgraph.edges) == 2


async def test_edges_per_expansion_are_capped_and_marked_truncated():
    kg = make_kg(triples=[(f"Film {i}", "starred_actors", "Busy Actor") for i in range(30)])
    asm = TraversalASM(kg, AsmConfig(max_edges_per_expansion=10))
    s = await asm.initial_state("[Busy Actor]")
    for a in (
        ExpandKG(),
        SelectEntities(entity_ids=s.topic_entities),
        SelectRelation(relation_id="m:starred_actors", direction=Direction.backward),
    ):
        s = await asm.apply(s, a)
    x = s.subgraph.expansions[-1]
    assert x.edges_added == 10 and x.truncated and "capped at 10" in x.note


async def test_max_depth_forces_an_answer_only_in_default(kg):
    asm = TraversalASM(kg)
    s = await asm.initial_state("[Keanu Reeves]", max_depth=2)
    s = await asm.apply(s, Think(text="a"))
    s = await asm.apply(s, ExpandKG())  # depth 2, but an expansion under way may finish
    assert s.depth == 2 and not s.must_answer
    s = await asm.apply(s, SelectEntities(entity_ids=s.topic_entities))
    s = await asm.apply(
        s, SelectRelation(relation_id="m:starred_actors", direction=Direction.backward)
    )
    assert s.asm_state is AsmState.DEFAULT and s.must_answer
    blocked = await asm.apply(s, ExpandKG())
    assert was_rejected(s, blocked) and "only ANSWER" in blocked.invalid_actions[-1].reason
    done = await asm.apply(s, Answer(entity_ids=[s.subgraph.expansions[-1].entities_added[0]]))
    assert done.asm_state is AsmState.DONE


async def test_entities_added_in_one_kg_are_linked_into_the_others():
    a = make_kg("a")
    b = make_kg("b", [("Speed", "filmed_in", "Los Angeles")])
    asm = TraversalASM([a, b])
    s = await asm.initial_state("[Keanu Reeves]")
    assert s.topic_entities == [await eid(a, "Keanu Reeves")]
    for act in (
        ExpandKG(),
        SelectEntities(entity_ids=s.topic_entities),
        SelectRelation(relation_id="a:starred_actors", direction=Direction.backward),
    ):
        s = await asm.apply(s, act)
    speed_a, speed_b = await eid(a, "Speed"), await eid(b, "Speed")
    assert s.subgraph.same_as[speed_a] == [speed_b]
    speed = (
        await a.describe_entity(speed_a)
    ).entity  # its line: "id: label - description (same as …)"
    described = f" - {speed.description}" if speed.description else ""
    # the twin's own summary comes along: what the other KG knows of it, without expanding there
    assert (
        f"{speed_a}: Speed{described} (same as {speed_b}: filmed in Los Angeles)"
        in s.subgraph.render()
    )
    # the other KG's relations are offered for the entity itself, and followed through its link
    s = await asm.apply(await asm.apply(s, ExpandKG()), SelectEntities(entity_ids=[speed_a]))
    assert ("b:filmed_in", Direction.forward) in {
        (r.id, r.direction) for r in s.candidate_relations
    }
    s = await asm.apply(s, SelectRelation(relation_id="b:filmed_in"))
    (edge,) = [e for e in s.subgraph.edges if e.relation == "b:filmed_in"]
    assert (edge.source, edge.via, s.subgraph.label(edge.target)) == (
        speed_b,
        speed_a,
        "Los Angeles",
    )
    # and the linked entity may also be selected by its own ID
    expanding = await asm.apply(s, ExpandKG())
    assert not was_rejected(
        expanding, await asm.apply(expanding, SelectEntities(entity_ids=[speed_b]))
    )


def test_states_and_actions_round_trip_through_json():
    s = TraversalState(
        question="q", actions=[ExpandKG(), SelectRelation(relation_id="m:r", direction="backward")]
    )
    back = TraversalState.model_validate_json(s.model_dump_json())
    assert back.actions == s.actions and isinstance(back.actions[1], SelectRelation)
