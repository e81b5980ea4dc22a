"""The in-memory backend on the real MetaQA KB (kb.txt from ../shared, and the copy shipped as the
embedded KG): linking, relations both ways with counts, paging without gaps or duplicates, and
errors for bad input."""

from __future__ import annotations

import pytest
from conftest import require_benchmarks

from tot_mcp.kg_adapters.base import Limits
from tot_mcp.kg_adapters.errors import InvalidInput, NotFound, UnknownKG
from tot_mcp.kg_adapters.files import open_file_kg
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.models import Direction


@pytest.fixture(scope="module")
def metaqa() -> Graph:
    kb = require_benchmarks("metaqa", "kb.txt")
    kg = Graph(open_file_kg("metaqa", kb))
    assert isinstance(kg.store, MemoryKG)
    return kg


@pytest.fixture(params=["kb.txt", "embedded"])
def kg(request, metaqa, embedded_kg) -> Graph:
    return metaqa if request.param == "kb.txt" else embedded_kg


async def test_the_kb_is_complete(kg):
    info = await kg.info()
    assert (info.entities, info.triples, info.relations) == (43234, 133582, 9)
    assert {r.id.split(":")[1] for r in info.relation_sample} == {
        "starred_actors",
        "has_tags",
        "written_by",
        "release_year",
        "directed_by",
        "has_genre",
        "in_language",
        "has_imdb_rating",
        "has_imdb_votes",
    }


async def test_initialize_with_brackets_takes_the_marked_entity_case_sensitively(kg):
    hits = await kg.initialize("what movies did [Joely Richardson] star in")
    assert hits[0].entity.label == "Joely Richardson" and hits[0].match == "exact"
    tag = await kg.initialize("which movies are about [ginger rogers]")
    assert [h.entity.label for h in tag[:2]] == ["ginger rogers", "Ginger Rogers"]
    actor = await kg.initialize("which movies starred [Ginger Rogers]")
    assert [h.entity.label for h in actor[:2]] == ["Ginger Rogers", "ginger rogers"]


async def test_initialize_without_brackets_finds_names_in_the_question(kg):
    hits = await kg.initialize("who directed the movie The Matrix")
    assert hits[0].entity.label == "The Matrix" and hits[0].match == "mention"
    hits = await kg.initialize("what films did Tom Hanks act in")
    assert hits[0].entity.label == "Tom Hanks"  # the case-exact name before the tag 'tom hanks'


async def test_relations_both_directions_with_counts(kg):
    hanks = (await kg.search_entities("Tom Hanks"))[0].entity
    rels = {
        (r.id.split(":")[1], r.direction): r.count
        for r in (await kg.get_relations([hanks.id])).relations
    }
    assert all(d is Direction.backward for _, d in rels)  # relations run movie → person
    assert rels[("starred_actors", Direction.backward)] >= 30
    matrix = (await kg.search_entities("The Matrix"))[0].entity
    fwd = {r.id.split(":")[1]: r.count for r in (await kg.get_relations([matrix.id])).relations}
    assert fwd["starred_actors"] == 3 and fwd["release_year"] == 1 and fwd["has_genre"] == 1


async def test_paging_over_a_large_fan_out_has_no_gaps_or_duplicates(kg):
    drama = next(h.entity for h in await kg.search_entities("Drama") if h.entity.label == "Drama")
    (rel,) = [
        r for r in (await kg.get_relations([drama.id])).relations if r.id.endswith("has_genre")
    ]
    assert rel.count > 1000
    seen, offset = [], 0
    while True:
        page = await kg.get_edges([drama.id], rel.id, Direction.backward, limit=200, offset=offset)
        assert len(page.edges) <= 200
        seen += [e.target for e in page.edges]
        assert all(page.entities[e.target].label for e in page.edges)
        if not page.truncated:
            assert page.next_offset is None
            break
        offset = page.next_offset
    assert len(seen) == len(set(seen)) == rel.count


async def test_bad_input_is_rejected_with_the_right_error(kg):
    hanks = (await kg.search_entities("Tom Hanks"))[0].entity.id
    for malformed in ("", kg.name, f"{kg.name}:", f"{kg.name}:E 1", "1movies:E1"):
        with pytest.raises(InvalidInput, match="malformed ID"):
            await kg.get_relations([malformed])
    for unknown in (f"{kg.name}:E", f"{kg.name}:E-1", f"{kg.name}:E01", f"{kg.name}:TomHanks"):
        with pytest.raises(NotFound):
            await kg.get_relations([unknown])
    with pytest.raises(NotFound):
        await kg.get_relations([f"{kg.name}:E99999999"])
    with pytest.raises(UnknownKG):
        await kg.get_relations(["wd:Q42"])
    with pytest.raises(InvalidInput, match="at most 50"):
        await kg.get_relations([hanks] * 51)
    assert (
        await kg.get_relations([hanks] * 50)
    ).relations  # 50 is allowed (duplicates just add up)
    with pytest.raises(InvalidInput):
        await kg.get_relations([123])  # type: ignore[list-item]
    with pytest.raises(NotFound):
        await kg.get_edges([hanks], f"{kg.name}:not_a_relation")
    with pytest.raises(InvalidInput):
        await kg.initialize("   ")
    with pytest.raises(InvalidInput):
        await kg.search_entities("")


async def test_the_id_list_cap_follows_the_limits(metaqa):
    small = Graph(MemoryKG("metaqa", metaqa.store.index, limits=Limits(max_ids=2)))
    ids = [h.entity.id for h in await small.search_entities("Tom Hanks")][:2]
    await small.get_relations(ids)
    with pytest.raises(InvalidInput, match="at most 2"):
        await small.get_relations(ids + ids[:1])


def test_the_id_scheme_is_read_where_it_is_written_and_the_local_view_uses_it(tmp_path):
    """MemoryKG spells its entity IDs (node_id) and reads them back (node_of) in one place; its
    local view and the offline reasoner's view go through those, so an ID they accept is one the KG
    issued."""
    path = tmp_path / "kb.txt"
    path.write_text("Alpha|directed_by|Eli Fox\nBeta|directed_by|Eli Fox\n", encoding="utf-8")
    kg = open_file_kg("mv", path)
    view = kg.local_graph()
    assert view is kg.local_graph()  # built once
    assert [kg.node_of(kg.node_id(i)) for i in range(view.n)] == list(range(view.n))
    assert [view.entity_id(i) for i in range(view.n)] == [kg.node_id(i) for i in range(view.n)]
    for bad in (
        "mv:E007",
        "mv:E",
        "mv:E-1",
        "mv:E１",
        "other:E1",
        f"mv:E{view.n}",
        "mv:Ex",
        7,
        None,
    ):
        assert kg.node_of(bad) is None and view.node_of(bad) is None
