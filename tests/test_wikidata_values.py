"""Wikidata values as Wikidata means them (issue #15, item 4), against a real ``oxigraph serve``
over Wikidata-shaped data with full statement nodes (tests/fixtures/wikidata_values.ttl:
``p:``/``ps:``/``psv:``, ``pq:``/``pqv:``, ``wikibase:timePrecision``, ``wikibase:quantityUnit``,
WKT coordinates): times at their precision, quantities with their unit, coordinates in degrees, and
``describe_entity`` telling look-alikes apart by type and statement count.
"""

from __future__ import annotations

import pytest
from mcp_client import stdio_session, text_of

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.models import Literal
from tot_mcp.kg_adapters.sparql import EndpointRegistry, open_sparql_kg
from tot_mcp.kg_adapters.sparql.values import WKT, coordinate_value, quantity_value, time_value
from tot_mcp.server.render import literal_text

pytest_plugins = ["oxigraph_fixture"]

XSD = "http://www.w3.org/2001/XMLSchema#"


@pytest.fixture
def wd(values_url):
    return Graph(open_sparql_kg("wd", "wikidata", values_url, registry=EndpointRegistry()))


async def value_of(kg, entity: str, prop: str) -> Literal:
    page = await kg.get_edges([entity], prop)
    assert len(page.edges) == 1, page.edges
    return page.edges[0].value


# -- formatting, one function at a time ------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "precision", "expected"),
    [
        ("1952-03-11T00:00:00Z", 11, ("1952-03-11", XSD + "date")),
        ("1978-03-01T00:00:00Z", 10, ("1978-03", XSD + "gYearMonth")),
        ("1997-01-01T00:00:00Z", 9, ("1997", XSD + "gYear")),
        ("1940-01-01T00:00:00Z", 8, ("1940s", None)),
        ("1000-01-01T00:00:00Z", 7, ("10th century", None)),
        ("1901-01-01T00:00:00Z", 7, ("20th century", None)),
        ("2000-01-01T00:00:00Z", 6, ("2nd millennium", None)),
        ("-2999-01-01T00:00:00Z", 9, ("-2999", XSD + "gYear")),
        ("-0044-03-15T00:00:00Z", 11, ("-0044-03-15", XSD + "date")),
        ("-13798000000-00-00T00:00:00Z", 3, ("-13798000000", XSD + "gYear")),
        ("+0033-01-01T00:00:00Z", 9, ("0033", XSD + "gYear")),
    ],
)
def test_times_are_written_at_their_precision(value, precision, expected):
    out = time_value(value, precision)
    assert (out.value, out.datatype) == expected


def test_unknown_or_finer_than_day_precision_keeps_the_endpoint_value():
    assert time_value("1952-03-11T00:00:00Z", None) is None
    assert time_value("1952-03-11T10:20:00Z", 14) is None
    assert time_value("not a time", 11) is None


def test_quantities_and_coordinates_read_as_people_write_them():
    assert quantity_value("+891.12", "square kilometre").value == "891.12 square kilometre"
    assert (quantity_value("+3755251", None).value, quantity_value("-5", None).datatype) == (
        "3755251",
        XSD + "decimal",
    )
    assert coordinate_value("Point(13.4 52.52)").value == "52.52°N, 13.40°E"
    assert coordinate_value("Point(-0.1275 51.507222)").value == "51.5072°N, 0.1275°W"
    assert coordinate_value("Point(-43.2 -22.9)").value == "22.90°S, 43.20°W"
    moon = "<http://www.wikidata.org/entity/Q405> Point(23.47 0.67)"
    assert coordinate_value(moon).value == "0.67°N, 23.47°E (globe Q405)"
    assert coordinate_value("LINESTRING(1 2, 3 4)") is None


# -- through the adapter, against oxigraph ---------------------------------------------------------
async def test_edge_values_carry_the_precision_of_their_statement(wd):
    birth = await value_of(wd, "wd:Q42", "wd:P569")
    assert (birth.value, birth.datatype) == ("1952-03-11", XSD + "date")
    founded = await value_of(wd, "wd:Q64", "wd:P571")
    assert (founded.value, founded.datatype) == ("1237", XSD + "gYear")
    radio = await value_of(wd, "wd:Q3107329", "wd:P580")
    assert (radio.value, radio.datatype) == ("1978-03", XSD + "gYearMonth")
    assert (await value_of(wd, "wd:Q8461", "wd:P571")).value == "1940s"
    assert (await value_of(wd, "wd:Q48328", "wd:P571")).value == "10th century"
    assert (await value_of(wd, "wd:Q39671", "wd:P571")).value == "-2999"


