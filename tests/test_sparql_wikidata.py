"""The Wikidata profile against a real SPARQL server (oxigraph) serving Wikidata-shaped data built
from real facts (tests/fixtures/wikidata_sample.ttl): items, truthy claims, statements with ranks
and qualifiers, labels in several languages. No network beyond 127.0.0.1.
"""

from __future__ import annotations

import pytest

from tot_mcp.kg_adapters.base import Limits
from tot_mcp.kg_adapters.errors import InvalidInput, NotFound, UnknownKG
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.models import Direction
from tot_mcp.kg_adapters.spec import make_spec, open_kg
from tot_mcp.kg_adapters.sparql import EndpointRegistry, open_sparql_kg

pytest_plugins = ["oxigraph_fixture"]

XSD = "http://www.w3.org/2001/XMLSchema#"


def wikidata(url: str, limits: Limits | None = None, **options) -> Graph:
    """The backend over ``url`` behind its Graph, with its own endpoint registry."""
    return Graph(
        open_sparql_kg("wd", "wikidata", url, limits, registry=EndpointRegistry(), **options)
    )


@pytest.fixture
def wd(wikidata_sparql_url):
    return wikidata(wikidata_sparql_url)


def summary(rels):
    return {(r.id, r.direction.value): r.count for r in rels.relations}


# -- entity search and linking ---------------------------------------------------------------------
async def test_search_matches_labels_exactly_then_case_insensitively_with_descriptions(wd):
    exact = await wd.search_entities("Douglas Adams")
    assert (exact[0].entity.id, exact[0].match, exact[0].score) == ("wd:Q42", "exact", 1.0)
    assert exact[0].entity.description == "English author and humorist (1952–2001)"
    lower = await wd.search_entities("douglas adams")
    assert (lower[0].entity.id, lower[0].match) == ("wd:Q42", "casefold")


async def test_search_finds_aliases_and_substrings_below_labels(wd):
    alias = await wd.search_entities("Madame Curie")
    assert (alias[0].entity.id, alias[0].entity.label, alias[0].match) == (
        "wd:Q7186",
        "Marie Curie",
        "alias",
    )
    partial = await wd.search_entities("Curie")
    assert {h.entity.id for h in partial} >= {"wd:Q7186", "wd:Q37463", "wd:Q7504"}
    assert all(h.match == "contains" and h.score < 0.9 for h in partial)


async def test_equal_labels_are_ranked_by_sitelinks(wd):
    hits = await wd.search_entities("Cambridge")
    assert [h.entity.id for h in hits[:2]] == ["wd:Q350", "wd:Q49111"]
    assert hits[0].entity.description == "city in Cambridgeshire, England"
    three = [
        h.entity.description
        for h in await wd.search_entities("The Hitchhiker's Guide to the Galaxy")
    ]
    assert (
        three[0] == "comedy science fiction franchise created by Douglas Adams" and len(three) == 3
    )


async def test_an_entity_labelled_only_in_mul_is_found_and_shown(wd):
    hits = await wd.search_entities("Jane Belson")
    assert (hits[0].entity.id, hits[0].entity.label) == ("wd:Q14623681", "Jane Belson")


async def test_label_languages_are_configurable_with_fallback_to_the_id(wikidata_sparql_url):
    pl = wikidata(wikidata_sparql_url, languages=["pl", "en"])
    described = await pl.describe_entity("wd:Q7186")
    assert described.entity.label == "Maria Skłodowska-Curie"
    de = wikidata(wikidata_sparql_url, languages=["de"])
    page = await de.get_edges(["wd:Q42"], "wd:P26")
    assert page.entities["wd:Q14623681"].label == "Q14623681"  # only a 'mul' label exists
    assert page.entities["wd:Q42"].label == "Douglas Adams"


