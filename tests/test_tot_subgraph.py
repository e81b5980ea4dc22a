"""Values with properties of their own (a statement's qualifiers, a nameless blank node over generic
SPARQL) in Tree-of-Traversals: the local subgraph a policy reads shows the properties, two such
values under one relation stay two edges, and the offline reasoner answers them as two answers."""

from __future__ import annotations

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.models import Direction, Edge, Literal, Qualifier, Relation
from tot_mcp.kg_adapters.sparql import EndpointRegistry, open_sparql_kg
from tot_mcp.strategies.tot.actions import ExpandKG, SelectEntities, SelectRelation
from tot_mcp.strategies.tot.asm import TraversalASM
from tot_mcp.strategies.tot.state import LocalSubgraph

pytest_plugins = ["oxigraph_fixture"]


def _award(name: str) -> Edge:
    return Edge(
        source="g:ada",
        relation="g:award",
        value=Literal(value="(structured value)"),
        qualifiers=[
            Qualifier(relation=Relation(id="g:name", label="award name"), value=Literal(value=name))
        ],
    )


def test_two_structured_values_under_one_relation_are_two_edges_and_show_their_properties():
    sub = LocalSubgraph()
    assert sub.add_edge(_award("Gold Medal")) and sub.add_edge(_award("Silver Medal"))
    assert not sub.add_edge(_award("Gold Medal"))  # the same statement again
    text = sub.render()
    assert "'(structured value)' {award name: 'Gold Medal'}" in text
    assert "'(structured value)' {award name: 'Silver Medal'}" in text


async def test_a_blank_node_reached_over_generic_sparql_shows_its_properties_to_the_policy(
    generic_sparql_url,
):
    kg = Graph(
        open_sparql_kg(
            "g",
            "sparql",
            generic_sparql_url,
            registry=EndpointRegistry(),
            prefixes={"ex": "http://example.org/computing/"},
        )
    )
    try:
        asm = TraversalASM([kg])
        s = await asm.initial_state("how heavy is the [Difference Engine]")
        for a in (
            ExpandKG(),
            SelectEntities(entity_ids=s.topic_entities[:1]),
            SelectRelation(relation_id="g:schema.weight", direction=Direction.forward),
        ):
            s = await asm.apply(s, a)
        assert "'(structured value)' {unit text: 'tonnes'; value: '5'}" in s.subgraph.render()
    finally:
        await kg.aclose()


async def test_the_offline_reasoner_answers_two_nameless_structured_values_as_two(tmp_path):
    """Two unlabelled blank-node awards are two answers, each with its properties, not one
    "(structured value)"."""
    from oxigraph_fixture import start_oxigraph  # the plugin pytest loads

    from retrieval_fixtures import shared_embedder

    from tot_mcp.strategies.offline import OfflineReasoner, topics_from_matches

    ttl = tmp_path / "awards.ttl"
    ttl.write_text(
        "@prefix ex: <http://example.org/p/> .\n@prefix rdfs: "
        "<http://www.w3.org/2000/01/rdf-schema#> .\n"
        'ex:Ada rdfs:label "Ada Byron" ; ex:award [ ex:awardName "Gold Medal" ] , '
        '[ ex:awardName "Silver Medal" ] ; ex:birthPlace ex:London .\n'
        'ex:London rdfs:label "London" .\n'
    )
    proc, url = start_oxigraph(ttl, tmp_path / "store")
    with proc:
        kg = Graph(
            open_sparql_kg(
                "g",
                "sparql",
                url,
                registry=EndpointRegistry(),
                prefixes={"ex": "http://example.org/p/"},
            )
        )
        try:
            question = "what award did [Ada Byron] receive"
            res = await OfflineReasoner(shared_embedder()).reason(
                kg, question, topics_from_matches(await kg.initialize(question))
            )
            assert [h[0] for h in res.best.hops] == ["g:ex.award"]
            assert sorted(res.best.answer_labels) == [
                "(structured value) {award name: Gold Medal}",
                "(structured value) {award name: Silver Medal}",
            ]
        finally:
            await kg.aclose()
            proc.terminate()
            proc.wait(timeout=5)
