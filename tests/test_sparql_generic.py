"""The generic SPARQL profile against a real server (oxigraph) serving plain RDF
(tests/fixtures/generic_sample.ttl), and the ID scheme that makes arbitrary IRIs safe, reversible KG
IDs.
"""

from __future__ import annotations

import base64

import pytest

from tot_mcp.kg_adapters.errors import InvalidInput, NotFound
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.models import Direction
from tot_mcp.kg_adapters.sparql import EndpointRegistry, IriIds, open_sparql_kg
from tot_mcp.kg_adapters.sparql.kg import BNODE_PROPERTIES
from tot_mcp.server.render import render_edges

pytest_plugins = ["oxigraph_fixture"]

EX = "http://example.org/computing/"
MARY = "http://other.example/people/Mary%20Somerville"


def b64(iri: str) -> str:
    return "~" + base64.urlsafe_b64encode(iri.encode()).decode().rstrip("=")


def generic(url: str, **options) -> Graph:
    """The backend over ``url`` (``ex:`` declared) behind its Graph, its own endpoint registry."""
    kg = open_sparql_kg(
        "g", "sparql", url, registry=EndpointRegistry(), prefixes={"ex": EX}, **options
    )
    return Graph(kg)


@pytest.fixture
def g(generic_sparql_url):
    return generic(generic_sparql_url)


# -- the ID scheme ---------------------------------------------------------------------------------
def test_iris_in_a_known_namespace_get_prefix_dot_localname_ids_and_others_base64():
    ids = IriIds({"ex": EX, "exp": EX + "people/"})
    assert ids.encode(EX + "Ada_Lovelace") == "ex.Ada_Lovelace"
    assert ids.encode(EX + "people/Ada") == "exp.Ada"  # the longest namespace wins
    assert ids.encode(MARY) == b64(MARY)  # '%' is not a local-name character
    assert ids.encode("urn:isbn:978-0-14-043999-4") == b64("urn:isbn:978-0-14-043999-4")
    for iri in [
        EX + "Ada_Lovelace",
        EX + "people/Ada",
        MARY,
        "urn:isbn:1",
        "http://x.org/a#b",
        "http://ü.example/ä",
    ]:
        assert ids.decode(ids.encode(iri)) == iri
        assert ":" not in ids.encode(iri)


def test_malformed_or_unsafe_ids_are_refused():
    ids = IriIds({"ex": EX})
    with pytest.raises(NotFound, match="unknown prefix 'nope'"):
        ids.decode("nope.Alice")
    for bad in ["ex.", "ex", ".Alice", "ex.A b", "ex.A>b", "~", "~!!", "~" + "A" * 600]:
        with pytest.raises(InvalidInput):
            ids.decode(bad)
    for unsafe in [
        "http://a/b> . ?s ?p <x",
        'http://a/"b',
        "http://a/{b}",
        "http://a/b c",
        "no-scheme",
        "http://a/\x00",
    ]:
        with pytest.raises(InvalidInput, match="unsafe or malformed IRI"):
            ids.decode(b64(unsafe))
    with pytest.raises(InvalidInput, match="prefix 'a.b'"):
        IriIds({"a.b": EX})


# -- search ----------------------------------------------------------------------------------------
async def test_labels_come_from_any_configured_label_predicate(g):
    assert (await g.search_entities("Ada Lovelace"))[
        0
    ].entity.id == "g:ex.Ada_Lovelace"  # rdfs:label
    assert (await g.search_entities("Charles Babbage"))[
        0
    ].entity.id == "g:ex.Charles_Babbage"  # skos:prefLabel
    byron = await g.search_entities("lord byron")  # schema:name, untagged
    assert (byron[0].entity.id, byron[0].entity.label, byron[0].match) == (
        "g:ex.Lord_Byron",
        "Lord Byron",
        "casefold",
    )
    assert byron[0].entity.description == "English poet (1788–1824)"


