"""What keeps linked KGs close to one in-memory KB in speed and answers (issue #21): the offline
reasoner reads a path's last hop only when a returned plan needs what it reaches, and asks a hub's
size with a bounded read; a frontier whose read was cut is too big to walk on from, as one over the
node limit is in memory; topic linking skips an endpoint's label scan for a mention another KG
already named; a link lookup is one query, a label link an index lookup. Each test pins the read it
saves, and that the answers stay those of the full read."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from bench.round_trips import Chain
from delegating_kg import DelegatingKG
from oxigraph_fixture import serve_turtle, start_oxigraph
from retrieval_fixtures import shared_embedder

from tot_mcp.kg_adapters.cache import ResultCache
from tot_mcp.kg_adapters.errors import BackendRefused
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.relation_names import RelationNames, relation_examples
from tot_mcp.kg_adapters.routing import LinkedKG
from tot_mcp.kg_adapters.sameness import Linker, LinkRule
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.models import AdjacentIds, Direction
from tot_mcp.kg_adapters.oxigraph_store import load_into_store, open_store_kg
from tot_mcp.kg_adapters.spec import make_spec, open_kg
from tot_mcp.kg_adapters.triple_index import TripleIndex
from tot_mcp.strategies.offline import OfflineReasoner, OfflineSettings, topics_from_matches
from tot_mcp.strategies.offline.graph import KGReader

# -- the offline reasoner: lazy last hops ----------------------------------------------------------
HUB = 300  # films of one genre


def _hub_kg(name: str = "films") -> Graph:
    """Alpha is one of HUB Drama films; only Alpha has a director."""
    index = TripleIndex()
    triples = [
        ("Alpha", "directed_by", "Dana Reed"),
        ("Alpha", "has_genre", "Drama"),
        ("Alpha", "release_year", "1999"),
    ]
    triples += [(f"Film {i}", "has_genre", "Drama") for i in range(HUB - 1)]
    for h, r, t in triples:
        index.add(index.node(h), index.relation(r), index.node(t))
    index.freeze()
    return Graph(MemoryKG(name, index))


class CountingKG(DelegatingKG):
    """A MemoryKG seen only through the public interface, counting the bulk reads it is asked for:
    (relation local name, direction, limit) of each hop read (several may be one read)."""

    def __init__(self, inner: Graph) -> None:
        super().__init__(inner.store)
        self.reads: list[tuple[str, Direction, int]] = []

    async def adjacent_ids(
        self, entity_ids, relation_id, direction=Direction.forward, limit=2000, **options
    ):
        hops = [(relation_id, direction)] if isinstance(relation_id, str) else relation_id
        self.reads.extend((r.split(":", 1)[1], Direction(d), limit) for r, d in hops)
        return await super().adjacent_ids(entity_ids, relation_id, direction, limit, **options)


def counting(inner: Graph) -> tuple[Graph, CountingKG]:
    """``inner``'s backend behind a :class:`CountingKG`, as callers see it (a Graph), and the
    counting backend."""
    backend = CountingKG(inner)
    return Graph(backend), backend


async def _plans(kg, question: str, settings: OfflineSettings | None = None):
    reasoner = OfflineReasoner(shared_embedder(), settings or OfflineSettings(max_hops=2))
    topics = topics_from_matches(await kg.initialize(question))
    return await reasoner.reason(kg, question, topics)


def _summary(res) -> list[tuple]:
    """What a plan walks and reaches (scores differ between backends by their relation samples, not
    by this)."""
    return [
        (
            tuple((h[0].split(":", 1)[1], h[1]) for h in p.hops),
            tuple(sorted(p.answer_labels)),
            tuple(len(f) for f in p.frontiers),
        )
        for p in res.plans
    ]


async def test_a_hub_at_the_last_hop_is_never_read_in_full_unless_a_returned_plan_ends_there():
    """ "who directed [Alpha]": the beam also tries Alpha → genre → every Drama film (the genre's
    300 films, a "same genre" hop). Scoring it needs only to know that the hop multiplies the
    frontier by more than hub_fanout, which a read of hub_fanout + 1 edges settles; its 300 films
    are never read. The plans are those of the KG read in memory, which reads everything."""
    kg, backend = counting(_hub_kg())
    settings = OfflineSettings(max_hops=2, plans=1)
    res = await _plans(kg, "who directed [Alpha]", settings)
    assert res.best.answer_labels == ["Dana Reed"]
    hub_reads = [
        limit for rel, d, limit in backend.reads if rel == "has_genre" and d is Direction.backward
    ]
    # the hop is settled by hub_fanout + 1 edges; the answer-type prior's sample of what reaches a
    # genre is bounded too (4 × type_sample); nothing reads the genre's films in full
    assert settings.hub_fanout + 1 in hub_reads
    assert all(n <= settings.hub_fanout + 1 or n == 4 * settings.type_sample for n in hub_reads)
    assert max(hub_reads) < HUB
    assert _summary(res) == _summary(await _plans(_hub_kg(), "who directed [Alpha]", settings))


async def test_the_plans_are_those_of_a_full_read_whatever_the_backend():
    """Every returned plan's last hop is read (answers, frontiers), as a KG in memory reads them."""
    for question in (
        "who directed [Alpha]",
        "which films have the same genre as [Alpha]",
        "when were the films of the genre of [Alpha] released",
    ):
        memory = await _plans(_hub_kg(), question)
        generic = await _plans(counting(_hub_kg())[0], question)
        assert sorted(_summary(memory)) == sorted(_summary(generic)), question
        assert all(
            len(p.frontiers[-1]) == len(p.answers) or len(p.answers) == 200 for p in generic.plans
        )


async def test_reaches_more_than_reads_a_little_more_than_asked_and_agrees_with_a_full_read():
    """Hub tests asked together are one read (n + 1 edges an ask); one it leaves open (cut at n
    targets or fewer) is read in full."""
    kg, backend = counting(_hub_kg())
    reader = KGReader(kg)
    drama, alpha = [(await kg.find_by_label(x))[0].id for x in ("Drama", "Alpha")]
    hop, year = ("films:has_genre", Direction.backward), ("films:release_year", Direction.forward)
    assert await reader.reaches_more_than([([drama], hop, 10), ([alpha], year, 0)]) == [True, True]
    assert backend.reads == [
        ("has_genre", Direction.backward, 11),
        ("release_year", Direction.forward, 11),
    ]
    # exactly HUB films: settled by a full read
    assert await reader.reaches_more_than([([drama], hop, HUB)]) == [False]
    assert await reader.reaches_more_than([([drama], hop, HUB - 1)]) == [True]
    memory = KGReader(_hub_kg())
    assert await memory.reaches_more_than([([drama], hop, HUB - 1), ([drama], hop, HUB)]) == [
        True,
        False,
    ]


