"""Tree-of-Traversals over two linked KGs that share no identifiers (the linked-MetaQA shape, in
miniature): people and films in one, each film's year and genre in the other, joined only by the
films' labels. A walk must cross from one KG to the other after its first hop — the entities an
expansion adds are linked, not only the topic."""

from __future__ import annotations

import pytest
from retrieval_fixtures import shared_embedder
from test_offline_core import kg_of, lines

from tot_mcp.kg_adapters.routing import LinkedKG
from tot_mcp.strategies.offline import OfflinePolicy
from tot_mcp.strategies.tot.asm import TraversalASM
from tot_mcp.strategies.tot.search import SearchConfig, TreeSearch

FILMS = """
Alpha|directed_by|Dana Reed
Alpha|written_by|Sam Poe
Beta|directed_by|Fay Gold
Gamma|directed_by|Eli Fox
Gamma|written_by|Sam Poe
Delta|directed_by|Eli Fox
"""

CATALOG = """
Alpha|release_year|1999
Alpha|has_genre|Drama
Beta|release_year|2003
Beta|has_genre|Comedy
Gamma|release_year|2010
Gamma|has_genre|Thriller
Delta|release_year|2012
Delta|has_genre|Horror
"""


@pytest.fixture(scope="module")
def graph():
    return LinkedKG.of([kg_of("films", lines(FILMS)), kg_of("catalog", lines(CATALOG))])


async def answer(graph, question: str):
    policy = OfflinePolicy(graph, embedder=shared_embedder())
    return await TreeSearch(TraversalASM(graph), policy, SearchConfig(k=3)).run(question)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "what genres are the films directed by [Eli Fox]",
            {"Thriller", "Horror"},
        ),  # crosses at hop 2
        # crosses at hop 3; as in MetaQA, the topic film itself is not one of "the films written by
        # its writer"
        ("when were the films written by the writer of [Gamma] released", {"1999"}),
        (
            "what genre is [Beta]",
            {"Comedy"},
        ),  # the topic itself is linked: its catalog twin answers
    ],
)
async def test_a_walk_crosses_into_the_other_kg_at_any_hop(graph, question, expected):
    result = await answer(graph, question)
    assert result.status == "answered" and set(result.answer.labels) == expected
    assert all(i.startswith("catalog:") for i in result.answer.entity_ids)


async def test_the_crossing_is_visible_in_the_subgraph(graph):
    result = await answer(graph, "what genres are the films directed by [Eli Fox]")
    # the films reached in 'films' show their twins in 'catalog', so a model reading the subgraph
    # sees the bridge
    assert "(same as catalog:" in result.subgraph_text
    assert "catalog:has_genre" in result.subgraph_text


async def test_without_links_the_other_kg_is_out_of_reach(graph):
    unlinked = LinkedKG(graph.kgs)  # same KGs, no link rules
    result = await answer(unlinked, "what genres are the films directed by [Eli Fox]")
    assert not {"Thriller", "Horror"} & set(result.answer.labels)


async def test_follow_path_crosses_the_link_in_one_call(graph):
    from tot_mcp.kg_adapters.follow import Hop, follow_path

    eli = (await graph.initialize("[Eli Fox]"))[0].entity.id
    hops = [
        Hop(relation_id="films:directed_by", direction="backward"),
        Hop(relation_id="catalog:has_genre"),
    ]
    result = await follow_path(graph, [eli], hops)
    assert result.reached == [2, 2] and {t.label for t in result.targets} == {"Thriller", "Horror"}
    # the example path names the film in 'films', where the walk was when it crossed
    assert all(
        t.example[1].startswith("films:") and t.example[2].startswith("catalog:")
        for t in result.targets
    )


async def test_the_question_entity_is_not_walked_back_through_in_another_kg():
    """ "the films directed by the director of [Alpha]" means the other films: Alpha is one node in
    both KGs, so neither its films-side nor its cast-side twin may come back as an intermediate
    film, whichever KG linked it."""
    films = kg_of(
        "films",
        lines("Alpha|directed_by|Eli Fox\nBeta|directed_by|Eli Fox\nGamma|directed_by|Ann Lee\n"),
    )
    cast = kg_of(
        "cast",
        lines(
            "Alpha|starred_actors|Ada Lim\nBeta|starred_actors|Bo Chan\n"
            "Gamma|starred_actors|Cy Park\n"
        ),
    )
    graph = LinkedKG.of(
        [cast, films]
    )  # cast first: the topic "Alpha" may well be linked on the cast side
    result = await answer(graph, "who starred in the films directed by the director of [Alpha]")
    assert set(result.answer.labels) == {"Bo Chan"}, result.tree_text()