async def test_english_labels_win_over_other_languages_and_aliases_match(g, generic_sparql_url):
    hits = await g.search_entities(
        "Analytische Maschine"
    )  # not a configured language: only a substring search
    assert hits == []
    de = generic(generic_sparql_url, languages=["de"])
    assert (await de.search_entities("Analytische Maschine"))[
        0
    ].entity.label == "Analytische Maschine"
    assert (await g.search_entities("analytical engine"))[0].entity.label == "Analytical Engine"
    alias = await g.search_entities("Augusta Ada King")
    assert (alias[0].entity.id, alias[0].match) == ("g:ex.Ada_Lovelace", "alias")


async def test_iris_outside_the_prefixes_are_entities_too(g):
    hits = await g.search_entities("Mary Somerville")
    assert hits[0].entity.id == "g:" + b64(MARY)
    described = await g.describe_entity(hits[0].entity.id)
    assert (
        described.iri == MARY
        and described.entity.description == "Scottish scientist and writer (1780–1872)"
    )


async def test_entity_keys_are_iris_and_resolve_back_for_linking(g):
    assert await g.entity_key("g:" + b64(MARY)) == MARY
    assert await g.resolve_key(MARY) == "g:" + b64(MARY)
    assert await g.resolve_key(EX + "Ada_Lovelace") == "g:ex.Ada_Lovelace"
    assert await g.resolve_key(EX + "Nobody") is None
    assert await g.resolve_key("not an iri") is None


async def test_initialize_links_names_in_a_question(g):
    hits = await g.initialize("what did charles babbage design?")
    assert (hits[0].entity.id, hits[0].mention) == ("g:ex.Charles_Babbage", "charles babbage")


# -- relations and edges ---------------------------------------------------------------------------
async def test_relations_are_the_predicates_in_both_directions_without_label_predicates(g):
    rels = await g.get_relations(["g:ex.Ada_Lovelace"])
    got = {(r.id, r.label, r.direction.value): r.count for r in rels.relations}
    assert got == {
        ("g:foaf.knows", "knows", "forward"): 2,
        ("g:foaf.knows", "knows", "backward"): 1,
        ("g:schema.birthDate", "birth date", "forward"): 1,
        ("g:schema.deathDate", "death date", "forward"): 1,
        ("g:schema.parent", "parent", "forward"): 1,
        ("g:rdf.type", "type", "forward"): 1,
        ("g:ex.wrote", "wrote", "forward"): 1,
    }


async def test_edges_reach_entities_with_labels_and_literals_with_datatypes(g):
    page = await g.get_edges(["g:ex.Ada_Lovelace"], "g:foaf.knows")
    assert [(e.target, page.entities[e.target].label) for e in page.edges] == [
        ("g:ex.Charles_Babbage", "Charles Babbage"),
        ("g:" + b64(MARY), "Mary Somerville"),
    ]
    (born,) = (await g.get_edges(["g:ex.Ada_Lovelace"], "g:schema.birthDate")).edges
    assert (born.value.value, born.value.datatype) == (
        "1815-12-10",
        "http://www.w3.org/2001/XMLSchema#date",
    )
    back = await g.get_edges(["g:ex.Analytical_Engine"], "g:ex.designed", Direction.backward)
    assert [back.entities[e.target].label for e in back.edges] == ["Charles Babbage"]


async def test_edges_name_the_relation_by_its_label_or_its_humanized_local_name(g):
    designed = await g.get_edges(["g:ex.Analytical_Engine"], "g:ex.designed", Direction.backward)
    assert (designed.relation.id, designed.relation.label, designed.relation.direction) == (
        "g:ex.designed",
        "designed",
        Direction.backward,
    )
    born = await g.get_edges(
        ["g:ex.Ada_Lovelace"], "g:schema.birthDate"
    )  # no label triple: as get_relations
    assert born.relation.label == "birth date"


async def test_an_unlabelled_entity_falls_back_to_its_local_name_and_urns_work(g):
    page = await g.get_edges(["g:ex.Analytical_Engine"], "g:ex.inspired")
    (edge,) = page.edges
    assert edge.target == "g:" + b64("urn:isbn:978-0-14-043999-4")
    assert page.entities[edge.target].label == "Frankenstein"
    author = await g.get_edges([edge.target], "g:ex.author")
    assert author.entities[author.edges[0].target].label == "Mary Shelley"
    (typed,) = (await g.get_edges(["g:ex.Ada_Lovelace"], "g:rdf.type")).edges
    assert (
        typed.target == "g:schema.Person"
        and (await g.get_edges([typed.target], "g:rdf.type", "backward")).edges
    )


