"""What the tree search reports as the answer: the model's items as the subgraph shows them, all of
a capped set's entities represented, and an answer known to be partial said to be partial."""

from __future__ import annotations

import pytest
from tot_fixtures import FunctionPolicy, eid, make_kg

from tot_mcp.kg_adapters.models import Direction
from tot_mcp.strategies.tot.actions import Answer, ExpandKG, SelectEntities, SelectRelation
from tot_mcp.strategies.tot import asm as asm_module
from tot_mcp.strategies.tot.asm import AsmConfig, TraversalASM
from tot_mcp.strategies.tot.prompted import parse_action_text
from tot_mcp.strategies.tot.search import SearchConfig, TreeSearch
from tot_mcp.strategies.tot.state import AsmState

# three actors with 30, 25 and 3 films: one request capped at 20 edges would fill from the first two
# only
CAST = (
    [(f"Film A{i}", "starred_actors", "Ann") for i in range(30)]
    + [(f"Film B{i}", "starred_actors", "Bob") for i in range(25)]
    + [(f"Film C{i}", "starred_actors", "Cy") for i in range(3)]
    + [("Trio", "starred_actors", a) for a in ("Ann", "Bob", "Cy")]
    + [(f"Film C{i}", "release_year", f"19{70 + i}") for i in range(3)]
)
Q = "which films share actors with [Trio]"


async def _actors_expanded(asm: TraversalASM):
    s = await asm.initial_state(Q)
    for a in (
        ExpandKG(),
        SelectEntities(entity_ids=s.topic_entities),
        SelectRelation(relation_id="c:starred_actors"),
    ):
        s = await asm.apply(s, a)
    return s


@pytest.mark.parametrize("read_at_once", [2000, 10], ids=["one bulk read", "pages per source"])
async def test_a_capped_expansion_shares_the_cap_fairly_and_names_who_was_cut(
    monkeypatch, read_at_once
):
    # the sources' edges are shared out of one bulk read; sources with more edges than it holds,
    # page by page
    monkeypatch.setattr(asm_module, "FAIR_SHARE_READ", read_at_once)
    kg = make_kg("c", CAST)
    asm = TraversalASM(kg, AsmConfig(max_edges_per_expansion=20))
    s = await _actors_expanded(asm)
    actors = s.subgraph.expansions[-1].entities_added
    s = await asm.apply(s, ExpandKG())
    s = await asm.apply(s, SelectEntities(entity_ids=actors))
    s = await asm.apply(
        s, SelectRelation(relation_id="c:starred_actors", direction=Direction.backward)
    )
    x = s.subgraph.expansions[-1]
    per_actor = {
        a: sum(
            1
            for e in s.subgraph.edges
            if e.source == a
            and e.relation == "c:starred_actors"
            and e.direction is Direction.backward
        )
        for a in actors
    }
    cy = await eid(kg, "Cy")
    # Cy keeps all of his films (Trio's edge was already there from the first hop); Ann and Bob
    # share the rest
    assert per_actor[cy] == 3
    assert (
        sum(per_actor.values()) <= 20
        and min(per_actor.values()) >= 3
        and max(per_actor.values()) <= 9
    )
    assert x.truncated and set(x.cut_sources) == {await eid(kg, "Ann"), await eid(kg, "Bob")}
    line = s.subgraph.render()
    assert (
        f"capped: kept {x.edges_added} of 61 edges; not all edges of " in line and "(Ann)" in line
    )


async def test_an_answer_from_a_capped_expansion_is_flagged_partial_with_a_reason():
    kg = make_kg("c", CAST)

    def propose(state):
        if state.asm_state is AsmState.SELECTING_ENTITIES:
            return [
                SelectEntities(
                    entity_ids=state.subgraph.expansions[-1].entities_added
                    if state.subgraph.expansions
                    else state.topic_entities
                )
            ]
        if state.asm_state is AsmState.SELECTING_RELATION:
            r = next(r for r in state.candidate_relations if r.id == "c:starred_actors")
            return [SelectRelation(relation_id=r.id, direction=r.direction)]
        if len(state.subgraph.expansions) < 2:
            return [ExpandKG()]
        films = [i for i in state.subgraph.expansions[-1].entities_added]
        return [Answer(entity_ids=films)]

    result = await TreeSearch(
        TraversalASM(kg, AsmConfig(max_edges_per_expansion=20)),
        FunctionPolicy(propose, lambda s: 0.9),
        SearchConfig(k=1),
    ).run(Q)
    assert result.status == "answered" and result.partial
    assert "expansion 2 (c:starred_actors backward) capped: kept" in result.partial_reason
    assert "(Ann)" in result.partial_reason


async def test_the_reported_answer_is_what_the_model_said_grounded_not_the_ids_it_cited():
    """Years read off the films' summaries are the answer; the films cited beside them are not."""
    kg = make_kg("c", CAST)
    asm = TraversalASM(kg)
    s = await _actors_expanded(asm)
    cy = await eid(kg, "Cy")
    for a in (
        ExpandKG(),
        SelectEntities(entity_ids=[cy]),
        SelectRelation(relation_id="c:starred_actors", direction=Direction.backward),
    ):
        s = await asm.apply(s, a)
    films = [i for i in s.subgraph.expansions[-1].entities_added]
    reply = f"ANSWER: 1970, 1971, 1972, 1999 | {', '.join(films)}"
    done = await asm.apply(s, parse_action_text(reply, s))
    assert [it.text for it in done.answer.items] == ["1970", "1971", "1972"]
    assert all(
        it.entity_id is None and it.source.startswith("summary of") for it in done.answer.items
    )
    assert done.answer.ungrounded == ["1999"]


async def test_an_answer_naming_nothing_in_the_subgraph_is_turned_down_with_the_next_step():
    kg = make_kg("c", CAST)
    asm = TraversalASM(kg)
    s = await asm.initial_state(Q)
    after = await asm.apply(s, parse_action_text("ANSWER: Film Z ; Film Y", s))
    assert after.answer is None
    reason = after.invalid_actions[-1].reason
    assert "no answer item is shown in the local subgraph" in reason and "expand first" in reason


async def test_every_director_of_a_prolific_actors_films_is_answered(embedded_kg):
    """The README's own pattern: all 32 of Tom Hanks's films are selected (a selection the policy
    cut would be an answer it cut), so all 25 of their other directors come back, without him."""
    from retrieval_fixtures import shared_embedder

    from tot_mcp.strategies.offline import OfflinePolicy

    policy = OfflinePolicy(embedded_kg, embedder=shared_embedder())
    result = await TreeSearch(
        TraversalASM(embedded_kg), policy, SearchConfig(k=3, max_expansions=10)
    ).run("who directed the films [Tom Hanks] starred in")
    assert len(result.answer.items) == 25 and "Tom Hanks" not in result.answer.labels
    assert {"Steven Spielberg", "Robert Zemeckis", "Ron Howard", "Frank Darabont"} <= set(
        result.answer.labels
    )
    assert not result.partial
