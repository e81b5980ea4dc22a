"""Several KGs answered as one (``LinkedKG``): a Wikidata-shaped and a MusicBrainz-shaped fixture
linked by owl:sameAs (John Lennon), an external-ID property (The Beatles, P434) and label match
(Michael Jackson)."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import BackendError, InvalidInput, UnknownKG
from tot_mcp.kg_adapters.files import open_file_kg
from tot_mcp.kg_adapters.routing import LinkedKG
from tot_mcp.kg_adapters.sameness import Linker, LinkingConfig, LinkRule, rules_for
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.triple_index import TripleIndex

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MB = "https://musicbrainz.org/artist/"
BEATLES_MB = "mb:b10bbbfc-cf9e-42e0-be17-e2c3e1d2600d"
LENNON_MB = "mb:4d5447d7-c61c-4120-ba1b-d7f471d385b9"
JACKSON_MB = "mb:f27ec8db-af05-4f36-916e-3d57f91ecf5e"
SAME_AS = LinkRule(from_kg="wd", to_kg="mb", kind="same_as")
P434 = LinkRule(from_kg="wd", to_kg="mb", kind="property", relation="P434", template=MB + "{value}")
LABEL = LinkRule(from_kg="wd", to_kg="mb", kind="label")


def members():
    wd = Graph(open_file_kg("wd", FIXTURES / "linked_wd.ttl", backend="memory"))
    # members may use different backends
    mb = Graph(open_file_kg("mb", FIXTURES / "linked_mb.ttl", store="memory"))
    return {"wd": wd, "mb": mb}


def linked(*rules: LinkRule, **kw) -> LinkedKG:
    kgs = members()
    return LinkedKG(kgs, Linker(kgs, list(rules), **kw))


async def wd_id(kg: LinkedKG, label: str) -> str:
    return (await kg.kgs["wd"].search_entities(label))[0].entity.id


@pytest.mark.parametrize(
    ("rule", "label", "expected"),
    [
        (SAME_AS, "John Lennon", LENNON_MB),
        (P434, "The Beatles", BEATLES_MB),
        (LABEL, "Michael Jackson", JACKSON_MB),
    ],
)
async def test_each_kind_of_link_finds_the_equivalent_and_only_that_one(rule, label, expected):
    kg = linked(rule)
    assert await kg.same_as(await wd_id(kg, label)) == [expected]
    if (
        rule.kind != "label"
    ):  # sameAs and P434 each link exactly one fixture entity; labels link all three
        for other in {"John Lennon", "The Beatles", "Michael Jackson"} - {label}:
            assert await kg.same_as(await wd_id(kg, other)) == []


@pytest.mark.parametrize(
    ("rule", "mb_id", "label"),
    [(SAME_AS, LENNON_MB, "John Lennon"), (P434, BEATLES_MB, "The Beatles")],
)
async def test_links_work_backward_from_the_other_kg(rule, mb_id, label):
    kg = linked(rule)
    assert await kg.same_as(mb_id) == [await wd_id(kg, label)]


async def test_initialize_links_into_every_member_and_merges_equivalents():
    kg = linked(SAME_AS, P434, LABEL)
    hits = await kg.initialize("albums by [The Beatles]")
    assert [h.entity.label for h in hits] == [
        "The Beatles"
    ]  # the MusicBrainz match is its equivalent
    assert hits[0].entity.kg == "wd" and hits[0].same_as == [BEATLES_MB]
    described = await kg.describe_entity(hits[0].entity.id)
    assert described.same_as == [BEATLES_MB]


async def test_relations_fan_out_and_edges_route_to_the_member_owning_the_relation():
    kg = linked(SAME_AS, P434, LABEL)
    beatles = await wd_id(kg, "The Beatles")
    rels = await kg.get_relations([beatles])
    assert not rels.partial
    by_label = {r.label: r for r in rels.relations}
    assert {"genre", "has part", "MusicBrainz artist ID", "released"} <= set(by_label)
    assert by_label["released"].id == "mb:released" and by_label["genre"].id.startswith("wd:")
    assert (by_label["released"].kg, by_label["genre"].kg) == (
        "mb",
        "wd",
    )  # each relation says where it lives
    page = await kg.get_edges([beatles], "mb:released")
    assert sorted(page.entities[e.target].label for e in page.edges) == ["Abbey Road", "Revolver"]
    assert {e.source for e in page.edges} == {BEATLES_MB}
    assert {e.via for e in page.edges} == {
        beatles
    }  # followed from the entity asked about, through its link
    own = await kg.get_edges([beatles], by_label["genre"].id)
    assert [own.entities[e.target].label for e in own.edges] == ["rock music"]


async def test_an_entity_linked_nowhere_gets_an_empty_page_with_a_reason():
    kg = linked(SAME_AS)
    rock = await wd_id(kg, "rock music")
    page = await kg.get_edges([rock], "mb:released")
    assert page.edges == [] and "no equivalent in KG 'mb'" in page.warnings[0] and not page.partial
    assert page.relation is not None and (page.relation.id, page.relation.label) == (
        "mb:released",
        "released",
    )


class FailingKG(MemoryKG):
    """A member whose backend is down."""

    async def relations(self, entity_ids):
        raise BackendError("endpoint unreachable")

    async def edges(self, *a, **k):
        raise BackendError("endpoint unreachable")

    async def search_entities(self, text, limit=10):
        raise BackendError("endpoint unreachable")

    async def initialize(self, query, limit=10, named=frozenset()):
        raise BackendError("endpoint unreachable")


async def test_a_failing_member_gives_a_partial_result_naming_it():
    m = members()
    mb = m["mb"].store
    index = (
        mb.index if hasattr(mb, "index") else open_file_kg("mb", FIXTURES / "linked_mb.ttl").index
    )
    broken = Graph(FailingKG("mb", index))
    kgs = {"wd": m["wd"], "mb": broken}
    kg = LinkedKG(kgs, Linker(kgs, [LABEL]))
    hits = await kg.initialize("[Michael Jackson]")
    assert hits[0].entity.kg == "wd"  # the healthy member still answers
    jackson = hits[0].entity.id
    rels = await kg.get_relations([jackson])
    assert rels.partial and any("'mb'" in w for w in rels.warnings)
    assert [r.label for r in rels.relations] == ["genre"]
    page = await kg.get_edges([jackson], "mb:released")
    assert page.partial and page.edges == [] and "mb" in page.warnings[-1]
    assert page.relation is not None and page.relation.id == "mb:released"


async def test_a_kg_that_is_down_is_named_once_however_many_entities_it_would_link(tmp_path):
    """Two mentions found in a file, a linked endpoint nobody listens at: the answer names the
    endpoint's failure once, not again for each entity whose links into it are missing."""
    import socket

    from tot_mcp.kg_adapters.spec import make_spec, open_kg

    with socket.socket() as sock:  # a loopback port nothing listens at
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    films = tmp_path / "films.txt"
    films.write_text("Alpha|directed_by|Eli Fox\nBeta|directed_by|Ann Lee\n", encoding="utf-8")
    kgs = {
        "films": open_kg(make_spec("films", str(films))),
        "dead": open_kg(make_spec("dead", f"sparql:http://127.0.0.1:{port}/sparql")),
    }
    kg = LinkedKG(kgs, Linker(kgs, [LinkRule(from_kg="films", to_kg="dead", kind="label")]))
    found = await kg.find_matches("who directed [Alpha] and [Beta]")
    assert [m.entity.label for m in found.entities] == ["Alpha", "Beta"]
    assert len(found.warnings) == 1 and found.warnings[0].startswith("KG 'dead' failed")