async def test_initialize_links_names_inside_a_plain_question(wd):
    hits = await wd.initialize("Who was the spouse of Douglas Adams?")
    assert (hits[0].entity.id, hits[0].mention, hits[0].match) == (
        "wd:Q42",
        "Douglas Adams",
        "mention",
    )
    both = await wd.initialize("did marie curie and pierre curie win the same award")
    assert {h.entity.id for h in both} >= {"wd:Q7186", "wd:Q37463"}
    assert {h.mention for h in both if h.entity.id in ("wd:Q7186", "wd:Q37463")} == {
        "marie curie",
        "pierre curie",
    }


async def test_initialize_prefers_bracketed_mentions(wd):
    hits = await wd.initialize("where was [albert einstein] born and where did he die")
    assert (hits[0].entity.id, hits[0].mention) == ("wd:Q937", "albert einstein")


async def test_nothing_to_link_is_an_empty_list(wd):
    assert await wd.initialize("zzqx wibble frobnicate") == []
    assert await wd.search_entities("zzqx wibble") == []


# -- relations -------------------------------------------------------------------------------------
async def test_relations_are_direct_claims_both_ways_with_counts(wd):
    rels = await wd.get_relations(["wd:Q42"])
    got = summary(rels)
    assert got[("wd:P106", "forward")] == 4 and got[("wd:P26", "forward")] == 1
    assert got[("wd:P800", "forward")] == 2 and got[("wd:P434", "forward")] == 1
    assert {k for k in got if k[1] == "backward"} == {
        ("wd:P50", "backward"),
        ("wd:P170", "backward"),
        ("wd:P58", "backward"),
        ("wd:P26", "backward"),
    }
    labels = {r.id: r.label for r in rels.relations}
    assert labels["wd:P106"] == "occupation" and labels["wd:P434"] == "MusicBrainz artist ID"
    assert (
        rels.relations[0].direction is Direction.forward
        and not rels.truncated
        and rels.warnings == []
    )


async def test_relation_counts_add_up_over_several_entities(wd):
    got = summary(await wd.get_relations(["wd:Q1203", "wd:Q2599", "wd:Q2643", "wd:Q2632"]))
    assert got[("wd:P463", "forward")] == 4
    assert got[("wd:P527", "backward")] == 4
    assert got[("wd:P106", "forward")] == 15  # 4 × 3 shared + guitarist × 2 + drummer


async def test_a_hub_with_many_incoming_edges_is_sampled_not_counted(wikidata_sparql_url):
    kg = wikidata(wikidata_sparql_url, backward_scan=5)
    rels = await kg.get_relations(["wd:Q145"])
    backward = [r for r in rels.relations if r.direction is Direction.backward]
    assert backward and all(r.count is None for r in backward)
    assert rels.truncated and "incoming edges" in rels.warnings[0]
    assert all(r.count for r in rels.relations if r.direction is Direction.forward)


def sent_queries(kg) -> list[str]:
    """The SPARQL text of every request the backend sends from now on."""
    sent: list[str] = []
    request = kg.sparql.request

    async def counted(method, params, *args, **kwargs):
        sent.append(params.get("query", ""))
        return await request(method, params, *args, **kwargs)

    kg.sparql.request = counted
    return sent


async def test_relations_are_per_entity_one_query_a_batch_as_asked_alone(wikidata_sparql_url):
    """What a reasoner reads of a frontier: per entity, any number at once, one query per batch; an
    ID naming nothing is left out, all such IDs looked up in one more query."""
    kg = wikidata(wikidata_sparql_url, batch_size=3).store
    ids = ["wd:Q1203", "wd:Q2599", "wd:Q2643", "wd:Q2632", "wd:Q42", "wd:Q999999999"]
    alone = {i: (await kg.relations([i])).get(i) for i in ids}
    assert alone["wd:Q999999999"] is None and all(alone[i] for i in ids[:-1])
    sent = sent_queries(kg)
    got = await kg.relations([*ids, ids[0]])
    assert got == {i: rl for i, rl in alone.items() if rl is not None}
    assert len(sent) == 3  # two batches, one look-up of the ID without relations
    assert await kg.relations([]) == {}


