"""Value readings: a relation is also read as '<relation>: v1, v2, ...' with values it reaches in
the KG, so a question can find a relation whose label says nothing ("p1") by the kind of values it
has (colours)."""

from __future__ import annotations

from retrieval_fixtures import shared_embedder

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.triple_index import TripleIndex
from tot_mcp.strategies.offline import OfflineReasoner, OfflineSettings, topics_from_matches

TRIPLES = [
    ("Widget A", "p1", "Red"),
    ("Widget B", "p1", "Blue"),
    ("Widget C", "p1", "Green"),
    ("Widget D", "p1", "Yellow"),
    ("Widget A", "p2", "Paris"),
    ("Widget B", "p2", "Tokyo"),
    ("Widget C", "p2", "Lima"),
    ("Widget D", "p2", "Oslo"),
    ("Widget A", "p3", "1999"),
    ("Widget B", "p3", "2004"),
    ("Widget C", "p3", "1987"),
    ("Widget D", "p3", "2012"),
]


def build_kg() -> MemoryKG:
    index = TripleIndex()
    for h, r, t in TRIPLES:
        index.add(index.node(h), index.relation(r), index.node(t))
    index.freeze()
    return Graph(MemoryKG("things", index))


VALUES = OfflineSettings()  # value readings are on by default (3 values, mixed centring)


async def test_an_opaque_relation_is_found_by_the_kind_of_values_it_reaches():
    kg = build_kg()
    reasoner = OfflineReasoner(shared_embedder(), VALUES)
    for question, gold in [
        ("what does [Widget A] look like in colour", "Red"),
        ("in what city is [Widget B] located", "Tokyo"),
    ]:
        res = await reasoner.reason(
            kg, question, topics_from_matches(await kg.initialize(question))
        )
        assert res.best is not None
        assert res.best.answer_labels[:1] == [gold], (question, res.best.hops)


async def test_value_readings_are_built_from_forward_targets_and_off_by_default():
    kg = build_kg()
    embedder = shared_embedder()
    on = OfflineReasoner(embedder, VALUES).stats_for(kg)
    vecs = await on.value_vectors(["things:p1"])
    assert vecs["things:p1"].shape == (1, embedder.dim)
    colours = embedder.encode_one("p1: red, blue, green")
    assert (
        float(vecs["things:p1"][0] @ colours) > 0.8
    )  # three of the colours, in the relation's words
    off = OfflineReasoner(embedder, OfflineSettings(value_examples=0)).stats_for(kg)
    assert (await off.value_vectors(["things:p1"]))["things:p1"].shape == (0, embedder.dim)


async def test_a_relation_the_topic_lacks_is_not_answered_confidently_with_another():
    """ "Who is the director of [Nomad]": the KG records directors, but not Nomad's. The best walk
    reads "director" as its actors, a relation that fits the word far worse: the answer is of the
    wrong kind, and the result says so (partial, unsupported, value capped) instead of naming the
    actors confidently. A film with a director is answered as ever."""
    from tot_fixtures import make_kg

    from tot_mcp.strategies.offline import OfflinePolicy
    from tot_mcp.strategies.tot.asm import TraversalASM
    from tot_mcp.strategies.tot.search import SearchConfig, TreeSearch

    kg = make_kg(
        "m",
        [
            ("Arrival", "directed_by", "Denis Villeneuve"),
            ("Arrival", "starred_actors", "Amy Adams"),
            ("Dune", "directed_by", "Denis Villeneuve"),
            ("Dune", "starred_actors", "Zendaya"),
            ("Heat", "directed_by", "Michael Mann"),
            ("Heat", "starred_actors", "Al Pacino"),
            ("Nomad", "starred_actors", "Kuno Becker"),
            ("Nomad", "starred_actors", "Jay Hernandez"),
            ("Nomad", "release_year", "2005"),
            ("Heat", "release_year", "1995"),
        ],
    )
    policy = OfflinePolicy(kg, embedder=shared_embedder())
    search = TreeSearch(TraversalASM(kg), policy, SearchConfig(k=3, max_expansions=12))
    lacking = await search.run("who is the director of [Nomad]")
    assert lacking.status != "answered" and lacking.value <= 0.3, lacking.tree_text()
    assert lacking.partial and lacking.partial_reason.startswith(
        "unsupported: the question's 'director' reads as m:directed_by"
    ), lacking.partial_reason
    assert (
        "the KG may not record it for them)" in lacking.partial_reason
    )  # one KG: no talk of links
    known = await TreeSearch(
        TraversalASM(kg),
        OfflinePolicy(kg, embedder=shared_embedder()),
        SearchConfig(k=3, max_expansions=12),
    ).run("who is the director of [Heat]")
    assert known.answer.labels == ["Michael Mann"] and known.value > 0.5, known.tree_text()
    assert not known.partial_reason.startswith("unsupported")