async def test_quantities_come_with_their_unit_and_coordinates_in_degrees(wd):
    assert (await value_of(wd, "wd:Q64", "wd:P2046")).value == "891.12 square kilometre"
    assert (await value_of(wd, "wd:Q42", "wd:P2048")).value == "1.96 metre"
    population = await value_of(wd, "wd:Q64", "wd:P1082")
    assert (population.value, population.datatype) == (
        "3755251",
        XSD + "decimal",
    )  # unit "1": a plain number
    berlin = await value_of(
        wd, "wd:Q64", "wd:P625"
    )  # exact in the structured value, in degrees in the text
    assert (berlin.value, berlin.datatype) == ("Point(13.383333 52.516667)", WKT)
    assert literal_text(berlin) == '"52.5167°N, 13.3833°E"'
    assert literal_text(await value_of(wd, "wd:Q90", "wd:P625")) == '"48.8569°N, 2.3514°E"'


async def test_a_walk_reads_the_values_a_page_shows(wd):
    """A walk reads a frontier in bulk (``adjacent_ids``); a Wikidata value is read with its value
    node there too, so the walk meets the text a page shows, precision and unit included."""
    for prop in ("wd:P571", "wd:P2046", "wd:P1082", "wd:P569"):
        read = await wd.adjacent_ids(["wd:Q64", "wd:Q42"], prop)
        pages = [(await wd.get_edges([e], prop)).edges for e in ("wd:Q64", "wd:Q42")]
        shown = sorted((e.source, e.value_text()) for es in pages for e in es)
        assert sorted(read.values) == shown, prop
        assert read.values and not read.pairs and not read.truncated


async def test_qualifier_times_carry_their_own_precision(wd):
    spouse = (await wd.get_edges(["wd:Q42"], "wd:P26")).edges[0]
    assert {q.relation.label: q.value.value for q in spouse.qualifiers} == {
        "start time": "1991-11-25",
        "end time": "2001-05-11",
    }
    school = (await wd.get_edges(["wd:Q42"], "wd:P69")).edges[0]
    assert {q.relation.label: (q.value.value, q.value.datatype) for q in school.qualifiers} == {
        "start time": ("1971", XSD + "gYear"),
        "end time": ("1974", XSD + "gYear"),
    }
    population = (await wd.get_edges(["wd:Q64"], "wd:P1082")).edges[0]
    assert [(q.relation.label, q.value.value) for q in population.qualifiers] == [
        ("point in time", "2022-12-31")
    ]


async def test_without_a_value_node_the_endpoint_value_is_kept(wikidata_sparql_url):
    """tests/fixtures/wikidata_sample.ttl has no psv:/pqv: nodes: nothing is guessed."""
    plain = Graph(
        open_sparql_kg("wd", "wikidata", wikidata_sparql_url, registry=EndpointRegistry())
    )
    spouse = (await plain.get_edges(["wd:Q42"], "wd:P26")).edges[0]
    assert {q.value.value for q in spouse.qualifiers} == {
        "1991-11-25T00:00:00Z",
        "2001-05-11T00:00:00Z",
    }


async def test_describe_tells_look_alikes_apart_by_type_and_statement_count(wd):
    city = await wd.describe_entity("wd:Q90")
    prince = await wd.describe_entity("wd:Q167646")
    assert city.entity.label == prince.entity.label == "Paris"
    assert [(t.id, t.label) for t in city.types] == [("wd:Q515", "city")]
    assert [(t.id, t.label) for t in prince.types] == [("wd:Q4271324", "mythical character")]
    assert (city.statements, prince.statements) == (3, 1)  # wikibase:statements
    berlin = await wd.describe_entity("wd:Q64")
    assert [t.label for t in berlin.types] == ["city", "big city"] and berlin.statements == 6
    adams = await wd.describe_entity("wd:Q42")
    assert adams.statements == 5  # no wikibase:statements triple: its statement nodes are counted


async def test_the_server_shows_faithful_values_and_types(values_url):
    async with stdio_session(["--kg", f"wd=wikidata:{values_url}"]) as session:
        founded = await session.call_tool(
            "get_edges", {"entity_ids": ["wd:Q64"], "relation_id": "wd:P571"}
        )
        area = await session.call_tool(
            "get_edges", {"entity_ids": ["wd:Q64"], "relation_id": "wd:P2046"}
        )
        where = await session.call_tool(
            "get_edges", {"entity_ids": ["wd:Q64"], "relation_id": "wd:P625"}
        )
        city = await session.call_tool("describe_entity", {"entity_id": "wd:Q90"})
        prince = await session.call_tool("describe_entity", {"entity_id": "wd:Q167646"})
    assert not any(r.is_error for r in (founded, area, where, city, prince))
    assert 'P571 inception [1]: "1237" (gYear)' in text_of(founded)
    assert 'P2046 area [1]: "891.12 square kilometre"' in text_of(area)
    assert 'P625 coordinate location [1]: "52.5167°N, 13.3833°E"' in text_of(where)
    assert text_of(city).splitlines()[:2] == [
        "wd:Q90: Paris - capital of France",
        "instance of: wd:Q515 city; 3 statements",
    ]
    assert (
        text_of(prince).splitlines()[1]
        == "instance of: wd:Q4271324 mythical character; 1 statement"
    )
    assert (
        city.structured_content["types"][0]["id"] == "wd:Q515"
        and city.structured_content["statements"] == 3
    )
