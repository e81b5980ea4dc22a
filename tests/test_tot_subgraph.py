"""The local subgraph a Tree-of-Traversals policy reads: a value with properties of its own (a statement's qualifiers,
a blank node over generic SPARQL) shows them, and two such values under one relation stay two edges."""

from __future__ import annotations

from kg_adapters.models import Direction, Edge, Literal, Qualifier, Relation
from kg_adapters.sparql import EndpointRegistry, open_sparql_kg
from strategies.tot.actions import ExpandKG, SelectEntities, SelectRelation
from strategies.tot.asm import TraversalASM
from strategies.tot.state import LocalSubgraph

pytest_plugins = ["oxigraph_fixture"]


def _award(name: str) -> Edge:
    return Edge(source="g:ada", relation="g:award", value=Literal(value="(structured value)"),
                qualifiers=[Qualifier(relation=Relation(id="g:name", label="award name"), value=Literal(value=name))])


def test_two_structured_values_under_one_relation_are_two_edges_and_show_their_properties():
    sub = LocalSubgraph()
    assert sub.add_edge(_award("Gold Medal")) and sub.add_edge(_award("Silver Medal"))
    assert not sub.add_edge(_award("Gold Medal"))  # the same statement again
    text = sub.render()
    assert "'(structured value)' {award name: 'Gold Medal'}" in text
    assert "'(structured value)' {award name: 'Silver Medal'}" in text


async def test_a_blank_node_reached_over_generic_sparql_shows_its_properties_to_the_policy(generic_sparql_url):
    kg = open_sparql_kg("g", "sparql", generic_sparql_url, registry=EndpointRegistry(),
                        prefixes={"ex": "http://example.org/computing/"})
    try:
        asm = TraversalASM([kg])
        s = await asm.initial_state("how heavy is the [Difference Engine]")
        for a in (ExpandKG(), SelectEntities(entity_ids=s.topic_entities[:1]),
                  SelectRelation(relation_id="g:schema.weight", direction=Direction.forward)):
            s = await asm.apply(s, a)
        assert "'(structured value)' {unit text: 'tonnes'; value: '5'}" in s.subgraph.render()
    finally:
        await kg.aclose()