# -- the offline reasoner: a frontier cut at a read cap is too big to walk on from -----------------
def _cast_hub_kg() -> Graph:
    """Alpha is one of HUB Drama films, each with an actor of its own (so there is a hop to walk on
    to)."""
    index = TripleIndex()
    triples = [
        ("Alpha", "directed_by", "Dana Reed"),
        ("Alpha", "has_genre", "Drama"),
        ("Alpha", "starred_actors", "Ann Alpha"),
    ]
    for i in range(HUB - 1):
        triples += [
            (f"Film {i}", "has_genre", "Drama"),
            (f"Film {i}", "starred_actors", f"Actor {i}"),
        ]
    for h, r, t in triples:
        index.add(index.node(h), index.relation(r), index.node(t))
    index.freeze()
    return Graph(MemoryKG("films", index))


class CappedKG(CountingKG):
    """A backend whose bulk read never returns more than ``cap`` edges (it says ``truncated`` when
    it left some out), as an endpoint with a result-row limit does."""

    def __init__(self, inner: Graph, cap: int) -> None:
        super().__init__(inner)
        self.cap = cap

    async def adjacent_ids(
        self, entity_ids, relation_id, direction=Direction.forward, limit=2000, **options
    ):
        return await super().adjacent_ids(
            entity_ids, relation_id, direction, min(limit, self.cap), **options
        )


def _walked_from_the_genre(res) -> list[tuple]:
    """Plans that walk on from "every film of the genre" (genre, then back to its films, then
    further)."""
    return [
        p.hops
        for p in res.plans
        if len(p.hops) == 3
        and [(h[0].split(":", 1)[1], h[1]) for h in p.hops[:2]]
        == [("has_genre", Direction.forward), ("has_genre", Direction.backward)]
    ]