async def test_a_hub_is_read_from_its_batchs_sample_the_rest_again_together(wikidata_sparql_url):
    """Over a scan of 5 the UK's 19 incoming edges fill the batch's backward sample (6 per entity):
    the UK's backward relations are the sample's, uncounted; the others, whose edges the sample may
    have missed, are read again in one query, not one each."""
    kg = wikidata(wikidata_sparql_url, backward_scan=5).store
    ids = ["wd:Q145", "wd:Q42", "wd:Q1299"]
    alone = {i: (await kg.relations([i]))[i] for i in ids}
    sent = sent_queries(kg)
    got = await kg.relations(ids)
    assert len(sent) == 2
    assert {i: got[i] for i in ids[1:]} == {i: alone[i] for i in ids[1:]}
    uk = got["wd:Q145"]
    backward = [r for r in uk.relations if r.direction is Direction.backward]
    assert uk.truncated and backward and all(r.count is None for r in backward)
    assert "incoming edges" in uk.warnings[0]
    assert [r for r in uk.relations if r.direction is Direction.forward] == [
        r for r in alone["wd:Q145"].relations if r.direction is Direction.forward
    ]


async def test_a_bulk_read_is_cut_exactly_at_its_limit_across_batches(wikidata_sparql_url):
    """Wikidata's bulk read is read as pages are (values with their value nodes); it still says
    truncated exactly when it left an edge out, also when the limit falls at the end of a batch and
    the batches after it have no such edge (the UK has no occupation)."""
    kg = wikidata(wikidata_sparql_url, batch_size=2).store
    ids = ["wd:Q1203", "wd:Q2599", "wd:Q2643", "wd:Q2632", "wd:Q145"]
    full = await kg.adjacent_ids(ids, "wd:P106", limit=100)
    total = len(full.pairs)
    assert total == 15 and not full.values and not full.truncated
    for limit in range(0, total + 2):
        cut = await kg.adjacent_ids(ids, "wd:P106", limit=limit)
        assert (len(cut.pairs), cut.truncated) == (min(limit, total), limit < total), limit
        assert set(cut.pairs) <= set(full.pairs)


async def test_labels_leave_out_ids_naming_nothing_and_a_labelled_walk_brings_them_along(wd):
    """labels() tells the IDs that name nothing in its one query; after a bulk read told
    ``labelled``, the targets' labels cost no request; keys are the IRIs the IDs encode."""
    kg = wd.store
    sent = sent_queries(kg)
    assert await kg.labels(["wd:Q42", "wd:Q999999999", "wd:Q42", "wd:P31", "other:Q1"]) == {
        "wd:Q42": "Douglas Adams"
    }
    assert len(sent) == 1
    read = await kg.adjacent_ids(["wd:Q1299"], "wd:P463", Direction.backward, labelled=True)
    sent.clear()
    members = await kg.labels([t for _, t in read.pairs])
    assert sorted(members.values()) == [
        "George Harrison",
        "John Lennon",
        "Paul McCartney",
        "Ringo Starr",
    ]
    assert sent == []
    assert await kg.labels(["wd:Q42", "wd:Q999999999"], key=True) == {
        "wd:Q42": "http://www.wikidata.org/entity/Q42",
        "wd:Q999999999": "http://www.wikidata.org/entity/Q999999999",
    }
    assert sent == []


