"""The pyoxigraph store backend: it answers like the memory backend (the shared suite in
kg_behaviour.py runs here over every backend), its IDs encode RDF terms reversibly and stay stable
across reloads, and it opens existing stores read-only."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import require_benchmarks
from kg_behaviour import *  # noqa: F403 - the shared backend suite, collected here
from kg_behaviour import FIXTURES, entity_id

from tot_mcp.kg_adapters.errors import InvalidInput, NotFound
from tot_mcp.kg_adapters.files import open_file_kg
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.models import Direction
from tot_mcp.kg_adapters.oxigraph_store import OxigraphKG, load_into_store, open_store_kg
from tot_mcp.kg_adapters.store_names import TermCodec, name_iri

TRIPLES = (
    "Heat|directed_by|Michael Mann\nHeat|starred_actors|Al "
    "Pacino\nHeat|release_year|1995\nCollateral|directed_by|Michael Mann\nAC/DC: "
    "Live|has_tags|rock & roll\n"
)


@pytest.fixture
def triples_file(tmp_path) -> Path:
    path = tmp_path / "films.txt"
    path.write_text(TRIPLES, encoding="utf-8")
    return path


def test_triple_file_names_become_readable_ids_in_a_documented_namespace(triples_file, tmp_path):
    load_into_store(triples_file, tmp_path / "st")
    kg = Graph(open_store_kg("f", tmp_path / "st"))
    hits = asyncio.run(kg.search_entities("Michael Mann"))
    assert hits[0].entity.id == "f:Michael%20Mann"
    assert name_iri("Michael Mann") == "urn:tot:e:Michael%20Mann"
    rels = asyncio.run(kg.get_relations(["f:Michael%20Mann"]))
    assert [(r.id, r.label, r.direction, r.count) for r in rels.relations] == [
        ("f:directed_by", "directed by", Direction.backward, 2)
    ]
    page = asyncio.run(kg.get_edges(["f:Michael%20Mann"], "f:directed_by", Direction.backward))
    assert {page.entities[e.target].label for e in page.edges} == {"Heat", "Collateral"}
    # a name with ':' and '/' still round-trips through its ID
    odd = asyncio.run(kg.search_entities("AC/DC: Live"))[0].entity
    assert odd.label == "AC/DC: Live"
    assert asyncio.run(kg.describe_entity(odd.id)).entity.label == "AC/DC: Live"


def test_ids_survive_closing_and_reopening_the_store(triples_file, tmp_path):
    kg1 = Graph(open_file_kg("f", triples_file, store=str(tmp_path / "st")))
    heat = asyncio.run(entity_id(kg1, "Heat"))
    edges1 = asyncio.run(kg1.get_edges([heat], "f:starred_actors"))
    del kg1
    kg2 = Graph(open_store_kg("f", tmp_path / "st"))
    assert isinstance(kg2.store, OxigraphKG)
    assert asyncio.run(entity_id(kg2, "Heat")) == heat
    assert asyncio.run(kg2.get_edges([heat], "f:starred_actors")) == edges1


def test_reopening_a_file_reuses_its_store_and_refuses_a_store_of_other_data(
    triples_file, tmp_path, monkeypatch
):
    store = tmp_path / "st"
    open_file_kg("f", triples_file, store=str(store))

    def no_reload(*a, **k):
        raise AssertionError("the store was loaded again")

    monkeypatch.setattr("tot_mcp.kg_adapters.bulk_load.load_into_store", no_reload)
    again = open_file_kg("f", triples_file, store=str(store))
    assert asyncio.run(again.search_entities("Heat"))[0].entity.label == "Heat"
    with pytest.raises(InvalidInput, match="holds"):
        open_file_kg("g", FIXTURES / "local_movies.ttl", store=str(store))


async def test_a_key_is_the_name_iri_or_value_behind_an_id_and_finds_it_again(
    triples_file, tmp_path
):
    """What identity links are made of: a triple file's name, an RDF file's IRI, a literal's lexical
    form."""
    store = open_file_kg("f", triples_file, store="memory")
    ids = [
        m.entity.id
        for name in ("Michael Mann", "1995")
        for m in await store.search_entities(name)
        if m.entity.label == name
    ]
    keys = await store.labels([*ids, "f:Nobody%20Here", "other:x"], key=True)
    assert keys == dict(zip(ids, ["Michael Mann", "1995"]))  # what names nothing is left out
    assert await store.find(["Michael Mann", "1995", "Nobody Here"]) == {
        "Michael Mann": [ids[0]],
        "1995": [ids[1]],
        "Nobody Here": [],
    }
    movies = open_file_kg("mv", FIXTURES / "local_movies.ttl", store="memory")
    (keanu,) = (await movies.find(["http://example.org/movies/KeanuReeves"])).values()
    assert await movies.labels(keanu, key=True) == {
        keanu[0]: "http://example.org/movies/KeanuReeves"
    }
    assert await movies.labels(keanu) == {keanu[0]: "Keanu Reeves"}


def test_a_file_that_does_not_load_leaves_no_half_store_behind(tmp_path, monkeypatch):
    """A bad line past the first chunk of a triple file: the store is left empty, so that the fixed
    file can be loaded into it (a store holding anything else is refused)."""
    from tot_mcp.kg_adapters import bulk_load

    monkeypatch.setattr(bulk_load, "DEFAULT_CHUNK_LINES", 2)
    bad = tmp_path / "bad.txt"
    bad.write_text("a|r|b\n" * 3 + "no separators\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"bad.txt:4: expected"):
        load_into_store(bad, tmp_path / "st")
    assert len(ox.Store.read_only(str(tmp_path / "st"))) == 0


@pytest.mark.parametrize(
    "term",
    [
        ox.NamedNode("http://example.org/x"),
        ox.NamedNode("urn:tot:e:Tom%20Hanks"),
        ox.NamedNode("urn:tot:e:a:b"),  # the rest contains ':' → must stay a full IRI
        ox.BlankNode("b0abc"),
        ox.Literal("1999"),
        ox.Literal("Paris, France", language="en-gb"),
        ox.Literal("1999", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#gYear")),
        ox.Literal("x^^y@z ~", datatype=ox.NamedNode("http://example.org/dt#t")),
        ox.Literal('line\nbreak %20 "quoted"'),
    ],
)
def test_the_id_encoding_round_trips_every_kind_of_term(term):
    codec = TermCodec("urn:tot:e:", "urn:tot:r:")
    local = codec.encode(term)
    assert local is not None and not any(c.isspace() for c in local)
    assert codec.decode(local) == term


def test_malformed_and_missing_ids_are_clear_errors(tmp_path):
    kg = Graph(open_file_kg("mv", FIXTURES / "local_movies.ttl", store="memory"))
    with pytest.raises(InvalidInput, match="malformed"):
        asyncio.run(kg.get_relations(["mv:http://bad iri"]))
    with pytest.raises(NotFound):
        asyncio.run(kg.get_relations(["mv:~never%20said"]))
    with pytest.raises(InvalidInput, match="no oxigraph store"):
        open_store_kg("x", tmp_path / "missing")


def test_the_store_matches_the_memory_backend_on_pathquestion(tmp_path):
    kb = require_benchmarks("pathquestion", "kb", "2H-kb.txt")
    mem = Graph(open_file_kg("pq", kb, backend="memory"))
    st = Graph(open_file_kg("pq", kb, store=str(tmp_path / "st")))

    async def walk(kg, label):
        eid = await entity_id(kg, label)
        out = {}
        for rel in (await kg.get_relations([eid])).relations:
            page = await kg.get_edges([eid], rel.id, rel.direction, limit=200)
            out[(rel.label, rel.direction, rel.count)] = sorted(
                page.entities[e.target].label for e in page.edges
            )
        return out

    for label in ("ludwig_ii_of_bavaria", "lothair_of_france", "gerberga_of_saxony", "male"):
        assert asyncio.run(walk(st, label)) == asyncio.run(walk(mem, label)), label
    assert asyncio.run(st.info()).triples == asyncio.run(mem.info()).triples