async def test_a_frontier_whose_read_was_cut_is_not_walked_on_from_as_over_max_frontier_in_memory():
    """The genre's HUB films are more than max_frontier. A KG in memory reads them all and does not
    walk on from them; a KG whose read is cut at fewer edges than max_frontier holds only part of
    them, under the limit, and must take the same decision rather than walk on from an arbitrary
    part of the genre."""
    settings = OfflineSettings(max_hops=3, max_frontier=HUB // 3)
    question = "who acted in the films of the genre of [Alpha]"
    memory = await _plans(_cast_hub_kg(), question, settings)
    assert memory.plans and not _walked_from_the_genre(memory)
    capped = Graph(CappedKG(_cast_hub_kg(), cap=HUB // 6))
    res = await _plans(capped, question, settings)
    assert res.plans and not _walked_from_the_genre(res)
    assert res.best.hops == memory.best.hops


async def test_a_hop_is_read_once_up_to_its_cap_and_a_read_cut_there_counts_as_more_than_n():
    """A hop is one read of at most ``max_edges`` edges: not cut, it holds every neighbour and tells
    more than n from not more exactly; cut (a KG whose reads stop below what the hop reaches), it
    holds part of them and counts as more than n (too big to walk on from), whatever n."""
    kg, backend = counting(_hub_kg())
    drama = (await kg.find_by_label("Drama"))[0].id
    hop = ("films:has_genre", Direction.backward)
    reader = KGReader(kg, max_edges=1000)
    ((nb, over),) = await reader.follow([([drama], hop)], within=HUB)
    assert not over and len(nb[drama]) == HUB  # all of them
    assert len(backend.reads) == 1
    assert (await reader.follow([([drama], hop)], within=HUB - 1))[0][1]
    assert (await reader.follow([([drama], hop)], within=10))[0][1]

    capped = KGReader(Graph(CappedKG(_hub_kg(), cap=50)), max_edges=1000)
    ((nb, over),) = await capped.follow([([drama], hop)], within=HUB)
    assert over and len(nb[drama]) == 50
    assert (await capped.reaches_more_than([([drama], hop, HUB)]))[0]
    alpha = (await kg.find_by_label("Alpha"))[0].id
    assert await capped.follow([([alpha], ("films:has_genre", Direction.forward))], within=5) == [
        ({alpha: [drama]}, False)
    ]  # a read that was not cut is exact


# -- linking over a SPARQL endpoint ----------------------------------------------------------------
FILMS = (
    "Alpha|directed_by|Eli Fox\nAlpha|imdb_id|tt0001\nBeta|directed_by|Eli "
    "Fox\nBeta|imdb_id|tt0002\n"
)
CATALOG = """@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix c: <http://example.org/catalog/> .
c:imdb rdfs:label "IMDb ID" .
c:genre rdfs:label "genre" .
c:t1 rdfs:label "Alpha (1999)" ; c:imdb "tt0001" , "tt9001" ; c:genre c:thriller .
c:t2 rdfs:label "Beta (2003)" ; c:imdb "tt0002" ; c:genre c:horror .
c:thriller rdfs:label "Thriller" .
c:horror rdfs:label "Horror" .
"""


#: the catalog's films are the films KG's by their IMDb ID
BY_IMDB = LinkRule(
    from_kg="catalog", to_kg="films", kind="identifier", relation="imdb", to_relation="imdb_id"
)


def _by_imdb(films, catalog) -> LinkedKG:
    kgs = {"films": films, "catalog": catalog}
    return LinkedKG(kgs, Linker(kgs, [BY_IMDB]))


@pytest.fixture(scope="module")
def catalog_url(tmp_path_factory):
    yield from serve_turtle(tmp_path_factory.mktemp("speed"), CATALOG)


@pytest.fixture
def kgs(catalog_url, tmp_path):
    films = tmp_path / "films.txt"
    films.write_text(FILMS, encoding="utf-8")
    return open_kg(make_spec("films", str(films))), open_kg(
        make_spec("catalog", f"sparql:{catalog_url}")
    )


def _spy_queries(kg) -> list[str]:
    """The SPARQL text of every request (SELECT or ASK) the KG's backend sends from now on."""
    sent: list[str] = []
    real = kg.store.sparql.request

    async def spy(method, params, *args, **kwargs):
        sent.append(params.get("query", ""))
        return await real(method, params, *args, **kwargs)

    kg.store.sparql.request = spy
    return sent


async def test_a_mention_a_local_kg_names_exactly_costs_the_endpoint_no_label_scan(kgs):
    films, catalog = kgs
    alone = _spy_queries(catalog)
    hits = await catalog.initialize(
        "what genre is [Alpha]"
    )  # on its own the endpoint scans labels for "Alpha"
    assert [h.entity.label for h in hits] == ["Alpha (1999)"] and hits[0].match == "contains"
    assert any("CONTAINS(" in q for q in alone)
    linked = _by_imdb(films, catalog)
    alone.clear()
    (alpha,) = await linked.initialize("what genre is [Alpha]")
    assert alpha.entity.label == "Alpha" and alpha.match == "exact"
    assert [await catalog.label_of(i) for i in alpha.same_as] == [
        "Alpha (1999)"
    ]  # still linked, by its ID
    assert not any("CONTAINS(" in q for q in alone)
    # a mention no local KG names is still looked up by substring at the endpoint
    alone.clear()
    assert [m.entity.label for m in await linked.initialize("what genre is [Alpha (1]")] == [
        "Alpha (1999)"
    ]
    assert any("CONTAINS(" in q for q in alone)


async def test_an_identifier_link_of_one_entity_is_one_query(kgs):
    """The entity's identifier values are one unsorted read (not a sorted tool page plus, when it
    has none, an ASK whether the relation exists at all): a genre node, which has no IMDb ID, learns
    it has no twin in one query."""
    films, catalog = kgs
    linker = Linker({"films": films, "catalog": catalog}, [BY_IMDB])
    thriller = (await catalog.search_entities("Thriller"))[0].entity.id
    t1 = (await catalog.search_entities("Alpha (1999)"))[0].entity.id
    await linker.relation_in(
        catalog, "imdb"
    )  # the rule's relation is resolved once per KG, not per entity
    sent = _spy_queries(catalog)
    assert (await linker.equivalents(thriller, "films")).ids == ()
    assert len(sent) == 1
    sent.clear()
    assert [await films.label_of(i) for i in (await linker.equivalents(t1, "films")).ids] == [
        "Alpha"
    ]
    assert len(sent) == 1


async def test_a_hop_into_a_remote_kg_reads_the_identifiers_its_targets_are_linked_by(
    kgs, catalog_url
):
    """Once a link rule has read the catalog's IMDb IDs, a walk's hop into the catalog's films reads
    theirs in the same query: linking the films it reached costs no request, and finds what a
    fresh lookup finds."""
    films, catalog = kgs
    catalog = Graph(catalog.store, ResultCache())  # as a server opens a remote KG
    linked = _by_imdb(films, catalog)
    genres = [(await catalog.search_entities(g))[0].entity.id for g in ("Thriller", "Horror")]
    assert await linked.same_as_many(genres) == {g: [] for g in genres}  # genres have no IMDb ID
    genre = (await catalog.search_relations("genre", 1))[0].id
    sent = _spy_queries(catalog)
    (read,) = (await linked.adjacent_along(genres, [(genre, Direction.backward)])).values()
    assert len(read.pairs) == 2 and len(sent) == 1
    sent.clear()
    reached = [t for _, t in read.pairs]
    links = await linked.same_as_many(reached)
    assert not sent
    fresh = open_kg(make_spec("catalog", f"sparql:{catalog_url}"))
    expected = await _by_imdb(films, fresh).same_as_many(reached)
    assert links == expected and [len(v) for v in links.values()] == [1, 1]
    await fresh.aclose()


async def test_the_twin_an_identifier_finds_comes_with_its_relations_and_identifiers(
    kgs, catalog_url
):
    """The lookup of a film's IMDb ID in the catalog reads the catalog film's relations and its own
    IMDb IDs in the same query: its relations, which a walk or a linked get_relations asks next,
    and its IDs, which its link back to the films reads, cost no request, and are what the
    endpoint gives when asked."""
    films, catalog = kgs
    alpha = (await films.find_by_label("Alpha"))[0].id
    (twin,) = await _by_imdb(films, catalog).same_as(alpha)
    sent = _spy_queries(catalog)
    got = await catalog.relations_by_entity([twin])
    imdb = next(r.id for r in got[twin].relations if r.label == "IMDb ID")
    ids = await catalog.adjacent_ids([twin], imdb, limit=20)
    assert not sent
    fresh = open_kg(make_spec("catalog", f"sparql:{catalog_url}"))
    assert got == await fresh.relations_by_entity([twin])
    assert {r.label for r in got[twin].relations} == {"IMDb ID", "genre"}
    # both of its IDs, not only the one it was found by
    assert ids == await fresh.adjacent_ids([twin], imdb, limit=20) and len(ids.values) == 2
    await fresh.aclose()


async def test_a_listings_examples_are_two_queries_a_remote_kg(kgs):
    """``initialize`` lists a small vocabulary by name with an edge of each relation as its
    example: on the endpoint that is one read of an edge of every relation and one of their
    ends' names, not two or three queries a relation."""
    films, catalog = kgs
    linked = _by_imdb(films, catalog)
    names = await RelationNames.of(linked)
    sent = _spy_queries(catalog)
    examples = await relation_examples(linked, names)
    assert len(sent) == 2
    by_label = {label: rid for rid, label in names.by_kg["catalog"].items()}
    assert examples[by_label["genre"]] in {"Alpha (1999) → Thriller", "Beta (2003) → Horror"}
    assert examples[by_label["IMDb ID"]] in {
        "Alpha (1999) → tt0001",
        "Alpha (1999) → tt9001",
        "Beta (2003) → tt0002",
    }
    assert examples["films:directed_by"] in {"Alpha → Eli Fox", "Beta → Eli Fox"}


async def test_the_entities_a_walk_adds_are_linked_in_bulk_as_one_by_one(kgs):
    """same_as_many (the ASM links every entity a step adds): a page of catalog films was one
    identifier query per film; now one bulk read of their identifiers, one lookup by value, and the
    same links same_as finds alone."""
    films, catalog = kgs
    ids = [
        (await catalog.search_entities(t))[0].entity.id
        for t in ("Alpha (1999)", "Beta (2003)", "Thriller")
    ]
    alone = _by_imdb(films, catalog)
    expected = {i: await alone.same_as(i) for i in ids}
    # the films have a twin, the genre has none
    assert [len(v) for v in expected.values()] == [1, 1, 0]
    linked = _by_imdb(films, catalog)
    await linked.linker.relation_in(catalog, "imdb")  # resolved once per KG, not per entity
    sent = _spy_queries(catalog)
    assert await linked.same_as_many(ids) == expected
    assert len(sent) <= 2, sent  # the identifiers of all three in one read (none per entity)
    sent.clear()
    assert await linked.same_as_many(ids) == expected
    assert not sent  # a frontier's links: from the link cache, nothing asked again


# -- label links against an on-disk store ----------------------------------------------------------
def test_a_store_finds_a_label_in_its_index_and_names_an_entity_without_describing_it(tmp_path):
    src = tmp_path / "cast.txt"
    src.write_text(
        "Heat|starred_actors|Al Pacino\nheat wave|starred_actors|Ann Lee\n", encoding="utf-8"
    )
    load_into_store(src, tmp_path / "st")
    kg = Graph(open_store_kg("cast", tmp_path / "st"))

    async def run():
        (heat,) = await kg.find_by_label("Heat")
        assert heat.label == "Heat"
        assert [e.label for e in await kg.find_by_label("HEAT")] == [
            "Heat"
        ]  # case aside: the label search's answer
        assert await kg.find_by_label("Heat Wave") == await kg.find_by_label("heat wave")
        assert await kg.find_by_label("Nothing Like It") == []

        async def no_relations(ids):
            raise AssertionError("label_of counted relations")

        described = (await kg.describe_entity(heat.id)).entity.label
        kg.get_relations = no_relations
        assert await kg.label_of(heat.id) == described == "Heat"

    asyncio.run(run())


# -- the tree search's pages of a hub over SPARQL --------------------------------------------------
def _hub_catalog() -> str:
    """A genre with 40 films whose IRIs sort differently from the order they were written in, one
    with two labels (a row per label); films with literal years; a film whose award is a blank
    node."""
    lines = [
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .",
        "@prefix skos: <http://www.w3.org/2004/02/skos/core#> .",
        "@prefix c: <http://example.org/catalog/> .",
        'c:drama rdfs:label "Drama" .',
        'c:comedy rdfs:label "Comedy" .',
    ]
    for i in range(40):
        n = (i * 17) % 40
        lines.append(f'c:film{n} rdfs:label "Film {n}" ; c:genre c:drama ; c:year {1990 + n % 7} .')
    lines.append('c:film3 skos:prefLabel "Film Three" .')
    lines.append('c:film5 c:genre c:comedy ; c:award [ rdfs:label "Best Picture" ; c:year 1999 ] .')
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def hub_catalog_url(tmp_path_factory):
    yield from serve_turtle(tmp_path_factory.mktemp("hub"), _hub_catalog())


def _page(p) -> tuple:
    return (
        [
            (
                e.source,
                e.target,
                e.value and e.value.value,
                [(q.relation, q.value and q.value.value) for q in e.qualifiers],
            )
            for e in p.edges
        ],
        sorted((k, v.label) for k, v in p.entities.items()),
        p.truncated,
        p.next_offset,
    )


async def test_a_hub_page_is_the_endpoints_sorted_page_sorted_here_from_one_unsorted_read(
    hub_catalog_url,
):
    """``get_edges`` pages in the endpoint's ``ORDER BY ?src ?tgt`` order. For IRI targets that
    order is the IRIs' string order, so the page is cut from one unsorted read sorted here (oxigraph
    sorts a genre's 4,000 films in 0.3–0.5 s, and reads them unsorted in ~60 ms): one read per call,
    never a sort. Every page equals the endpoint's own."""
    ours = open_kg(make_spec("catalog", f"sparql:{hub_catalog_url}"))
    theirs = open_kg(make_spec("catalog", f"sparql:{hub_catalog_url}"))
    theirs.store.client_sort_max = 0  # every read too big to sort here: the endpoint sorts
    drama = (await ours.find_by_label("Drama"))[0].id
    comedy = (await ours.find_by_label("Comedy"))[0].id
    genre = next(r.id for r in (await ours.get_relations([drama])).relations if r.label == "genre")
    sent = _spy_queries(ours)
    first = await ours.get_edges([drama], genre, Direction.backward, limit=7)
    assert _page(first) == _page(
        await theirs.get_edges([drama], genre, Direction.backward, limit=7)
    )
    assert first.truncated and len(first.edges) == 7
    assert not any("ORDER BY" in q for q in sent)
    sent.clear()
    for ids, limit, offset in [
        ([drama], 7, 7),
        ([drama], 30, 14),
        ([drama], 200, 0),
        ([drama, comedy], 5, 38),
        ([comedy, drama], 200, 0),
        ([drama, drama], 50, 60),
    ]:
        mine = await ours.get_edges(ids, genre, Direction.backward, limit=limit, offset=offset)
        assert _page(mine) == _page(
            await theirs.get_edges(ids, genre, Direction.backward, limit=limit, offset=offset)
        ), (ids, limit, offset)
    assert not any("ORDER BY" in q for q in sent)
    assert len(sent) == 6  # one unsorted read per call (a source given twice is read once)


async def test_literal_and_blank_targets_and_reads_over_the_bound_are_left_to_the_endpoints_sort(
    hub_catalog_url,
):
    """Literals order by value, type and engine, blank nodes by nothing one can name: the endpoint
    sorts those (after one unsorted read that found them, once per relation); so it does a source
    with more rows than ``client_sort_max``. The pages are the endpoint's either way."""
    ours = open_kg(make_spec("catalog", f"sparql:{hub_catalog_url}"))
    theirs = open_kg(make_spec("catalog", f"sparql:{hub_catalog_url}"))
    theirs.store.client_sort_max = 0
    film5 = (await ours.find_by_label("Film 5"))[0].id
    films = list(
        dict.fromkeys([film5, *(m.entity.id for m in await ours.search_entities("Film", limit=30))])
    )[:20]
    rels = {r.label: r.id for r in (await ours.get_relations(films)).relations}
    sent = _spy_queries(ours)
    for rel in (rels["year"], rels["award"]):
        for limit, offset in [(5, 0), (5, 5), (200, 0)]:
            assert _page(
                await ours.get_edges(films, rel, Direction.forward, limit=limit, offset=offset)
            ) == _page(
                await theirs.get_edges(films, rel, Direction.forward, limit=limit, offset=offset)
            )
    unsorted = [q for q in sent if "ORDER BY" not in q and "ASK" not in q]
    assert (
        len(unsorted) == 2
    )  # one read per relation found its literals / blank nodes; then the endpoint sorts
    ours.store.client_sort_max = 10
    drama = (await ours.find_by_label("Drama"))[0].id
    sent.clear()
    assert _page(
        await ours.get_edges([drama], rels["genre"], Direction.backward, limit=7)
    ) == _page(await theirs.get_edges([drama], rels["genre"], Direction.backward, limit=7))
    assert any("ORDER BY" in q for q in sent)


def _coded_catalog() -> str:
    """Films with plain-string codes that sort by codepoint, not as a person would ("B" before "a",
    "a10" before "a9", "é" last), one typed ``xsd:string``, two codes for some films; and a
    relation whose targets mix IRIs and plain strings."""
    codes = ["b", "B", "a10", "a9", "\u00e9", "Z", "z", "10", "9", " x"]
    lines = [
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .",
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .",
        "@prefix c: <http://example.org/catalog/> .",
    ]
    for n in range(12):
        lines.append(f'c:film{n} rdfs:label "Film {n}" ; c:code "{codes[n % 10]}" .')
        if n % 3 == 0:
            lines.append(f'c:film{n} c:code "{codes[(n * 7) % 10]}{n}" .')
        lines.append(f'c:film{n} c:see c:film{(n + 5) % 12} , "note {11 - n}" .')
    lines.append('c:film4 c:code "q"^^xsd:string .')
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def coded_catalog_url(tmp_path_factory):
    yield from serve_turtle(tmp_path_factory.mktemp("coded"), _coded_catalog())


async def test_pages_of_plain_strings_are_sorted_here_as_the_endpoint_sorts_them(coded_catalog_url):
    """A plain string orders by its codepoints after every IRI, as SPARQL's ``ORDER BY`` orders it:
    its pages are cut from one unsorted read, each the endpoint's own page, and a labelled walk's
    hop to such values makes the page after it cost no request (a release year read as a string
    is a question's answer, and the tree search pages it)."""
    ours = open_kg(make_spec("catalog", f"sparql:{coded_catalog_url}"))
    theirs = open_kg(make_spec("catalog", f"sparql:{coded_catalog_url}"))
    theirs.store.client_sort_max = 0  # the endpoint sorts every page
    films = [(await theirs.find_by_label(f"Film {n}"))[0].id for n in range(12)]
    rels = {r.label: r.id for r in (await theirs.get_relations(films)).relations}
    sent = _spy_queries(ours)
    for rel in (rels["code"], rels["see"]):
        for ids, limit, offset in [(films, 5, 0), (films, 5, 5), (films, 7, 14), (films, 200, 0)]:
            assert _page(
                await ours.get_edges(ids, rel, Direction.forward, limit=limit, offset=offset)
            ) == _page(
                await theirs.get_edges(ids, rel, Direction.forward, limit=limit, offset=offset)
            ), (rel, limit, offset)
    assert sent and not any("ORDER BY" in q for q in sent)
    walked = open_kg(make_spec("catalog", f"sparql:{coded_catalog_url}"))
    await walked.labels_of(films)
    await walked.get_relations(films)
    code = (rels["code"], Direction.forward)
    await walked.adjacent_along(films, [code, (rels["see"], Direction.forward)], labelled=True)
    sent = _spy_queries(walked)
    assert _page(await walked.get_edges(films, *code)) == _page(
        await theirs.get_edges(films, *code)
    )
    assert sent == []


@pytest.fixture(scope="module")
def two_graph_url(tmp_path_factory):
    """A film's codes held in two named graphs, served as one default graph (each edge two rows)."""
    root = tmp_path_factory.mktemp("graphs")
    data = root / "codes.trig"
    data.write_text(
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        "@prefix c: <http://example.org/c/> .\n"
        'c:g1 { c:f rdfs:label "F" ; c:code "a" , "b" , "c" , "d" . }\n'
        'c:g2 { c:f c:code "a" , "b" , "c" , "d" . }\n'
    )
    proc, url = start_oxigraph(data, root / "store", ["--union-default-graph"])
    yield url
    proc.terminate()
    proc.wait()


@pytest.mark.parametrize("sorted_here", [True, False])
async def test_pages_over_an_edge_held_twice_leave_nothing_out(two_graph_url, sorted_here):
    """A page's LIMIT counts rows; an edge two graphs hold is two rows, so two rows may be one edge.
    A page that used its rows says more exist, and following the pages reaches every edge (one may
    show twice), sorted here or by the endpoint."""
    kg = open_kg(make_spec("c", f"sparql:{two_graph_url}"))
    if not sorted_here:
        kg.store.client_sort_max = 0
    film = (await kg.find_by_label("F"))[0].id
    code = next(r.id for r in (await kg.get_relations([film])).relations if r.label == "code")
    seen: list[str] = []
    offset: int | None = 0
    for _ in range(10):
        page = await kg.get_edges([film], code, limit=2, offset=offset)
        seen += [e.value.value for e in page.edges]
        assert page.truncated == (page.next_offset is not None)
        if (offset := page.next_offset) is None:
            break
    assert set(seen) == {"a", "b", "c", "d"} and seen == sorted(seen)


# -- the chain statistics' per-node relations over SPARQL ------------------------------------------
async def _every_node(kg) -> list[str]:
    films = [m.entity.id for i in range(40) for m in (await kg.search_entities(f"Film {i}"))[:1]]
    genres = [(await kg.search_entities(g))[0].entity.id for g in ("Drama", "Comedy")]
    return list(dict.fromkeys([*films, *genres]))


@pytest.mark.parametrize("backward_scan", [20000, 5])
async def test_each_nodes_relations_are_one_query_per_batch_and_those_asked_one_by_one(
    hub_catalog_url, backward_scan
):
    """``KGReader.relation_sets`` (the chain statistics' per-node relations) reads N nodes of a
    SPARQL KG in ``ceil(N / batch)`` queries, and each node's set is what
    ``relation_counts([node])`` says. A node whose backward edges ``get_relations`` would sample
    (the genre's 40 films over a scan of 5), and the rest of a batch whose sample it cut, are asked
    alone."""
    catalog = open_kg(make_spec("catalog", f"sparql:{hub_catalog_url}"))
    catalog.store.batch_size, catalog.store.backward_scan = 10, backward_scan
    nodes = await _every_node(catalog)
    assert len(nodes) == 42
    alone = {n: _hops(await catalog.relation_counts([n])) for n in nodes}
    sent = _spy_queries(catalog)
    got = await KGReader(catalog).relation_sets(nodes)
    assert got == alone
    # over a scan of 5 the last batch (the two genres) has its backward sample cut by the drama's
    # 40 films: the comedy is read again
    again = 1 if backward_scan == 5 else 0
    assert len(sent) == -(-len(nodes) // 10) + again


async def test_a_linked_readers_per_node_relations_are_those_get_relations_gives_one_node(kgs):
    """Over linked KGs a node's relations include its twins' (a catalog film has the films KG's
    relations and the reverse); the bulk read agrees node by node with the linked KG's own
    ``get_relations([node])``."""
    films, catalog = kgs
    linked = _by_imdb(films, catalog)
    nodes = []
    for kg in (films, catalog):
        for label in ("Alpha", "Beta", "Alpha (1999)", "Beta (2003)", "Thriller", "Horror"):
            nodes += [m.entity.id for m in (await kg.search_entities(label))[:1]]
    nodes = list(dict.fromkeys(nodes))
    assert len(nodes) >= 6
    alone = {n: _hops(await linked.get_relations([n])) for n in nodes}
    got = await KGReader(linked).relation_sets(nodes)
    assert got == alone
    assert any({h[0].split(":")[0] for h in s} == {"films", "catalog"} for s in got.values())


def _hops(rl) -> frozenset:
    return frozenset((r.id, Direction(r.direction)) for r in rl.relations)


async def test_the_frontiers_of_a_depth_are_one_relations_query_together(hub_catalog_url):
    """A depth's frontiers (a genre, two films, two, thirty) are one query for all of them; each
    frontier's relations are what ``relation_counts`` gives it alone, counts included."""
    catalog = open_kg(make_spec("catalog", f"sparql:{hub_catalog_url}"))
    nodes = await _every_node(catalog)
    frontiers = [nodes[-1:], nodes[:2], nodes[2:4], nodes[:30]]  # a genre, two films, two, thirty
    alone = [
        {
            (r.id, Direction(r.direction)): r.count or 1
            for r in (await catalog.relation_counts(f)).relations
        }
        for f in frontiers
    ]
    sent = _spy_queries(catalog)
    assert await KGReader(catalog).relations(frontiers) == alone
    assert len(sent) == 1, sent


async def test_frontiers_taking_the_same_hop_are_one_read_and_each_gets_its_own_targets():
    """The asks of one depth along one hop are read together and split by source: the answers
    are those of each read alone, from one read."""
    kg = _hub_kg()
    alone, _ = counting(kg)
    hop = ("films:has_genre", Direction.forward)
    films = [(await kg.find_by_label(t))[0].id for t in ("Alpha", "Film 1", "Film 2", "Film 3")]
    asks = [
        (films[:1], hop),
        (films[1:3], hop),
        (films[2:], hop),
        ([(await kg.find_by_label("Drama"))[0].id], ("films:has_genre", Direction.backward)),
    ]
    expected = [(await KGReader(alone).follow([ask], within=2))[0] for ask in asks]
    together, backend = counting(kg)
    assert await KGReader(together).follow(asks, within=2) == expected
    assert [r[:2] for r in backend.reads] == [
        ("has_genre", Direction.forward),
        ("has_genre", Direction.backward),
    ]


async def test_a_depths_hops_are_one_read_and_over_sparql_one_query(hub_catalog_url):
    """The hops a depth keeps from its frontiers (three films' genre and year, a genre's films)
    are one read of the KG, and over SPARQL one query; each ask gets what it would alone."""
    catalog = open_kg(make_spec("catalog", f"sparql:{hub_catalog_url}"))
    films = [(await catalog.find_by_label(f"Film {i}"))[0].id for i in (1, 2, 3)]
    rels = {r.label: r.id for r in (await catalog.get_relations(films)).relations}
    drama = (await catalog.find_by_label("Drama"))[0].id
    asks = [
        (films, (rels["genre"], Direction.forward)),
        (films, (rels["year"], Direction.forward)),
        ([drama], (rels["genre"], Direction.backward)),
    ]
    expected = [(await KGReader(catalog).follow([ask], within=2))[0] for ask in asks]
    sent = _spy_queries(catalog)
    assert await KGReader(catalog).follow(asks, within=2) == expected
    assert len(sent) == 1, sent


# -- a walk across linked KGs: one read per hop ----------------------------------------------------
WALK_FILMS = 120  # more than a tool call's 50 IDs: a paged walk took a query per batch and per page


@pytest.fixture(scope="module")
def walk_catalog_url(tmp_path_factory):
    films = "".join(
        f'c:t{i} rdfs:label "Film {i} (2001)" ; c:imdb "tt{i:04d}" ; c:genre c:noir .\n'
        for i in range(WALK_FILMS)
    )
    turtle = (
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        "@prefix c: <http://example.org/catalog/> .\n"
        'c:imdb rdfs:label "IMDb ID" .\nc:genre rdfs:label "genre" .\nc:noir rdfs:label "Noir" .\n'
        + films
    )
    yield from serve_turtle(tmp_path_factory.mktemp("walk"), turtle)


async def test_a_follow_path_across_linked_kgs_reads_each_hop_in_one_query(
    walk_catalog_url, tmp_path
):
    """A director's films (memory), their genre and that genre's films (the endpoint, over an
    identifier link): the frontier of 120 films is linked in one lookup and each endpoint hop is one
    unsorted read."""
    from tot_mcp.kg_adapters.follow import Hop, follow_path

    path = tmp_path / "films.txt"
    path.write_text(
        "".join(
            f"Film {i}|directed_by|Eli Fox\nFilm {i}|imdb_id|tt{i:04d}\n" for i in range(WALK_FILMS)
        ),
        encoding="utf-8",
    )
    films, catalog = (
        open_kg(make_spec("films", str(path))),
        open_kg(make_spec("catalog", f"sparql:{walk_catalog_url}")),
    )
    linked = _by_imdb(films, catalog)
    genre = (await catalog.search_relations("genre", 1))[0].id
    await linked.linker.relation_in(catalog, "imdb")  # resolved once per KG, not per walk
    (eli,) = [m.entity.id for m in await films.search_entities("Eli Fox", 1)]
    sent = _spy_queries(catalog)
    res = await follow_path(
        linked,
        [eli],
        [
            Hop(relation_id="films:directed_by", direction=Direction.backward),
            Hop(relation_id=genre),
            Hop(relation_id=genre, direction=Direction.backward),
        ],
    )
    assert res.reached == [WALK_FILMS, 1, WALK_FILMS] and not res.warnings
    assert res.total == WALK_FILMS and all(
        t.label.endswith(" (2001)") and t.paths == WALK_FILMS for t in res.targets
    )
    assert len(sent) <= 3, sent  # the links in one lookup, then one read per endpoint hop
    await catalog.aclose()


async def test_a_hop_too_big_with_its_targets_values_is_read_again_without_them(
    walk_catalog_url, monkeypatch
):
    """An endpoint that refuses the hop read with the targets' identifiers (here: the answer over
    the size cap) is asked for the hop alone: the walk gets its edges, the link reads the values
    after, as without them."""
    from tot_mcp.kg_adapters.sparql import endpoint

    def cached() -> Graph:  # as a server opens a remote KG, reading the IMDb IDs of hop targets
        kg = Graph(open_kg(make_spec("catalog", f"sparql:{walk_catalog_url}")).store, ResultCache())
        kg.read_with_targets(imdb)
        return kg

    fresh = open_kg(make_spec("catalog", f"sparql:{walk_catalog_url}"))
    noir = (await fresh.find_by_label("Noir"))[0].id
    hop = ((await fresh.search_relations("genre", 1))[0].id, Direction.backward)
    imdb = (await fresh.search_relations("IMDb ID", 1))[0].id
    counted: list[int] = []
    real = endpoint.json_items
    monkeypatch.setattr(
        endpoint, "json_items", lambda body: counted.append(real(body)) or counted[-1]
    )

    async def items(kg: Graph) -> tuple[AdjacentIds, int]:  # a read, and its answers' JSON items
        counted.clear()
        read = (await kg.adjacent_along([noir], [hop]))[hop]
        return read, sum(counted)

    (alone, few), (_, many) = await items(fresh), await items(cached())
    monkeypatch.setattr(endpoint, "MAX_JSON_ITEMS", (few + many) // 2)  # the hop alone fits
    catalog = cached()
    sent = _spy_queries(catalog)
    read = (await catalog.adjacent_along([noir], [hop]))[hop]
    assert sorted(read.pairs) == sorted(alone.pairs) and len(read.pairs) == WALK_FILMS
    assert not read.then and len(sent) == 2  # refused with the values, answered without
    for kg in (fresh, catalog):
        await kg.aclose()


async def test_a_lookup_too_big_with_its_finds_relations_is_sent_again_without_them(
    walk_catalog_url, monkeypatch
):
    """An endpoint that refuses a lookup by identifier with the relations of what it finds (here:
    over the answer's size cap) is asked for the lookup alone: the links are the same, and the
    relations are read when asked."""
    from tot_mcp.kg_adapters.sparql import endpoint, queries

    catalog = open_kg(make_spec("catalog", f"sparql:{walk_catalog_url}"))
    imdb = (await catalog.search_relations("IMDb ID", 1))[0].id
    values = [f"tt{i:04d}" for i in range(WALK_FILMS)]
    counted: list[int] = []
    real = endpoint.json_items
    monkeypatch.setattr(
        endpoint, "json_items", lambda body: counted.append(real(body)) or counted[-1]
    )
    term, literals = catalog.store._relation(imdb)[1], [f'"{v}"' for v in values]
    await catalog.store._select(queries.subjects_with_values(catalog.store.profile, term, literals))
    few = sum(counted)
    counted.clear()
    expected = await open_kg(make_spec("catalog", f"sparql:{walk_catalog_url}")).find_by_values(
        imdb, values
    )
    monkeypatch.setattr(endpoint, "MAX_JSON_ITEMS", (few + sum(counted)) // 2)  # the lookup fits
    sent = _spy_queries(catalog)
    assert await catalog.find_by_values(imdb, values) == expected
    assert len(sent) == 2 and all(len(ids) == 1 for ids in expected.values())
    sent.clear()
    await catalog.relations_by_entity(expected["tt0007"])
    assert len(sent) == 1  # not read along: asked now
    await catalog.aclose()


async def _noir_by_imdb(catalog_url: str, tmp_path) -> tuple:
    """The films KG (an IMDb ID each) and the catalog opened as a server opens a remote KG (a
    result cache), linked by IMDb ID; the catalog's Noir genre and its genre relation."""
    path = tmp_path / "films.txt"
    path.write_text("".join(f"Film {i}|imdb_id|tt{i:04d}\n" for i in range(WALK_FILMS)))
    films = open_kg(make_spec("films", str(path)))
    catalog = Graph(open_kg(make_spec("catalog", f"sparql:{catalog_url}")).store, ResultCache())
    noir = (await catalog.find_by_label("Noir"))[0].id
    genre = (await catalog.search_relations("genre", 1))[0].id
    return films, catalog, _by_imdb(films, catalog), noir, genre


@pytest.mark.parametrize("cap, requests", [(200, 0), (50, 1)])
async def test_a_hop_carries_the_identifiers_of_its_first_then_targets_targets(
    walk_catalog_url, tmp_path, monkeypatch, cap, requests
):
    """A hop's read carries the identifiers of THEN_TARGETS targets at most (a hub's thousands
    would double its cost): a genre's 120 films under a cap of 200 are linked at no request, over
    a cap of 50 with one read of their identifiers; either way as a fresh lookup links them."""
    from tot_mcp.kg_adapters.sparql import kg as sparql_kg

    monkeypatch.setattr(sparql_kg, "THEN_TARGETS", cap)
    films, catalog, linked, noir, genre = await _noir_by_imdb(walk_catalog_url, tmp_path)
    assert await linked.same_as_many([noir]) == {noir: []}  # the rule's identifiers now ride along
    hub = (await catalog.adjacent_along([noir], [(genre, Direction.backward)]))[
        (genre, Direction.backward)
    ]
    reached = [t for _, t in hub.pairs]
    assert len(reached) == WALK_FILMS and not hub.then  # kept per target, not in the read
    sent = _spy_queries(catalog)
    links = await linked.same_as_many(reached)
    assert len(sent) == requests and not any("?av" in q for q in sent)  # that read carries none
    fresh = open_kg(make_spec("catalog", f"sparql:{walk_catalog_url}"))
    assert links == await _by_imdb(films, fresh).same_as_many(reached) and all(links.values())
    for kg in (fresh, catalog):
        await kg.aclose()


async def test_a_cut_hop_carries_the_identifiers_of_the_targets_it_returns(
    walk_catalog_url, tmp_path
):
    """A hop read to its limit (30 of a genre's 120 films) still carries the identifiers of the
    films it returns: a target's values are read whole, whichever edges the cut kept. Linking
    them costs no request and finds what a fresh lookup finds."""
    films, catalog, linked, noir, genre = await _noir_by_imdb(walk_catalog_url, tmp_path)
    await linked.same_as_many([noir])  # the rule's identifiers now ride along
    back = (genre, Direction.backward)
    cut = (await catalog.adjacent_along([noir], [back], limit=30))[back]
    reached = [t for _, t in cut.pairs]
    assert cut.truncated and len(reached) == 30
    sent = _spy_queries(catalog)
    links = await linked.same_as_many(reached)
    assert not sent
    fresh = open_kg(make_spec("catalog", f"sparql:{walk_catalog_url}"))
    assert links == await _by_imdb(films, fresh).same_as_many(reached) and all(links.values())
    for kg in (fresh, catalog):
        await kg.aclose()


async def test_a_refused_wikidata_lookup_is_sent_once():
    """On Wikidata nothing comes along with a lookup by value (no relations, no values): an
    endpoint that refuses it is not asked the very same query again."""
    seen: list[str] = []

    class Refusing(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the handler's protocol names
            seen.append(self.rfile.read(int(self.headers.get("content-length") or 0)).decode())
            self.send_response(400)
            self.send_header("content-length", "7")
            self.end_headers()
            self.wfile.write(b"refused")

        do_GET = do_POST

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        kg = open_kg(make_spec("wd", f"wikidata:http://127.0.0.1:{srv.server_port}/sparql"))
        with pytest.raises(BackendRefused):
            await kg.find_by_values("wd:P345", ["tt0001"])
        assert len(seen) == 1
    finally:
        srv.shutdown()


async def test_an_id_level_walk_across_linked_kgs_names_the_entity_asked(
    walk_catalog_url, tmp_path
):
    """adjacent_ids over linked KGs reads the relation's own KG from the equivalents there, in one
    query, and gives each pair the entity asked as its source, as adjacent gives it as ``via``."""
    path = tmp_path / "films.txt"
    path.write_text(
        "".join(f"Film {i}|imdb_id|tt{i:04d}\n" for i in range(WALK_FILMS)), encoding="utf-8"
    )
    films, catalog = (
        open_kg(make_spec("films", str(path))),
        open_kg(make_spec("catalog", f"sparql:{walk_catalog_url}")),
    )
    linked = _by_imdb(films, catalog)
    genre = (await catalog.search_relations("genre", 1))[0].id
    await linked.linker.relation_in(catalog, "imdb")
    ids = [m.entity.id for m in await films.search_entities("Film 7", 1)]
    ids += [(await films.find_by_label(f"Film {i}"))[0].id for i in range(50)]
    labelled = await linked.adjacent(ids, genre)
    sent = _spy_queries(catalog)
    read = await linked.adjacent_ids(ids, genre)
    assert (
        sorted(read.pairs) == sorted((e.via, e.target) for e in labelled.edges)
        and len(read.pairs) == 50
    )
    assert {s for s, _ in read.pairs} <= set(ids) and len(sent) == 1  # links known: one read
    await catalog.aclose()


# -- round trips that wait on each other -----------------------------------------------------------
async def test_a_local_exact_match_is_linked_while_the_endpoint_looks_up_the_mention(kgs):
    """The films KG names [Alpha] at once; its link into the catalog is asked while the catalog
    still checks the mention, not after: two requests, one wave."""
    films, catalog = kgs
    linked = _by_imdb(films, catalog)
    await linked.linker.relation_in(catalog, "imdb")  # resolved once a KG, not per question
    chain = Chain(catalog, hold=0.05)
    (alpha,) = await linked.initialize("what genre is [Alpha]")
    assert alpha.entity.label == "Alpha"
    assert [await catalog.label_of(i) for i in alpha.same_as] == ["Alpha (1999)"]
    assert (len(chain.spans), chain.waves()) == (2, 1)


async def test_the_last_hop_and_its_answers_names_go_out_with_the_hub_test(hub_catalog_url):
    """A sibling question ("films of the same genre as [Film 1]") ends on a hop into a hub, whose
    size the score asks, with the chain statistics: the plans likely to rank first have their last
    hop read, and their answers named, while those reads are out rather than after them."""
    catalog = open_kg(make_spec("catalog", f"sparql:{hub_catalog_url}"))
    question = "which films have the same genre as [Film 1]"
    reasoner = OfflineReasoner(shared_embedder(), OfflineSettings(max_hops=2))
    topics = topics_from_matches(await catalog.initialize(question))
    chain = Chain(catalog, hold=0.05)
    res = await reasoner.reason(catalog, question, topics)
    hops, answers, sizes = _summary(res)[0]
    assert hops == (
        (hops[0][0], Direction.forward),
        (hops[0][0], Direction.backward),
    ) and sizes == (1, 40)
    assert len(answers) == 40
    # cold: the relations' samples and the chain statistics are read too; the last hop (its
    # targets' names with it) is two waves of its own when it waits for the scores; the first
    # hop's frontier comes with its relations
    assert (len(chain.spans), chain.waves()) == (23, 15)


@pytest.mark.parametrize("cap, requests", [(100, 0), (1, 1)])
async def test_a_walks_hop_reads_the_relations_of_the_frontier_it_reaches(
    hub_catalog_url, monkeypatch, cap, requests
):
    """The reasoner reads the relations of each frontier a hop reaches next: the hop's read asks
    for those of RELATED_TARGETS targets with it, so they cost no request of their own (over the
    cap: the others one), and are the endpoint's."""
    from tot_mcp.kg_adapters.sparql import kg as sparql_kg

    monkeypatch.setattr(sparql_kg, "RELATED_TARGETS", cap)
    catalog = Graph(open_kg(make_spec("catalog", f"sparql:{hub_catalog_url}")).store, ResultCache())
    fresh = open_kg(make_spec("catalog", f"sparql:{hub_catalog_url}"))
    films = [(await fresh.find_by_label(f"Film {i}"))[0].id for i in (1, 5)]
    genre = {r.label: r.id for r in (await fresh.get_relations(films)).relations}["genre"]
    reader = KGReader(catalog)
    sent = _spy_queries(catalog)
    ((nb, _),) = await reader.follow([(films, (genre, Direction.forward))], frontier=True)
    reached = sorted({t for ts in nb.values() for t in ts})  # drama (40 films) and comedy
    assert len(reached) == 2 and len(sent) == 1
    sent.clear()
    assert await reader.relations([reached]) == await KGReader(fresh).relations([reached])
    assert len(sent) == requests
    for kg in (fresh, catalog):
        await kg.aclose()


async def test_a_structured_value_is_not_carried_along_and_a_failure_of_the_extras_loses_nothing(
    hub_catalog_url,
):
    """What a hop carries along is what the backend would answer alone, or nothing: a target's
    value that is a blank node (Film 5's award) is left to a page, which reads its properties;
    and a read whose extras time out is sent again without them, its edges kept."""
    from tot_mcp.kg_adapters.errors import BackendTimeout

    catalog = open_kg(make_spec("catalog", f"sparql:{hub_catalog_url}"))
    films = [(await catalog.find_by_label(f"Film {i}"))[0].id for i in (1, 5)]
    rels = {r.label: r.id for r in (await catalog.get_relations(films)).relations}
    drama = (await catalog.find_by_label("Drama"))[0].id
    back = (rels["genre"], Direction.backward)
    years = await catalog.store.adjacent_ids([drama], [back], then=[rels["year"]])
    assert len(years[back].then[rels["year"]].values) == 40  # literals: carried, one a film
    awards = await catalog.store.adjacent_ids([drama], [back], then=[rels["award"]])
    assert len(awards[back].pairs) == 40 and awards[back].then == {}
    real, sent = catalog.store.sparql.request, []

    async def slow_extras(method, params, *args, **kwargs):
        sent.append(query := params.get("query", ""))
        if "?av" in query or "?dir" in query:
            raise BackendTimeout("the endpoint did not answer in time")
        return await real(method, params, *args, **kwargs)

    catalog.store.sparql.request = slow_extras
    ((nb, _),) = await KGReader(catalog).follow(
        [(films, (rels["genre"], Direction.forward))], frontier=True
    )
    assert sorted(map(len, nb.values())) == [1, 2] and len(sent) == 2
    await catalog.aclose()


async def test_a_page_of_a_hop_a_labelled_walk_read_costs_no_request(hub_catalog_url):
    """A walk's last hop read with its targets' names keeps each source's rows as a page reads
    them: the traversal's page of that hop after it is sorted from them, the endpoint's own page
    to the edge. A hop to literals (years) is left to the endpoint's sort."""
    fresh = open_kg(make_spec("catalog", f"sparql:{hub_catalog_url}"))
    walked = open_kg(make_spec("catalog", f"sparql:{hub_catalog_url}"))
    films = [(await fresh.find_by_label(f"Film {i}"))[0].id for i in (1, 2, 3, 5)]
    for kg in (fresh, walked):  # a traversal names the sources and their relations on its way
        await kg.labels_of(films)
        rels = {r.label: r.id for r in (await kg.get_relations(films)).relations}
    genre, year = (rels["genre"], Direction.forward), (rels["year"], Direction.forward)
    drama = (await fresh.find_by_label("Drama"))[0].id
    back = (genre[0], Direction.backward)  # to 40 films, one of them with two labels
    await walked.adjacent_along(films, [genre, year], labelled=True)
    # with the targets' genres (as a link's identifiers): two for one film, one for the others
    reads = await walked.store.adjacent_ids([drama], [back, year], labelled=True, then=[genre[0]])
    film5 = (await fresh.find_by_label("Film 5"))[0].id
    assert (
        sorted(t for s, t in reads[back].then[genre[0]].pairs if s == film5)
        == sorted(e.target for e in (await fresh.get_edges([film5], *genre)).edges)
        and len(reads[back].then[genre[0]].pairs) == 41
    )
    sent = _spy_queries(walked)
    for src, hop in ((films, genre), (films[1:3], genre), ([drama], back)):
        assert _page(await walked.get_edges(src, *hop)) == _page(await fresh.get_edges(src, *hop))
    for offset in (10, 36):  # later pages of the same rows (Film 5, of two genres, is row 35)
        later = {"limit": 10, "offset": offset}
        assert _page(await walked.get_edges([drama], *back, **later)) == _page(
            await fresh.get_edges([drama], *back, **later)
        )
    assert sent == []
    asked = _spy_queries(fresh)
    assert _page(await walked.get_edges(films, *year)) == _page(await fresh.get_edges(films, *year))
    assert len(sent) == len(asked) > 0
