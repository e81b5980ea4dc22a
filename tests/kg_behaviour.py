"""What every KnowledgeGraph backend must do, written once and run over every backend.

The graph is ``tests/fixtures/local_movies.ttl`` (three films, six people, literals, a blank node).
Tests find entities by label, never by ID, because each backend has its own ID scheme.

Backends: the memory backend, the pyoxigraph store (in memory, on disk, bulk-loaded with its FTS
index) and the generic SPARQL backend (``sparql:URL``) talking to ``oxigraph serve`` on loopback
over the same file. Where a remote endpoint differs as docs/sparql.md documents — no typo-tolerant
search without a text index, no triple count in ``info()``, literals and blank nodes are values
rather than IDs you can walk from (a blank node's own properties come as the edge's qualifiers), IDs
are ``prefix.localname`` / ``~base64`` — the test states what it does instead (see ``over_sparql``);
none is skipped.

To run the suite over a new backend, add a factory to ``BACKENDS``: ``(tmp_path) -> KnowledgeGraph``
named ``mv`` over that file; for a backend behind a server, add to ``SERVED`` the name of a session
fixture serving the file (``tests/oxigraph_fixture.py``) and a factory ``(url) -> KnowledgeGraph`` —
that server starts only when one of its tests runs. ``tests/test_oxigraph_store.py`` imports this
module, which is how pytest collects it.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from tot_mcp.kg_adapters.base import KnowledgeGraph, Limits
from tot_mcp.kg_adapters.cache import ResultCache
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.routing import LinkedKG
from tot_mcp.kg_adapters.errors import InvalidInput, NotFound, UnknownKG
from tot_mcp.kg_adapters.files import open_file_kg
from tot_mcp.kg_adapters.models import Direction
from tot_mcp.kg_adapters.sparql import EndpointRegistry, open_sparql_kg

pytest_plugins = ["oxigraph_fixture"]  # movies_sparql_url

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MOVIES_TTL = FIXTURES / "local_movies.ttl"
XSD_GYEAR = "http://www.w3.org/2001/XMLSchema#gYear"
MOVIES = "http://example.org/movies/"
SMALL_LIMITS = Limits(max_ids=5, max_edges=10)

BACKENDS: dict[str, Callable[[Path], KnowledgeGraph]] = {
    "memory": lambda tmp: open_file_kg("mv", MOVIES_TTL, SMALL_LIMITS, backend="memory"),
    "oxigraph-in-memory": lambda tmp: open_file_kg("mv", MOVIES_TTL, SMALL_LIMITS, store="memory"),
    "oxigraph-on-disk": lambda tmp: open_file_kg(
        "mv", MOVIES_TTL, SMALL_LIMITS, store=str(tmp / "store")
    ),
    "oxigraph-bulk-loaded": lambda tmp: _bulk_loaded(tmp),
}
# Backends behind a server: the (session) fixture that serves local_movies.ttl, and a factory given
# its URL (its own EndpointRegistry, so no other test's breaker or rate limit on a shared registry
# can reach it).
SERVED: dict[str, tuple[str, Callable[[str], KnowledgeGraph]]] = {
    "sparql-generic": (
        "movies_sparql_url",
        lambda url: open_sparql_kg(
            "mv", "sparql", url, SMALL_LIMITS, registry=EndpointRegistry(), prefixes={"ex": MOVIES}
        ),
    ),
}


def _bulk_loaded(tmp: Path) -> KnowledgeGraph:
    """The same graph through ``tot-mcp load`` (N-Triples in 7-line chunks), searched with its
    on-disk FTS index."""
    from tot_mcp.kg_adapters.bulk_load import BulkLoader
    from tot_mcp.kg_adapters.oxigraph_store import open_store_kg

    BulkLoader(tmp / "bulk", chunk_lines=7, progress=False).load([FIXTURES / "local_movies.nt"])
    kg = open_store_kg("mv", tmp / "bulk", SMALL_LIMITS)
    assert type(kg.label_search).__name__ == "FtsLabelIndex"
    return kg


@pytest.fixture(params=sorted([*BACKENDS, *SERVED]))
async def make_kg(request, tmp_path) -> AsyncIterator[Graph]:
    """The backend under test behind its Graph, closed afterwards (the SPARQL one holds an HTTP
    client on the test's loop)."""
    if request.param in SERVED:  # only these start a server
        fixture, factory = SERVED[request.param]
        kg = Graph(factory(request.getfixturevalue(fixture)))
    else:
        kg = Graph(BACKENDS[request.param](tmp_path))
    yield kg
    await kg.aclose()


async def entity_id(kg: Graph, label: str) -> str:
    hits = await kg.search_entities(label)
    exact = [h for h in hits if h.entity.label == label]
    assert exact, f"{label!r} not found: {[h.entity.label for h in hits]}"
    return exact[0].entity.id


def over_sparql(kg: Graph) -> bool:
    """A remote SPARQL endpoint: where it differs as docs/sparql.md says, the test states its
    behaviour instead."""
    return kg.backend == "sparql"


def absent_ids(kg: Graph) -> tuple[str, str, str]:
    """Two entity IDs and a relation ID well-formed in this backend's ID scheme that name nothing in
    the graph."""
    if over_sparql(kg):  # '<prefix>.<localname>' or '~' + base64 of the IRI
        iri = base64.urlsafe_b64encode(f"{MOVIES}Nobody".encode()).decode().rstrip("=")
        return "mv:ex.Nobody", f"mv:~{iri}", "mv:ex.noSuchRelation"
    return "mv:E999999", f"mv:{MOVIES}Nobody", "mv:noSuchRelation"


def relation_summary(rels) -> set[tuple[str, str, int | None]]:
    return {(r.label, r.direction.value, r.count) for r in rels.relations}


# -- finding entities ------------------------------------------------------------------------------
async def test_search_finds_a_label_exactly_with_its_description(make_kg):
    hits = await make_kg.search_entities("Keanu Reeves")
    assert hits[0].entity.label == "Keanu Reeves"
    assert hits[0].match == "exact" and hits[0].score == 1.0
    assert hits[0].entity.description == "Canadian actor"
    assert hits[0].entity.kg == "mv" and hits[0].entity.id.startswith("mv:")


async def test_search_tolerates_a_typo_and_case(make_kg):
    if over_sparql(
        make_kg
    ):  # no fuzzy matching without a text index: other capitalisations, then substrings
        hits = await make_kg.search_entities("keanu reeves")
        assert hits[0].entity.label == "Keanu Reeves" and (hits[0].match, hits[0].score) == (
            "casefold",
            0.95,
        )
        hits = await make_kg.search_entities("reeves")
        assert (
            hits[0].entity.label == "Keanu Reeves"
            and hits[0].match == "contains"
            and hits[0].score < 0.95
        )
        assert await make_kg.search_entities("keanu reevs") == []
        return
    hits = await make_kg.search_entities("keanu reevs")
    assert hits[0].entity.label == "Keanu Reeves"
    assert hits[0].match in ("fuzzy", "bm25") and hits[0].score < 0.95


async def test_find_by_label_is_the_name_exactly_else_up_to_case_never_a_look_alike(make_kg):
    """What label links are made of: a near miss or a shared word links nothing."""
    assert [e.label for e in await make_kg.find_by_label("Keanu Reeves")] == ["Keanu Reeves"]
    assert [e.label for e in await make_kg.find_by_label("KEANU  reeves")] == ["Keanu Reeves"]
    assert await make_kg.find_by_label("Keanu Reevs") == []
    assert await make_kg.find_by_label("Keanu") == []
    assert await make_kg.find_by_label("Nobody At All") == []


async def test_initialize_links_a_bracketed_mention_first(make_kg):
    hits = await make_kg.initialize("what films did [Keanu Reeves] act in")
    assert hits[0].entity.label == "Keanu Reeves" and hits[0].mention == "Keanu Reeves"


async def test_initialize_links_a_name_inside_a_plain_question(make_kg):
    hits = await make_kg.initialize("who directed the matrix")
    assert hits[0].entity.label == "The Matrix"


async def test_entities_with_only_a_label_are_searchable(make_kg):
    hits = await make_kg.search_entities("An Unreleased Film")
    assert hits[0].entity.label == "An Unreleased Film"


async def test_labels_prefer_english_then_untagged(make_kg):
    matrix = await entity_id(make_kg, "The Matrix")  # not its German label "Matrix"
    described = await make_kg.describe_entity(matrix)
    assert described.entity.label == "The Matrix"
    assert described.entity.description == "1999 science-fiction film"
    assert "Matrix 1" in described.aliases
    assert described.iri == "http://example.org/movies/TheMatrix"


# -- relations -------------------------------------------------------------------------------------
async def test_relations_go_both_ways_with_counts_and_never_offer_label_triples(make_kg):
    matrix = await entity_id(make_kg, "The Matrix")
    rels = await make_kg.get_relations([matrix])
    assert relation_summary(rels) == {
        ("directed by", "forward", 2),
        ("starring", "forward", 2),
        ("release year", "forward", 1),
        ("genre", "forward", 1),
        ("award", "forward", 1),
        ("type", "forward", 1),
    }
    keanu = await entity_id(make_kg, "Keanu Reeves")
    assert relation_summary(await make_kg.get_relations([keanu])) == {("starring", "backward", 3)}
    film = await entity_id(make_kg, "film")
    assert relation_summary(await make_kg.get_relations([film])) == {("type", "backward", 3)}


async def test_relation_counts_add_up_over_several_entities(make_kg):
    ids = [await entity_id(make_kg, t) for t in ("The Matrix", "John Wick", "Speed")]
    counts = {
        (r.label, r.direction.value): r.count for r in (await make_kg.get_relations(ids)).relations
    }
    assert counts[("starring", "forward")] == 5
    assert counts[("directed by", "forward")] == 3
    assert counts[("release year", "forward")] == 3


async def test_relation_counts_read_any_number_of_entities_as_get_relations_adds_them_up(make_kg):
    """The reasoner reads whole frontiers' relations; max_ids (5 here) bounds a tool call, not this
    read."""
    labels = (
        "The Matrix",
        "John Wick",
        "Speed",
        "Keanu Reeves",
        "Sandra Bullock",
        "Carrie-Anne Moss",
        "Lana Wachowski",
    )
    ids = [await entity_id(make_kg, t) for t in labels]
    assert len(ids) > make_kg.limits.max_ids
    parts = [await make_kg.get_relations(ids[:4]), await make_kg.get_relations(ids[4:])]
    expected: dict[tuple[str, str], int] = {}
    for rl in parts:
        for r in rl.relations:
            expected[(r.id, r.direction.value)] = (
                expected.get((r.id, r.direction.value), 0) + r.count
            )
    for kg in (make_kg, Graph(make_kg.store, ResultCache())):
        got = {
            (r.id, r.direction.value): r.count for r in (await kg.relation_counts(ids)).relations
        }
        assert got == expected
        assert (
            got[(next(r.id for r in parts[0].relations if r.label == "starring"), "forward")] == 5
        )


async def test_relations_by_entity_is_one_get_relations_per_entity(make_kg):
    """The bulk read the offline reasoner's chain statistics use: each entity's answer exactly as
    asked alone (relations, directions, counts, labels, order), duplicates once, and IDs
    get_relations refuses left out."""
    labels = ("The Matrix", "John Wick", "Speed", "Keanu Reeves", "film")
    ids = [await entity_id(make_kg, t) for t in labels]
    nobody, _, _ = absent_ids(make_kg)
    got = await make_kg.relations_by_entity([*ids, ids[0], nobody])
    assert set(got) == set(ids)
    for eid in ids:
        alone = await make_kg.get_relations([eid])
        assert [(r.id, r.label, r.direction, r.count) for r in got[eid].relations] == [
            (r.id, r.label, r.direction, r.count) for r in alone.relations
        ]
        assert got[eid].truncated == alone.truncated
    assert await make_kg.relations_by_entity([]) == {}


async def test_info_reports_size_and_relation_vocabulary(make_kg):
    info = await make_kg.info()
    # an endpoint's size is not counted: COUNT(*) over a large remote store can hit its time limit
    assert info.name == "mv" and info.triples == (None if over_sparql(make_kg) else 18)
    assert {r.label for r in info.relation_sample} >= {"starring", "directed by", "release year"}


async def test_a_relation_offers_a_sample_of_its_subjects(make_kg):
    """What `--check` tries a link rule on: entities that have the relation, within the limit
    asked."""
    info = await make_kg.info()
    directed = next(r for r in info.relation_sample if r.label == "directed by")
    got = await make_kg.subjects_of(directed.id, limit=2)
    assert 1 <= len(got) <= 2
    for eid in got:
        rels = (await make_kg.get_relations([eid])).relations
        assert any(r.id == directed.id and r.direction is Direction.forward for r in rels)


# -- edges -----------------------------------------------------------------------------------------
async def test_edges_backward_reach_every_film_with_labels(make_kg):
    keanu = await entity_id(make_kg, "Keanu Reeves")
    rel = (await make_kg.get_relations([keanu])).relations[0]
    page = await make_kg.get_edges([keanu], rel.id, Direction.backward)
    assert not page.truncated and page.next_offset is None
    assert {page.entities[e.target].label for e in page.edges} == {
        "The Matrix",
        "John Wick",
        "Speed",
    }
    assert all(e.source == keanu and e.direction is Direction.backward for e in page.edges)
    assert page.entities[keanu].label == "Keanu Reeves"


async def test_literals_are_values_with_datatypes_and_can_be_walked_back_from(make_kg):
    matrix = await entity_id(make_kg, "The Matrix")
    year = next(
        r for r in (await make_kg.get_relations([matrix])).relations if r.label == "release year"
    )
    page = await make_kg.get_edges([matrix], year.id)
    (edge,) = page.edges
    assert (
        edge.value is not None and edge.value.value == "1999" and edge.value.datatype == XSD_GYEAR
    )
    if over_sparql(make_kg):  # literals are values only: a SPARQL ID names an IRI, never a literal
        assert edge.target is None and list(page.entities) == [matrix]
        return
    assert edge.target is not None and page.entities[edge.target].label == "1999"
    back = await make_kg.get_edges([edge.target], year.id, Direction.backward)
    assert [back.entities[e.target].label for e in back.edges] == ["The Matrix"]


async def test_a_value_finds_its_subjects_alone_and_in_bulk_alike(make_kg):
    """An identifier link asks find_by_values for a whole frontier: the same answer as one value at
    a time."""
    matrix = await entity_id(make_kg, "The Matrix")
    genre = next(r for r in (await make_kg.get_relations([matrix])).relations if r.label == "genre")
    assert await make_kg.find_by_value(genre.id, "science fiction") == [matrix]
    bulk = await make_kg.find_by_values(genre.id, ["science fiction", "science fiction", "western"])
    assert bulk == {"science fiction": [matrix], "western": []}


async def test_a_blank_node_is_an_entity_you_can_walk_through(make_kg):
    matrix = await entity_id(make_kg, "The Matrix")
    award = next(r for r in (await make_kg.get_relations([matrix])).relations if r.label == "award")
    (edge,) = (await make_kg.get_edges([matrix], award.id)).edges
    if over_sparql(
        make_kg
    ):  # a result's blank-node label means nothing in the next query: not walked, but
        # its own properties come with the edge, as qualifiers (the node has no label: a placeholder
        # value)
        assert (
            edge.target is None
            and edge.value is not None
            and edge.value.value == "(structured value)"
        )
        assert {
            (q.relation.label, q.value.value if q.value else None) for q in edge.qualifiers
        } == {
            ("award name", "Academy Award for Best Film Editing"),
            ("award year", "2000"),
        }
        return
    rels = await make_kg.get_relations([edge.target])
    assert {(r.label, r.direction.value) for r in rels.relations} == {
        ("award name", "forward"),
        ("award year", "forward"),
        ("award", "backward"),
    }


async def test_paging_covers_every_edge_once(make_kg):
    ids = [await entity_id(make_kg, t) for t in ("The Matrix", "John Wick", "Speed")]
    starring = next(
        r for r in (await make_kg.get_relations(ids)).relations if r.label == "starring"
    )
    everything = await make_kg.get_edges(ids, starring.id)
    assert len(everything.edges) == 5 and not everything.truncated
    seen, offset, pages = [], 0, 0
    while True:
        page = await make_kg.get_edges(ids, starring.id, limit=2, offset=offset)
        seen += [(e.source, e.target) for e in page.edges]
        pages += 1
        if not page.truncated:
            assert page.next_offset is None
            break
        assert page.next_offset == offset + len(page.edges) and len(page.edges) == 2
        offset = page.next_offset
    assert pages == 3
    assert seen == [
        (e.source, e.target) for e in everything.edges
    ]  # same order, no gap, no duplicate
    assert (await make_kg.get_edges(ids, starring.id, offset=99)).edges == []


async def test_limit_is_capped_by_the_configured_maximum(make_kg):
    ids = [await entity_id(make_kg, t) for t in ("The Matrix", "John Wick", "Speed")]
    starring = next(
        r for r in (await make_kg.get_relations(ids)).relations if r.label == "starring"
    )
    page = await make_kg.get_edges(ids, starring.id, limit=1000)
    assert len(page.edges) == 5  # max_edges is 10: the cap does not cut a smaller result


async def test_a_bulk_read_gives_the_pages_edges_over_any_number_of_ids_up_to_its_limit(make_kg):
    films = [await entity_id(make_kg, t) for t in ("The Matrix", "John Wick", "Speed")]
    people = [
        await entity_id(make_kg, n) for n in ("Keanu Reeves", "Sandra Bullock", "Chad Stahelski")
    ]
    starring = next(
        r for r in (await make_kg.get_relations(films)).relations if r.label == "starring"
    )
    ids = (
        films + people
    )  # more than max_ids (5): the tools' get_edges would refuse them in one call
    for kg in (make_kg, Graph(make_kg.store, ResultCache())):
        bulk = await kg.adjacent(ids, starring.id, limit=1000)  # more than max_edges (10)
        paged = await make_kg.get_edges(films, starring.id)
        assert sorted((e.source, e.target) for e in bulk.edges) == sorted(
            (e.source, e.target) for e in paged.edges
        )
        assert not bulk.truncated and all(bulk.entities[e.target].label for e in bulk.edges)
        cut = await kg.adjacent(ids, starring.id, limit=2)
        assert len(cut.edges) == 2 and cut.truncated
        back = await kg.adjacent([people[0]], starring.id, Direction.backward)
        assert {back.entities[e.target].label for e in back.edges} == {
            "The Matrix",
            "John Wick",
            "Speed",
        }


async def test_a_bulk_read_says_truncated_exactly_when_it_left_edges_out(make_kg):
    """A strategy takes a truncated bulk read for "more than this" (the offline reasoner does not
    walk on from a frontier that was cut), so the flag must be exact at every limit: set when an
    edge was left out, never when the read holds them all — also when the limit is reached at the
    end of a batch of sources and later sources have no such edge."""
    films = [await entity_id(make_kg, t) for t in ("The Matrix", "John Wick", "Speed")]
    people = [
        await entity_id(make_kg, n) for n in ("Keanu Reeves", "Sandra Bullock", "Chad Stahelski")
    ]
    starring = next(
        r for r in (await make_kg.get_relations(films)).relations if r.label == "starring"
    )
    ids = (
        films + people
    )  # more than max_ids (5): the second batch (Chad Stahelski) has no such edge
    for kg in (make_kg, Graph(make_kg.store, ResultCache()), LinkedKG({"mv": make_kg})):
        total = len((await kg.adjacent(ids, starring.id, limit=1000)).edges)
        assert total == 5
        for limit in range(1, total + 3):
            page = await kg.adjacent(ids, starring.id, limit=limit)
            assert (len(page.edges), page.truncated) == (min(limit, total), limit < total), (
                type(kg),
                limit,
            )


async def test_the_unlabelled_bulk_read_is_the_bulk_read_as_ids(make_kg):
    """adjacent_ids is what a walk reads: adjacent's edges, an entity target as its ID and a literal
    one the KG gives no ID as its text, with the same truncation at every limit, through every
    wrapper."""
    films = [await entity_id(make_kg, t) for t in ("The Matrix", "John Wick", "Speed")]
    rels = (await make_kg.get_relations(films)).relations
    starring = next(r for r in rels if r.label == "starring")
    year = next(r for r in rels if r.label == "release year" and r.direction is Direction.forward)
    people = [
        await entity_id(make_kg, n) for n in ("Keanu Reeves", "Sandra Bullock", "Chad Stahelski")
    ]
    for kg in (make_kg, Graph(make_kg.store, ResultCache()), LinkedKG({"mv": make_kg})):
        for ids, rel, direction in (
            (films + people, starring.id, Direction.forward),
            ([people[0]], starring.id, Direction.backward),
            (films, year.id, Direction.forward),
        ):
            full = await kg.adjacent(ids, rel, direction, limit=1000)
            lean = await kg.adjacent_ids(ids, rel, direction, limit=1000)
            assert sorted(lean.pairs) == sorted(
                (e.source, e.target) for e in full.edges if e.target is not None
            )
            assert sorted(lean.values) == sorted(
                (e.source, e.value.value) for e in full.edges if e.target is None
            )
            assert not lean.truncated
            total = len(full.edges)
            for limit in range(0, total + 2):
                cut = await kg.adjacent_ids(ids, rel, direction, limit=limit)
                assert (len(cut.pairs) + len(cut.values), cut.truncated) == (
                    min(limit, total),
                    limit < total,
                )
        years = await kg.adjacent_ids(films, year.id)
        if over_sparql(make_kg):  # a literal has no ID over SPARQL: its text comes instead
            assert (
                sorted(v for _, v in years.values) == ["1994", "1999", "2014"] and not years.pairs
            )
        else:
            assert not years.values and sorted(
                (await kg.labels_of([t for _, t in years.pairs])).values()
            ) == ["1994", "1999", "2014"]


async def test_a_read_along_several_hops_is_each_hops_read_with_its_own_limit(make_kg):
    """A walk expands a frontier along several relations at once: ``adjacent_ids`` given hops
    (relation, direction) — ``adjacent_along`` of every wrapper — answers each hop as its own read
    does, each cut at its own limit and marked cut exactly when it left an edge out (a hop with many
    edges never takes another's share)."""
    films = [await entity_id(make_kg, t) for t in ("The Matrix", "John Wick", "Speed")]
    people = [
        await entity_id(make_kg, n) for n in ("Keanu Reeves", "Sandra Bullock", "Chad Stahelski")
    ]
    rels = {(r.label, r.direction): r.id for r in (await make_kg.get_relations(films)).relations}
    fwd, back = Direction.forward, Direction.backward
    starring, year = rels[("starring", fwd)], rels[("release year", fwd)]
    hops = [(starring, fwd), (starring, back), (year, fwd)]
    ids = films + people
    if over_sparql(make_kg):
        make_kg.store.batch_size = 2  # a query a batch of sources: the limits hold across batches
    alone = {h: await make_kg.store.adjacent_ids(ids, *h, limit=1000) for h in hops}
    totals = {h: len(r.pairs) + len(r.values) for h, r in alone.items()}
    assert sorted(totals.values()) == [3, 4, 5]
    for limit in range(0, 7):
        wrappers = (make_kg, Graph(make_kg.store, ResultCache()), LinkedKG({"mv": make_kg}))
        for kg in wrappers:
            got = await kg.adjacent_along(ids, [*hops, hops[0]], limit=limit)
            assert list(got) == hops
            for h, read in got.items():
                assert (len(read.pairs) + len(read.values), read.truncated) == (
                    min(limit, totals[h]),
                    limit < totals[h],
                ), (type(kg), h, limit)
                assert set(read.pairs) <= set(alone[h].pairs)
                assert set(read.values) <= set(alone[h].values)
        direct = await make_kg.store.adjacent_ids(ids, hops, limit=limit)
        assert direct == await wrappers[0].adjacent_along(ids, hops, limit=limit)
    whole = await make_kg.adjacent_along(ids, hops, limit=1000)
    assert {h: (sorted(r.pairs), sorted(r.values)) for h, r in whole.items()} == {
        h: (sorted(r.pairs), sorted(r.values)) for h, r in alone.items()
    }
    for bad in ([(starring,)], [(starring, "sideways")], starring.encode()):
        with pytest.raises(InvalidInput):
            await make_kg.store.adjacent_ids(ids, bad)


async def test_labels_of_names_many_entities_as_label_of_names_each(make_kg):
    names = ("The Matrix", "Keanu Reeves", "Lana Wachowski")
    ids = [await entity_id(make_kg, n) for n in names]
    nobody, _, _ = absent_ids(make_kg)
    for kg in (make_kg, Graph(make_kg.store, ResultCache()), LinkedKG({"mv": make_kg})):
        got = await kg.labels_of([*ids, ids[0], nobody, "other:E1"])
        if (
            nobody in got
            # a bulk read checks no existence (SPARQL, the store): a well-formed ID gets its local
            # name
        ):
            assert got.pop(nobody) in ("Nobody", "E999999") and make_kg.backend != "memory"
        assert got == dict(zip(ids, names))  # an ID the KG does not know is left out, not an error


async def test_get_edges_reports_the_relations_label_in_the_direction_asked(make_kg):
    matrix = await entity_id(make_kg, "The Matrix")
    directed = next(
        r for r in (await make_kg.get_relations([matrix])).relations if r.label == "directed by"
    )
    page = await make_kg.get_edges([matrix], directed.id)
    assert (page.relation.id, page.relation.label, page.relation.direction) == (
        directed.id,
        "directed by",
        Direction.forward,
    )
    director = page.edges[0].target
    back = await make_kg.get_edges([director], directed.id, Direction.backward)
    assert (back.relation.id, back.relation.label, back.relation.direction) == (
        directed.id,
        "directed by",
        Direction.backward,
    )
    assert back.relation.inverse_label == "inverse of directed by"


async def test_caching_and_linking_wrappers_pass_the_relation_label_through(make_kg):
    cached = Graph(make_kg.store, ResultCache())
    both = LinkedKG({"mv": cached})
    matrix = await entity_id(make_kg, "The Matrix")
    starring = next(
        r for r in (await make_kg.get_relations([matrix])).relations if r.label == "starring"
    )
    for kg in (cached, cached, both):  # the second call is a cache hit
        page = await kg.get_edges([matrix], starring.id)
        assert (page.relation.id, page.relation.label) == (starring.id, "starring")
    assert cached.cache.stats().hits >= 1


async def test_a_labelled_page_is_the_page_without_descriptions_through_every_wrapper(make_kg):
    """What the get_edges tool shows a model: the same edges and labels, no description
    (describe_entity's job), so a backend that makes descriptions while reading edges need not make
    them for this page."""
    keanu = await entity_id(make_kg, "Keanu Reeves")
    rel = (await make_kg.get_relations([keanu])).relations[0]
    cached = Graph(make_kg.store, ResultCache())
    for kg in (make_kg, cached, LinkedKG({"mv": cached})):
        full = await kg.get_edges([keanu], rel.id, Direction.backward)
        labelled = await kg.get_labelled_edges([keanu], rel.id, Direction.backward)
        assert labelled.edges == full.edges and labelled.truncated == full.truncated
        assert {k: e.label for k, e in labelled.entities.items()} == {
            k: e.label for k, e in full.entities.items()
        }
        assert all(e.description is None for e in labelled.entities.values())
    if not over_sparql(
        make_kg
    ):  # the films' own descriptions (rdfs:comment) are still the full page's
        assert any(
            e.description
            for e in (
                await make_kg.get_edges([keanu], rel.id, Direction.backward)
            ).entities.values()
        )


# -- bad input -------------------------------------------------------------------------------------
async def test_bad_ids_and_arguments_raise_the_right_errors(make_kg):
    keanu = await entity_id(make_kg, "Keanu Reeves")
    rel = (await make_kg.get_relations([keanu])).relations[0]
    with pytest.raises(InvalidInput, match="malformed ID"):
        await make_kg.get_relations(["no colon here"])
    with pytest.raises(UnknownKG, match="belongs to KG 'other'"):
        await make_kg.get_relations(["other:E1"])
    nobody, nobody_too, no_relation = absent_ids(make_kg)
    if over_sparql(
        make_kg
    ):  # another backend's ID spelling is malformed here, and the message says why
        with pytest.raises(InvalidInput, match="expected '<prefix>.<localname>'"):
            await make_kg.get_relations(["mv:E999999"])
    with pytest.raises(NotFound):
        await make_kg.get_relations([nobody])
    with pytest.raises(NotFound):
        await make_kg.get_relations([nobody_too])
    with pytest.raises(NotFound, match="get_relations"):
        await make_kg.get_edges([keanu], no_relation)
    with pytest.raises(UnknownKG):
        await make_kg.get_edges([keanu], "wd:P57")
    with pytest.raises(InvalidInput, match="no entity IDs"):
        await make_kg.get_relations([])
    with pytest.raises(InvalidInput, match="at most 5"):
        await make_kg.get_relations([keanu] * 6)
    with pytest.raises(InvalidInput, match="offset"):
        await make_kg.get_edges([keanu], rel.id, rel.direction, offset=-1)
    with pytest.raises(InvalidInput, match="limit"):
        await make_kg.get_edges([keanu], rel.id, rel.direction, limit=0)
    with pytest.raises(InvalidInput, match="empty"):
        await make_kg.search_entities("   ")
    with pytest.raises(InvalidInput, match="empty"):
        await make_kg.initialize("")
    with pytest.raises(InvalidInput, match="at most"):
        await make_kg.search_entities("x" * 5000)


async def test_no_match_is_an_empty_list_not_an_error(make_kg):
    assert await make_kg.search_entities("zzzqqq xxyyzz") == []
    assert await make_kg.search_entities("?!") == []
