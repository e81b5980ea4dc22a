"""The text an agent reads for a page of edges: qualifiers follow their target, and a long list is
cut in the text (the structured result keeps every one)."""

from __future__ import annotations

from tot_mcp.kg_adapters.models import Edge, EdgePage, Entity, Literal, Qualifier, Relation
from tot_mcp.server.render import render_edges


def _page(n_qualifiers: int) -> EdgePage:
    rel = Relation(id="wd:P39", label="position held")
    quals = [
        Qualifier(relation=Relation(id=f"wd:Q{i}", label=f"q{i}"), value=Literal(value=str(i)))
        for i in range(n_qualifiers)
    ]
    edge = Edge(source="wd:Q1", relation="wd:P39", target="wd:Q2", qualifiers=quals)
    entities = {
        "wd:Q1": Entity(id="wd:Q1", kg="wd", label="Ada"),
        "wd:Q2": Entity(id="wd:Q2", kg="wd", label="Chair"),
    }
    return EdgePage(edges=[edge], entities=entities, relation=rel)


def test_qualifiers_follow_the_target_in_braces():
    text = render_edges(_page(2))
    assert text.endswith('wd:Q2 Chair {q0: "0"; q1: "1"}')


def test_a_long_qualifier_list_is_cut_in_the_text_but_kept_in_the_result():
    page = _page(12)
    line = render_edges(page).splitlines()[-1]
    assert 'q7: "7"; +4 more}' in line and "q8" not in line
    assert len(page.edges[0].qualifiers) == 12