def quals(edge) -> set[tuple[str, str | None]]:
    return {(q.relation.label, q.target or q.value.value) for q in edge.qualifiers}


async def test_a_blank_node_object_is_its_label_with_its_own_properties_as_qualifiers(g):
    page = await g.get_edges(["g:ex.Notes_on_the_Analytical_Engine"], "g:ex.contains")
    (edge,) = page.edges
    assert (
        edge.target is None and edge.value.value == "Note G"
    )  # its label (English first), not a qualifier
    assert quals(edge) == {
        ("type", "g:ex.Program"),
        ("comment", "the first published computer program"),
        ("runs on", "g:ex.Analytical_Engine"),
        ("computes", "(structured value)"),  # one level only: a blank node inside is not expanded
    }
    assert (
        page.entities["g:ex.Analytical_Engine"].label == "Analytical Engine"
    )  # qualifier targets are named
    assert not page.warnings


async def test_an_unlabelled_blank_node_is_a_structured_value_and_backward_edges_bring_theirs_too(
    g,
):
    (weight,) = (await g.get_edges(["g:ex.Difference_Engine"], "g:schema.weight")).edges
    assert weight.value.value == "(structured value)"
    assert {(q.relation.label, q.value.value, q.value.datatype) for q in weight.qualifiers} == {
        ("value", "5", "http://www.w3.org/2001/XMLSchema#decimal"),
        ("unit text", "tonnes", None),
    }
    (note,) = (
        await g.get_edges(["g:ex.Analytical_Engine"], "g:ex.runsOn", Direction.backward)
    ).edges
    assert note.value.value == "Note G" and note.direction is Direction.backward
    assert ("runs on", "g:ex.Analytical_Engine") not in quals(
        note
    )  # the edge walked is not repeated
    assert ("comment", "the first published computer program") in quals(note)


async def test_the_text_an_agent_reads_shows_a_blank_nodes_properties(g):
    text = render_edges(await g.get_edges(["g:ex.Difference_Engine"], "g:schema.weight"))
    assert text == (
        "g:ex.Difference_Engine Difference Engine:\n"
        '  schema.weight weight [1]: "(structured value)" {unit text: "tonnes"; value: "5" '
        "(decimal)}"
    )


async def test_a_walk_meets_a_blank_node_as_its_page_shows_it(g):
    """A bulk read cannot name a blank node for the next query either: its value is the text of
    the page's edge, properties included, so two structured values stay two answers."""
    texts = {}
    for source, relation in (
        ("g:ex.Difference_Engine", "g:schema.weight"),
        ("g:ex.Notes_on_the_Analytical_Engine", "g:ex.contains"),
    ):
        (edge,) = (await g.get_edges([source], relation)).edges
        read = await g.adjacent_ids([source], relation)
        assert read.values == [(source, edge.value_text())] and not read.pairs
        texts[source] = edge.value_text()
    assert texts == {
        "g:ex.Difference_Engine": "(structured value) {unit text: tonnes; value: 5}",
        "g:ex.Notes_on_the_Analytical_Engine": "Note G",
    }


WIDE = {
    "big": 70,
    "wide": 45,
    "mid": 25,
    "small": 3,
    "bare": 0,
}  # blank node label → its property count


@pytest.fixture(scope="module")
def wide_url(tmp_path_factory):
    """A graph whose blank nodes have from 0 to 70 properties, to page through under the per-node
    cap."""
    from oxigraph_fixture import (
        start_oxigraph,
    )  # the plugin pytest loads (importing it at the top warns)

    tmp = tmp_path_factory.mktemp("wide-bnodes")
    nodes = [
        f'[ rdfs:label "{name}" {"".join(f"; ex:p{i:02d} {i}" for i in range(n))} ]'
        for name, n in WIDE.items()
    ]
    ttl = tmp / "wide.ttl"
    ttl.write_text(
        f"@prefix ex: <{EX}> .\n@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        f"ex:Source ex:has {', '.join(nodes)} .\n"
    )
    proc, url = start_oxigraph(ttl, tmp / "store")
    with proc:
        yield url
        proc.terminate()
        proc.wait(timeout=5)


