"""Graph(backend, ResultCache()): repeated traversal calls are answered from a bounded LRU + TTL
cache, never across KGs or configs."""

from __future__ import annotations

import pytest

from tot_mcp.kg_adapters.base import Limits
from tot_mcp.kg_adapters.cache import ResultCache
from tot_mcp.kg_adapters.errors import InvalidInput, NotFound
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.models import Direction
from tot_mcp.kg_adapters.triple_index import TripleIndex

TRIPLES = [
    ("Heat", "directed_by", "Michael Mann"),
    ("Collateral", "directed_by", "Michael Mann"),
    ("Heat", "starred_actors", "Al Pacino"),
    ("Heat", "starred_actors", "Robert De Niro"),
    ("Heat", "release_year", "1995"),
]


def make_kg(name: str, triples=TRIPLES, limits: Limits | None = None) -> MemoryKG:
    ix = TripleIndex()
    for h, r, t in triples:
        ix.add(ix.node(h), ix.relation(r), ix.node(t))
    ix.freeze()
    return MemoryKG(name, ix, limits=limits)


class CountingKG(MemoryKG):
    """A MemoryKG that counts how often the backend is really asked."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.calls = 0

    async def edges(self, *a, **kw):
        self.calls += 1
        return await super().edges(*a, **kw)

    async def relations(self, *a, **kw):
        self.calls += 1
        return await super().relations(*a, **kw)

    async def adjacent_ids(self, *a, **kw):
        self.calls += 1
        return await super().adjacent_ids(*a, **kw)


def counting(name="m", triples=TRIPLES, limits=None) -> CountingKG:
    base = make_kg(name, triples, limits)
    return CountingKG(name, base.index, limits=limits)


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def heat(kg) -> str:
    return f"{kg.name}:E{kg.index.find_node('Heat')}"


async def test_repeated_calls_hit_the_cache_and_return_identical_results():
    inner = counting()
    kg = Graph(inner, ResultCache())
    first = await kg.get_edges([heat(inner)], "m:starred_actors")
    second = await kg.get_edges([heat(inner)], "m:starred_actors", Direction.forward)
    assert second == first and len(first.edges) == 2
    rels1 = await kg.get_relations([heat(inner)])
    rels2 = await kg.get_relations([heat(inner)])
    assert rels1 == rels2
    assert inner.calls == 2  # one real get_edges, one real get_relations
    stats = kg.cache.stats()
    assert (stats.hits, stats.misses) == (2, 2) and stats.hit_rate == 0.5


async def test_a_read_that_left_nothing_out_answers_reads_of_some_of_its_entities():
    """A frontier read along several hops is one backend read; a later read of some of its
    entities (a link lookup, a page's sources) along one of them is answered from it, at any
    limit, cut exactly when it leaves an edge out. A read that was cut answers nothing but
    itself (and smaller reads)."""
    inner = counting()
    kg = Graph(inner, ResultCache())
    films = [f"m:E{inner.index.find_node(t)}" for t in ("Heat", "Collateral")]
    hops = [("m:directed_by", Direction.forward), ("m:starred_actors", Direction.forward)]
    whole = await kg.adjacent_along(films, hops)
    assert inner.calls == 1 and len(whole[hops[1]].pairs) == 2
    for limit in (1, 2, 5):
        one = await kg.adjacent_ids(films[:1], *hops[1], limit=limit)
        assert (len(one.pairs), one.truncated) == (min(limit, 2), limit < 2)
        assert set(one.pairs) <= set(whole[hops[1]].pairs)
    assert set((await kg.adjacent_ids(films[::-1], *hops[0])).pairs) == set(whole[hops[0]].pairs)
    assert inner.calls == 1
    kg = Graph(inner, ResultCache())
    assert (await kg.adjacent_ids(films, *hops[0], limit=1)).truncated
    assert len((await kg.adjacent_ids(films[1:], *hops[0])).pairs) == 1
    assert inner.calls == 3


async def test_different_arguments_are_different_entries():
    inner = counting()
    kg = Graph(inner, ResultCache())
    a = await kg.get_edges([heat(inner)], "m:starred_actors", limit=1)
    b = await kg.get_edges([heat(inner)], "m:starred_actors", limit=1, offset=1)
    assert a.edges != b.edges and a.truncated and not b.truncated
    back = await kg.get_edges(
        [f"m:E{inner.index.find_node('Michael Mann')}"], "m:directed_by", "backward"
    )
    assert len(back.edges) == 2 and inner.calls == 3


async def test_entries_expire_after_the_ttl():
    clock = FakeClock()
    inner = counting()
    kg = Graph(inner, ResultCache(ttl_seconds=60, clock=clock))
    await kg.get_relations([heat(inner)])
    clock.t += 59
    await kg.get_relations([heat(inner)])
    assert inner.calls == 1
    clock.t += 2
    await kg.get_relations([heat(inner)])
    assert inner.calls == 2 and kg.cache.stats().expirations == 1


async def test_cache_is_bounded_by_weight_evicting_least_recently_used():
    inner = counting()
    cache = ResultCache(max_weight=12)
    kg = Graph(inner, cache)
    heat_id = heat(inner)
    page = await kg.get_edges([heat_id], "m:starred_actors")  # weight 1 + 2 edges + 3 entities = 6
    await kg.get_edges([heat_id], "m:directed_by")  # weight 1 + 1 + 2 = 4 → total 10
    await kg.get_edges([heat_id], "m:starred_actors")  # touch: starred_actors is now most recent
    await kg.get_edges([heat_id], "m:release_year")  # +4 → 14 > 12: evicts directed_by (LRU)
    s = cache.stats()
    assert s.weight <= 12 and s.evictions == 1 and s.entries == 2
    calls = inner.calls
    assert await kg.get_edges([heat_id], "m:starred_actors") == page
    assert inner.calls == calls  # still cached
    await kg.get_edges([heat_id], "m:directed_by")
    assert inner.calls == calls + 1  # was evicted


async def test_a_shared_cache_never_serves_one_kg_to_another():
    # two KGs with the same name and the same IDs but different data, sharing one cache
    cache = ResultCache()
    a = Graph(make_kg("m"), cache)
    b = Graph(make_kg("m", [("Heat", "starred_actors", "Val Kilmer")]), cache)
    ea = await a.get_edges(["m:E0"], "m:starred_actors")
    eb = await b.get_edges(["m:E0"], "m:starred_actors")
    assert {e.label for e in ea.entities.values()} >= {"Al Pacino", "Robert De Niro"}
    assert {e.label for e in eb.entities.values()} == {"Heat", "Val Kilmer"}
    assert cache.stats().hits == 0


async def test_limits_are_part_of_the_key():
    cache = ResultCache()
    small = Graph(make_kg("m", limits=Limits(max_edges=1)), cache)
    wide = Graph(make_kg("m"), cache)
    assert len((await small.get_edges(["m:E0"], "m:starred_actors")).edges) == 1
    assert len((await wide.get_edges(["m:E0"], "m:starred_actors")).edges) == 2


async def test_errors_are_not_cached_and_pass_through_unchanged():
    inner = counting()
    kg = Graph(inner, ResultCache())
    for _ in range(2):
        with pytest.raises(NotFound):
            await kg.get_edges(["m:E999"], "m:starred_actors")
    with pytest.raises(InvalidInput):
        await kg.get_edges([{"not": "an id"}], "m:starred_actors")  # unhashable: bypasses the cache
    assert inner.calls == 3 and kg.cache.stats().entries == 0


async def test_search_info_and_the_backend_pass_through():
    inner = make_kg("m")
    kg = Graph(inner, ResultCache())
    assert [m.entity.label for m in await kg.search_entities("Heat")] == ["Heat"]
    assert (await kg.info()).triples == 5
    assert kg.store is inner and kg.backend == "memory"


async def test_info_is_kept_as_a_read_is_but_not_from_an_endpoint_that_did_not_answer():
    """A linker, the relation listing and the reasoner each ask ``info()``, on SPARQL a count over
    the whole KG: it is asked once. An answer saying the endpoint did not answer is asked again."""
    inner = make_kg("m")
    asked: list[str] = []
    answered = await inner.info()
    down = answered.model_copy(update={"unreachable": "endpoint not answering"})

    async def info():
        asked.append("info")
        return answered if len(asked) <= 1 else down

    inner.info = info
    kg = Graph(inner, ResultCache())
    assert await kg.info() == await kg.info() == answered and len(asked) == 1
    again = Graph(inner, ResultCache())
    assert (await again.info()).unreachable and (await again.info()).unreachable
    assert len(asked) == 3


def test_bad_cache_configuration_is_rejected():
    with pytest.raises(InvalidInput):
        ResultCache(max_weight=0)
    with pytest.raises(InvalidInput):
        ResultCache(ttl_seconds=0)