async def test_link_resolutions_are_cached_and_the_cache_is_bounded():
    kg = linked(LABEL, cache_size=2)
    ids = [await wd_id(kg, x) for x in ("The Beatles", "John Lennon", "Michael Jackson")]
    for eid in ids:
        await kg.same_as(eid)
    assert kg.linker.stats().entries == 2
    calls = []
    original = kg.kgs["mb"].find_by_labels

    async def counting(labels, limit=20):
        calls.extend(labels)
        return await original(labels, limit)

    kg.kgs["mb"].find_by_labels = counting
    await kg.same_as(ids[2])
    assert calls == [] and kg.linker.stats().hits == 1  # answered from the cache
    await kg.same_as(ids[0])
    assert calls == ["The Beatles"]  # evicted (the oldest), so asked again


async def test_bad_configuration_and_foreign_ids_are_clear_errors():
    with pytest.raises(InvalidInput, match="names KG 'dbpedia', which is not configured"):
        Linker(members(), [LinkRule(from_kg="wd", to_kg="dbpedia", kind="label")])
    with pytest.raises(InvalidInput, match="KG 'wd' has no relation 'P999'"):
        Linker(members(), [LinkRule(from_kg="wd", to_kg="mb", kind="property", relation="P999")])
    with pytest.raises(pydantic.ValidationError, match="relation"):
        LinkRule(from_kg="wd", to_kg="mb", kind="property")
    with pytest.raises(pydantic.ValidationError, match="different"):
        LinkRule(from_kg="wd", to_kg="wd")
    kg = linked(LABEL)
    with pytest.raises(UnknownKG, match="names KG 'dbp', which is not configured"):
        await kg.get_relations(["dbp:Berlin"])
    with pytest.raises(UnknownKG):
        await kg.get_edges([await wd_id(kg, "The Beatles")], "dbp:rel")


def test_with_no_rules_every_pair_is_linked_by_label_unless_linking_is_off_or_restricted():
    names = ["a", "b", "c"]
    assert [(r.from_kg, r.to_kg, r.kind) for r in rules_for(names, [])] == [
        ("a", "b", "label"),
        ("a", "c", "label"),
        ("b", "c", "label"),
    ]
    assert rules_for(names, [], LinkingConfig(enabled=False)) == []
    assert [
        (r.from_kg, r.to_kg) for r in rules_for(names, [], LinkingConfig(pairs=[("a", "c")]))
    ] == [("a", "c")]
    assert rules_for(names, [P434]) == [P434]  # explicit rules replace the default


def kg_of(name: str, triples, labels: dict[str, str] | None = None) -> Graph:
    index = TripleIndex()
    for h, r, t in triples:
        index.add(
            index.node(h, (labels or {}).get(h)),
            index.relation(r),
            index.node(t, (labels or {}).get(t)),
        )
    index.freeze()
    return Graph(MemoryKG(name, index))


async def test_a_hub_label_is_linked_to_at_most_max_label_matches_and_says_so():
    """30 people all labelled 'Smith' in one KG: linking the other KG's 'Smith' keeps 20 and the
    result says so."""
    people = kg_of(
        "people",
        [(f"p{i}", "spouse", f"q{i}") for i in range(30)],
        {f"p{i}": "Smith" for i in range(30)},
    )
    names = kg_of("names", [("Smith", "origin", "England")])
    kgs = {"names": names, "people": people}
    kg = LinkedKG(kgs, Linker(kgs, rules_for(kgs, []), max_label_matches=20))
    smith = (await names.search_entities("Smith"))[0].entity.id
    assert len(await kg.same_as(smith)) == 20
    rels = await kg.get_relations([smith])
    assert any(
        "more than 20 entities in KG 'people'; linked to the first 20" in w for w in rels.warnings
    )
    assert not rels.partial  # a capped link is a note, not a failure
    assert kg.linker.stats().capped == 1