async def test_blank_node_properties_are_capped_per_node_and_paging_still_covers_every_edge_once(
    wide_url,
):
    g = generic(wide_url)
    whole = await g.get_edges(["g:ex.Source"], "g:ex.has")
    got = {e.value.value: len(e.qualifiers) for e in whole.edges}
    assert got == {name: min(n, BNODE_PROPERTIES) for name, n in WIDE.items()}
    assert whole.warnings == [
        f"some structured values (blank nodes) have more than {BNODE_PROPERTIES} properties: the "
        f"first {BNODE_PROPERTIES} (by property and value) are shown as qualifiers"
    ]
    big = next(e for e in whole.edges if e.value.value == "big")
    assert [q.value.value for q in big.qualifiers] == [str(i) for i in range(BNODE_PROPERTIES)]
    # pages of 2 fetch at most 3 × BNODE_PROPERTIES property rows: a page ends early rather than
    # lose any
    seen, offset = [], 0
    while True:
        page = await g.get_edges(["g:ex.Source"], "g:ex.has", limit=2, offset=offset)
        assert 1 <= len(page.edges) <= 2
        seen += [(e.value.value, tuple(e.qualifiers)) for e in page.edges]
        if not page.truncated:
            break
        offset = page.next_offset
    assert seen == [(e.value.value, tuple(e.qualifiers)) for e in whole.edges]


async def test_label_predicates_are_configurable(generic_sparql_url):
    only_names = generic(generic_sparql_url, label_predicates=["schema:name"], label_search="exact")
    assert (await only_names.search_entities("Lord Byron"))[0].entity.id == "g:ex.Lord_Byron"
    assert await only_names.search_entities("Ada Lovelace") == []
    page = await only_names.get_edges(["g:ex.Ada_Lovelace"], "g:schema.parent")
    assert (
        page.entities["g:ex.Ada_Lovelace"].label == "Ada Lovelace"
    )  # no schema:name: from the IRI "Ada_Lovelace"
    assert page.entities["g:ex.Lord_Byron"].label == "Lord Byron"


async def test_info_samples_predicates_by_frequency(g):
    info = await g.info()
    assert info.backend == "sparql" and info.relation_sample[0].label == "type"
    assert "label" not in {r.label for r in info.relation_sample}


async def test_unknown_entities_and_relations_are_not_found(g):
    with pytest.raises(NotFound, match="g:ex.Nobody"):
        await g.get_relations(["g:ex.Nobody"])
    with pytest.raises(NotFound, match="get_relations"):
        await g.get_edges(["g:ex.Ada_Lovelace"], "g:ex.noSuchRelation")
    with pytest.raises(NotFound, match="unknown prefix"):
        await g.get_relations(["g:zz.Alice"])


# -- options ---------------------------------------------------------------------------------------
def test_options_are_validated_with_clear_messages():
    with pytest.raises(
        InvalidInput, match=r"unknown option 'timout'; did you mean timeout\? \(valid options: "
    ):
        open_sparql_kg("g", "sparql", "http://127.0.0.1:1/q", timout=3)
    with pytest.raises(InvalidInput, match="retries"):
        open_sparql_kg("g", "sparql", "http://127.0.0.1:1/q", retries=-1)
    with pytest.raises(InvalidInput, match="only apply to generic"):
        open_sparql_kg("wd", "wikidata", None, prefixes={"ex": EX})
    with pytest.raises(InvalidInput, match="only applies to wikidata"):
        open_sparql_kg("g", "sparql", "http://127.0.0.1:1/q", search_api="http://127.0.0.1:1/api")
    with pytest.raises(InvalidInput, match="language tag"):
        open_sparql_kg("g", "sparql", "http://127.0.0.1:1/q", languages=["en", "x y"])
    with pytest.raises(InvalidInput, match="http"):
        open_sparql_kg("g", "sparql", "ftp://example.org/sparql")
    with pytest.raises(InvalidInput, match="http"):
        open_sparql_kg("g", "sparql", None)
    with pytest.raises(InvalidInput, match="label_predicates"):
        open_sparql_kg("g", "sparql", "http://127.0.0.1:1/q", label_predicates=["nope:name"])
