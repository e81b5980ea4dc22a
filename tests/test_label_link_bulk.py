"""A whole frontier linked by label at once (``Linker.prefetch`` with a label rule,
``find_by_labels``) links exactly as one entity at a time does — an exact name, a name up to case, a
name the other KG lacks, a hub name cut at ``max_label_matches`` with its note — whichever backend
holds the other side: a triples file (memory), a store searched in memory, a store loaded by
``tot-mcp load`` with its on-disk label index, a SPARQL endpoint."""

from __future__ import annotations

import pytest
from oxigraph_fixture import _serve

from tot_mcp.kg_adapters.bulk_load import BulkLoader, load_into_store
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.sameness import Linker, LinkRule
from tot_mcp.kg_adapters.oxigraph_store import open_store_kg
from tot_mcp.kg_adapters.spec import make_spec, open_kg

FILMS = (
    "Alpha|directed_by|Eli Fox\nbeta|directed_by|Eli Fox\nDelta|directed_by|Ann "
    "Lee\nHub|directed_by|Ann Lee\n"
)
CAST_TTL = """@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix c: <http://example.org/cast/> .
c:starred rdfs:label "starred" .
c:a rdfs:label "Alpha" ; c:starred c:p1 .
c:b rdfs:label "Beta" ; c:starred c:p1 .
c:h1 rdfs:label "Hub" ; c:starred c:p2 .
c:h2 rdfs:label "Hub" ; c:starred c:p2 .
c:h3 rdfs:label "Hub" ; c:starred c:p2 .
c:p1 rdfs:label "Pat Doe" .
c:p2 rdfs:label "Sam Roe" .
"""
BACKENDS = ("triples", "store", "bulk-loaded store", "sparql")


@pytest.fixture(scope="module")
def cast_kgs(tmp_path_factory):
    root = tmp_path_factory.mktemp("label-bulk")
    ttl = root / "cast.ttl"
    ttl.write_text(CAST_TTL, encoding="utf-8")
    nt = root / "cast.txt"
    nt.write_text(
        "Alpha|starred|Pat Doe\nBeta|starred|Pat Doe\n" + "Hub|starred|Sam Roe\n", encoding="utf-8"
    )
    load_into_store(ttl, root / "store")
    BulkLoader(root / "bulk", progress=False).load([ttl])
    (root / "srv").mkdir()
    server = _serve(ttl, root / "srv")
    kgs = {
        "store": open_kg(make_spec("cast", f"store:{root / 'store'}")),
        "bulk-loaded store": Graph(open_store_kg("cast", root / "bulk", None)),
        "sparql": open_kg(make_spec("cast", f"sparql:{next(server)}")),
    }
    assert type(kgs["bulk-loaded store"].store.label_search).__name__ == "FtsLabelIndex"
    # a triples file names each film once: the hub label is a store-side case only
    kgs["triples"] = open_kg(make_spec("cast", str(nt)))
    yield kgs
    server.close()


@pytest.fixture(scope="module")
def films(tmp_path_factory):
    path = tmp_path_factory.mktemp("label-bulk-films") / "films.txt"
    path.write_text(FILMS, encoding="utf-8")
    return open_kg(make_spec("films", str(path)))


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_frontier_linked_by_label_in_bulk_links_as_one_by_one(films, cast_kgs, backend):
    cast = cast_kgs[backend]
    kgs = {"films": films, "cast": cast}
    rule = [LinkRule(from_kg="films", to_kg="cast", kind="label")]
    ids = [e.id for t in ("Alpha", "beta", "Delta", "Hub") for e in await films.find_by_label(t)]
    assert len(ids) == 4
    one_by_one = Linker(kgs, rule, max_label_matches=2)
    expected = [await one_by_one.equivalents(i, "cast") for i in ids]
    assert [len(x.ids) for x in expected][:3] == [1, 1, 0]  # exact, up to case, absent

    bulk = Linker(kgs, rule, max_label_matches=2)
    asked = []
    real = cast.find_by_label

    async def counted(*args, **kwargs):
        asked.append(args)
        return await real(*args, **kwargs)

    cast.find_by_label = counted
    try:
        await bulk.prefetch(ids, "cast")
        got = [await bulk.equivalents(i, "cast") for i in ids]
    finally:
        del cast.find_by_label
    assert got == expected  # the same IDs, and the hub's note where it was cut
    assert bulk.stats().hit_rate == 1.0  # every entity answered from the bulk lookup
    if backend in (
        "store",
        "bulk-loaded store",
    ):  # the index said which names to look up: "Delta" never was
        assert ("Delta",) not in [a[:1] for a in asked] and len(asked) <= 3
        assert expected[3].ids and "names more than 2 entities" in (expected[3].note or "")