async def test_find_resolves_identifiers_and_keys_in_one_query_each_naming_what_it_finds(wd):
    """A link rule joins a frontier by identifiers, or by IRIs: one query each, and the entities
    found are named on the way (the walk shows them next)."""
    kg = wd.store
    sent = sent_queries(kg)
    mbid = "e9ed318d-8cc5-4cf8-ab77-505e39ab6ea4"
    found = {mbid: ["wd:Q42"], "nobody's ID": []}
    assert await kg.find([mbid, mbid, "nobody's ID"], "wd:P434") == found
    keys = {
        "http://www.wikidata.org/entity/Q1299": ["wd:Q1299"],
        "Q7186": ["wd:Q7186"],
        "https://www.wikidata.org/entity/Q1203": ["wd:Q1203"],
        "Q999999999": [],
        "not an IRI": [],
        'http://x/"> } INSERT': [],
    }
    assert await kg.find(list(keys)) == keys
    assert len(sent) == 2
    assert await kg.labels(["wd:Q42", "wd:Q1299", "wd:Q7186", "wd:Q1203"]) == {
        "wd:Q42": "Douglas Adams",
        "wd:Q1299": "The Beatles",
        "wd:Q7186": "Marie Curie",
        "wd:Q1203": "John Lennon",
    }
    assert len(sent) == 2
    with pytest.raises(NotFound, match="get_relations"):
        await kg.find(["x"], "wd:P99999")


async def test_a_relation_is_sampled_anywhere_without_sources(wd):
    """What a link rule is tried on at start-up: edges of the relation from any item, at most the
    limit."""
    read = await wd.store.adjacent_ids([], "wd:P463", limit=2)
    assert len(read.pairs) == 2 and read.truncated and not read.values
    for source, target in read.pairs:
        assert (source, target) in (await wd.store.adjacent_ids([source], "wd:P463")).pairs
    assert await wd.subjects_of("wd:P463", limit=3)


# -- edges -----------------------------------------------------------------------------------------
async def test_edges_carry_qualifiers_of_the_statement(wd):
    page = await wd.get_edges(["wd:Q42"], "wd:P26")
    (edge,) = page.edges
    assert (edge.source, edge.relation, edge.target) == ("wd:Q42", "wd:P26", "wd:Q14623681")
    quals = {(q.relation.label, q.value.value, q.value.datatype) for q in edge.qualifiers}
    assert quals == {
        ("start time", "1991-11-25T00:00:00Z", XSD + "dateTime"),
        ("end time", "2001-05-11T00:00:00Z", XSD + "dateTime"),
    }
    assert (
        page.entities["wd:Q14623681"].label == "Jane Belson"
        and page.entities["wd:Q42"].label == "Douglas Adams"
    )


async def test_edges_name_the_relation_by_its_label_without_an_extra_query(wd):
    queries = []
    request = wd.store.sparql.request

    async def counted(*args, **kwargs):
        queries.append(args)
        return await request(*args, **kwargs)

    wd.store.sparql.request = counted
    page = await wd.get_edges(
        ["wd:Q42"], "wd:P26"
    )  # cold: the label comes with the source/qualifier labels
    assert (page.relation.id, page.relation.label, page.relation.direction) == (
        "wd:P26",
        "spouse",
        Direction.forward,
    )
    assert (
        len(queries) == 2
    )  # the edges, then one label query for source, relation and qualifier properties
    back = await wd.get_edges(["wd:Q1299"], "wd:P463", Direction.backward)
    assert (back.relation.label, back.relation.direction) == ("member of", Direction.backward)
    queries.clear()
    assert (await wd.get_edges(["wd:Q42"], "wd:P26")).relation.label == "spouse"
    assert len(queries) == 1  # every label is cached now


async def test_the_relation_label_follows_the_configured_languages(wikidata_sparql_url):
    de = wikidata(wikidata_sparql_url, languages=["de"])
    assert (await de.get_edges(["wd:Q42"], "wd:P26")).relation.label == "Ehepartner"


async def test_two_statements_with_one_value_give_one_edge_with_both_qualifier_sets(wd):
    (edge,) = (await wd.get_edges(["wd:Q8016"], "wd:P39")).edges
    starts = sorted(q.value.value[:10] for q in edge.qualifiers if q.relation.id == "wd:P580")
    assert edge.target == "wd:Q14211" and starts == ["1940-05-10", "1951-10-26"]


