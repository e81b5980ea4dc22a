"""A label link joins only entities of the same kind. A film KG and a catalog share names: the film
"Titanic" is the catalog's film "Titanic", but the film "2012" is not the catalog's year "2012" — a
node the catalog only points at, where the film is only pointed from. The KGs say which is which by
their edges, on every backend, one entity at a time or a whole frontier at once; a KG that points
its edges the other way (person → film) still links its films."""

from __future__ import annotations

import pytest
from oxigraph_fixture import serve_turtle

from tot_mcp.kg_adapters.oxigraph_store import load_into_store
from tot_mcp.kg_adapters.routing import LinkedKG
from tot_mcp.kg_adapters.sameness import Linker, rules_for
from tot_mcp.kg_adapters.spec import make_spec, open_kg

FILMS = "2012|directed_by|Roland Emmerich\nTitanic|directed_by|James Cameron\n"
CATALOG = """@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix c: <http://example.org/catalog/> .
c:year rdfs:label "release year" .
c:titanic rdfs:label "Titanic" ; c:year c:y1997 .
c:argo rdfs:label "Argo" ; c:year c:y2012 .
c:y1997 rdfs:label "1997" .
c:y2012 rdfs:label "2012" .
"""
# the same films from the people's side: each edge points the other way
PEOPLE = "James Cameron|directed|Titanic\nRoland Emmerich|directed|2012\n"
BACKENDS = ["rdf file", "store", "sparql"]


@pytest.fixture(scope="module")
def catalogs(tmp_path_factory):
    root = tmp_path_factory.mktemp("link-kinds")
    ttl = root / "catalog.ttl"
    ttl.write_text(CATALOG, encoding="utf-8")
    load_into_store(ttl, root / "store")
    server = serve_turtle(root, CATALOG)
    url = next(server)
    yield {
        "rdf file": lambda: open_kg(make_spec("catalog", str(ttl))),
        "store": lambda: open_kg(make_spec("catalog", f"store:{root / 'store'}")),
        "sparql": lambda: open_kg(make_spec("catalog", f"sparql:{url}")),
    }
    server.close()


@pytest.fixture(scope="module")
def triples(tmp_path_factory):
    root = tmp_path_factory.mktemp("link-kinds-triples")
    for name, text in (("films", FILMS), ("people", PEOPLE)):
        (root / f"{name}.txt").write_text(text, encoding="utf-8")
    return lambda name: open_kg(make_spec(name, str(root / f"{name}.txt")))


def linked(*kgs) -> LinkedKG:
    """The KGs linked as with no rule configured: by label, every pair."""
    named = {kg.name: kg for kg in kgs}
    return LinkedKG(named, Linker(named, rules_for(named, [])))


async def one(kg, label: str) -> str:
    (entity,) = await kg.find_by_label(label)
    return entity.id


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_film_is_linked_to_the_film_of_its_name_not_to_the_year(catalogs, triples, backend):
    films, catalog = triples("films"), catalogs[backend]()
    graph = linked(films, catalog)
    film_2012, titanic = await one(films, "2012"), await one(films, "Titanic")
    assert await graph.same_as(titanic) == [await one(catalog, "Titanic")]
    assert await graph.same_as(film_2012) == []
    assert await graph.same_as(await one(catalog, "2012")) == []  # nor the other way
    assert graph.linker.stats().refused == 2

    # what a walk sees at the film "2012": no catalog relation to cross by, and why
    rels = await graph.get_relations([film_2012])
    assert [r.label for r in rels.relations] == ["directed by"]
    (note,) = rels.warnings
    year = await one(catalog, "2012")
    assert note.startswith(f"label '2012' also names {year} in KG 'catalog', not linked")
    assert "another kind (only a target of edges there, only a source of edges here)" in note
    assert not (await graph.get_relations([titanic])).warnings  # linked: nothing to explain


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_frontier_linked_at_once_keeps_the_kinds_apart_too(catalogs, triples, backend):
    films, catalog = triples("films"), catalogs[backend]()
    graph = linked(films, catalog)
    ids = [await one(films, "2012"), await one(films, "Titanic")]
    got = await graph.same_as_many(ids)
    assert got == {ids[0]: [], ids[1]: [await one(catalog, "Titanic")]}
    assert graph.linker.stats().hit_rate == 1.0  # all from the bulk link, kinds decided there


async def test_a_kg_that_points_its_edges_the_other_way_still_links_by_label(triples):
    """people: person -directed-> film; films: film -directed_by-> person. Each film is only a
    target in one KG and only a source in the other, as a year and a film are; but the two share
    their director's name, so they are one film and are linked."""
    films, people = triples("films"), triples("people")
    graph = linked(films, people)
    for name in ("Titanic", "2012", "James Cameron"):
        assert await graph.same_as(await one(films, name)) == [await one(people, name)]
    assert graph.linker.stats().refused == 0
