"""Every backend pair linked: films in one KG, their release years (literal values) in another,
joined by label, and the tree search answers the years whichever backends hold the two halves — a
triples file (memory), a Turtle file, an on-disk pyoxigraph store, a SPARQL endpoint (a real
``oxigraph serve``). A SPARQL KG cannot address a literal as a node; the linked graph must still
treat its values as one kind of node (this once crashed with KeyError 'literal')."""

from __future__ import annotations

import pytest
from oxigraph_fixture import _serve
from retrieval_fixtures import shared_embedder

from tot_mcp.kg_adapters.routing import LinkedKG
from tot_mcp.kg_adapters.oxigraph_store import load_into_store
from tot_mcp.kg_adapters.spec import make_spec, open_kg
from tot_mcp.strategies.offline import OfflinePolicy
from tot_mcp.strategies.tot.asm import TraversalASM
from tot_mcp.strategies.tot.search import SearchConfig, TreeSearch

FILMS_TXT = "Alpha|directed_by|Eli Fox\nBeta|directed_by|Eli Fox\nGamma|directed_by|Ann Lee\n"
FILMS_TTL = """@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix f: <http://example.org/films/> .
f:directed_by rdfs:label "directed by" .
f:alpha rdfs:label "Alpha" ; f:directed_by f:eli .
f:beta rdfs:label "Beta" ; f:directed_by f:eli .
f:gamma rdfs:label "Gamma" ; f:directed_by f:ann .
f:eli rdfs:label "Eli Fox" .
f:ann rdfs:label "Ann Lee" .
"""
CATALOG_TXT = "Alpha|release_year|1999\nBeta|release_year|2003\nGamma|release_year|2010\n"
CATALOG_TTL = """@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix c: <http://example.org/catalog/> .
c:releaseYear rdfs:label "release year" .
c:t1 rdfs:label "Alpha" ; c:releaseYear "1999" .
c:t2 rdfs:label "Beta" ; c:releaseYear "2003" .
c:t3 rdfs:label "Gamma" ; c:releaseYear "2010" .
"""
BACKENDS = ("triples", "turtle", "store", "sparql")


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    """name → backend → the spec string that opens that half on that backend."""
    root = tmp_path_factory.mktemp("linked-backends")
    out: dict[str, dict[str, str]] = {}
    servers = []
    for name, txt, ttl in (("films", FILMS_TXT, FILMS_TTL), ("catalog", CATALOG_TXT, CATALOG_TTL)):
        (root / f"{name}.txt").write_text(txt, encoding="utf-8")
        (root / f"{name}.ttl").write_text(ttl, encoding="utf-8")
        load_into_store(root / f"{name}.ttl", root / f"{name}-store")
        (root / f"{name}-srv").mkdir()
        server = _serve(root / f"{name}.ttl", root / f"{name}-srv")
        servers.append(server)
        out[name] = {
            "triples": str(root / f"{name}.txt"),
            "turtle": str(root / f"{name}.ttl"),
            "store": f"store:{root / f'{name}-store'}",
            "sparql": f"sparql:{next(server)}",
        }
    yield out
    for server in servers:
        server.close()


@pytest.mark.parametrize("films_backend", BACKENDS)
@pytest.mark.parametrize("catalog_backend", BACKENDS)
async def test_a_walk_crosses_from_any_backend_to_any_other_and_answers_its_values(
    specs, films_backend, catalog_backend
):
    films = open_kg(make_spec("films", specs["films"][films_backend]))
    catalog = open_kg(make_spec("catalog", specs["catalog"][catalog_backend]))
    graph = LinkedKG.of([films, catalog])
    try:
        policy = OfflinePolicy(graph, embedder=shared_embedder())
        result = await TreeSearch(
            TraversalASM(graph), policy, SearchConfig(k=3, max_expansions=12)
        ).run("when were the films directed by [Eli Fox] released")
    finally:
        await graph.aclose()
    assert result.error is None
    assert set(result.answer.labels) == {"1999", "2003"}, result.tree_text()