async def test_only_best_rank_values_are_edges_and_deprecated_statements_add_no_qualifiers(wd):
    (pop,) = (await wd.get_edges(["wd:Q84"], "wd:P1082")).edges  # preferred 2021 beats normal 2011
    assert (pop.value.value, pop.value.datatype) == ("8799800", XSD + "decimal")
    assert [(q.relation.label, q.value.value[:4]) for q in pop.qualifiers] == [
        ("point in time", "2021")
    ]
    (inception,) = (await wd.get_edges(["wd:Q1299"], "wd:P571")).edges  # 1957 is deprecated
    assert inception.value.value.startswith("1960")


async def test_literal_values_keep_their_datatype_or_language(wd):
    async def value(qid, pid):
        (edge,) = (await wd.get_edges([qid], pid)).edges
        assert edge.target is None
        return edge.value.value, edge.value.datatype, edge.value.lang

    assert await value("wd:Q42", "wd:P569") == ("1952-03-11T00:00:00Z", XSD + "dateTime", None)
    assert await value("wd:Q42", "wd:P434") == ("e9ed318d-8cc5-4cf8-ab77-505e39ab6ea4", None, None)
    assert await value("wd:Q2632", "wd:P1477") == ("Richard Starkey", None, "en")
    assert await value("wd:Q1299", "wd:P856") == (
        "https://www.thebeatles.com/",
        XSD + "anyURI",
        None,
    )
    assert (await value("wd:Q84", "wd:P625"))[0] == "Point(-0.1275 51.507222)"


async def test_backward_edges_reach_the_subjects_with_labels(wd):
    page = await wd.get_edges(["wd:Q1299"], "wd:P463", Direction.backward)
    assert {page.entities[e.target].label for e in page.edges} == {
        "John Lennon",
        "Paul McCartney",
        "George Harrison",
        "Ringo Starr",
    }
    assert all(e.source == "wd:Q1299" and e.direction is Direction.backward for e in page.edges)
    ringo = next(e for e in page.edges if e.target == "wd:Q2632")
    assert {q.relation.id: q.value.value[:4] for q in ringo.qualifiers} == {
        "wd:P580": "1962",
        "wd:P582": "1970",
    }


async def test_paging_is_stable_and_covers_every_edge_once(wd):
    everything = await wd.get_edges(["wd:Q145", "wd:Q142"], "wd:P17", Direction.backward)
    assert len(everything.edges) > 8 and not everything.truncated and everything.next_offset is None
    seen, offset = [], 0
    while True:
        page = await wd.get_edges(
            ["wd:Q145", "wd:Q142"], "wd:P17", Direction.backward, limit=3, offset=offset
        )
        seen += [(e.source, e.target) for e in page.edges]
        if not page.truncated:
            break
        assert page.next_offset == offset + 3 and len(page.edges) == 3
        offset = page.next_offset
    assert seen == [(e.source, e.target) for e in everything.edges]
    assert (await wd.get_edges(["wd:Q145"], "wd:P17", Direction.backward, offset=500)).edges == []


async def test_paging_works_across_id_batches(wikidata_sparql_url):
    kg = wikidata(wikidata_sparql_url, batch_size=2)
    ids = ["wd:Q1203", "wd:Q2599", "wd:Q2643", "wd:Q2632", "wd:Q42"]
    everything = await kg.get_edges(ids, "wd:P106", limit=100)
    assert len(everything.edges) == 19 and not everything.truncated
    seen, offset = [], 0
    for _ in range(10):
        page = await kg.get_edges(ids, "wd:P106", limit=4, offset=offset)
        seen += [(e.source, e.target) for e in page.edges]
        if not page.truncated:
            break
        offset = page.next_offset
    assert seen == [(e.source, e.target) for e in everything.edges]


async def test_limit_is_capped_by_the_configured_maximum(wikidata_sparql_url):
    kg = wikidata(wikidata_sparql_url, Limits(max_edges=5))
    page = await kg.get_edges(["wd:Q145"], "wd:P17", Direction.backward, limit=1000)
    assert len(page.edges) == 5 and page.truncated and page.next_offset == 5


# -- describe and info -----------------------------------------------------------------------------
async def test_describe_gives_label_description_aliases_relations_and_iri(wd):
    d = await wd.describe_entity("wd:Q7186")
    assert d.entity.label == "Marie Curie" and d.entity.description.startswith(
        "Polish and naturalised-French"
    )
    assert "Madame Curie" in d.aliases and d.iri == "http://www.wikidata.org/entity/Q7186"
    assert ("wd:P166", Direction.forward, 2) in {(r.id, r.direction, r.count) for r in d.relations}


async def test_info_names_the_backend_and_samples_the_property_vocabulary(wd, wikidata_sparql_url):
    info = await wd.info()
    assert info.backend == "wikidata" and wikidata_sparql_url in info.description
    labels = [r.label for r in info.relation_sample]
    assert (
        len(labels) == 20
        and "occupation" in labels
        and not any(label.startswith("P") for label in labels)
    )


async def test_entity_keys_are_iris_and_resolve_back_for_linking(wd):
    assert await wd.entity_key("wd:Q1299") == "http://www.wikidata.org/entity/Q1299"
    assert await wd.resolve_key("http://www.wikidata.org/entity/Q1299") == "wd:Q1299"
    assert await wd.resolve_key("https://www.wikidata.org/entity/Q1299") == "wd:Q1299"
    assert await wd.resolve_key("Q1299") == "wd:Q1299"
    assert await wd.resolve_key("Q999999999") is None
    assert (
        await wd.resolve_key("b10bbbfc-cf9e-42e0-be17-e2c3e1d2600d") is None
    )  # literals are not addressable
    assert await wd.resolve_key('http://x/"> } INSERT') is None


async def test_the_spec_string_opens_this_backend(wikidata_sparql_url):
    kg = open_kg(
        make_spec("mirror", f"wikidata:{wikidata_sparql_url}"), registry=EndpointRegistry()
    )
    assert (await kg.search_entities("Abbey Road"))[0].entity.id == "mirror:Q173643"


# -- bad input -------------------------------------------------------------------------------------
async def test_bad_ids_and_arguments_raise_clear_errors(wd):
    for bad in ["wd:Q0", "wd:Q42abc", "wd:X1", "wd:P31", "wd:q42", "wd:Q123456789012"]:
        with pytest.raises(InvalidInput, match="not a Wikidata item ID"):
            await wd.get_relations([bad])
    with pytest.raises(InvalidInput, match="not a Wikidata property ID"):
        await wd.get_edges(["wd:Q42"], "wd:Q5")
    with pytest.raises(UnknownKG, match="belongs to KG 'other'"):
        await wd.get_relations(["other:Q42"])
    with pytest.raises(NotFound, match="wd:Q999999999"):
        await wd.get_relations(["wd:Q999999999"])
    with pytest.raises(NotFound, match="wd:Q999999999"):
        await wd.describe_entity("wd:Q999999999")
    with pytest.raises(NotFound, match="get_relations"):
        await wd.get_edges(["wd:Q42"], "wd:P99999")
    with pytest.raises(InvalidInput, match="direction"):
        await wd.get_edges(["wd:Q42"], "wd:P26", "sideways")
    with pytest.raises(InvalidInput, match="offset"):
        await wd.get_edges(["wd:Q42"], "wd:P26", offset=-1)
    with pytest.raises(InvalidInput, match="limit"):
        await wd.get_edges(["wd:Q42"], "wd:P26", limit=0)
    with pytest.raises(InvalidInput, match="empty"):
        await wd.search_entities("  \n ")
    with pytest.raises(InvalidInput, match="at most"):
        await wd.initialize("x" * 5000)
