"""A relation may be named instead of given by ID: its local name or label, over every configured
KG, never guessed when two KGs have it (kg_adapters/relation_names.py)."""

from __future__ import annotations

import pytest

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.files import open_file_kg
from tot_mcp.kg_adapters.routing import LinkedKG
from tot_mcp.kg_adapters.sameness import Linker
from tot_mcp.kg_adapters.relation_names import MAX_LISTED, RelationNames


def kg(tmp_path, name, text):
    path = tmp_path / f"{name}.txt"
    path.write_text(text, encoding="utf-8")
    return Graph(open_file_kg(name, path))


@pytest.fixture
def two(tmp_path):
    kgs = {
        "films": kg(tmp_path, "films", "Heat|directed_by|Michael Mann\nHeat|has_genre|Crime\n"),
        "books": kg(
            tmp_path, "books", "Dune|written_by|Frank Herbert\nDune|has_genre|Science fiction\n"
        ),
    }
    return LinkedKG(kgs, Linker.configured(kgs, [], None))


async def test_a_name_or_a_label_resolves_to_the_one_relation_it_names(two):
    names = await RelationNames.of(two)
    assert names.resolve("directed_by") == "films:directed_by"
    assert names.resolve("written by") == "books:written_by"  # the label, any case
    assert names.resolve("films:has_genre") == "films:has_genre"  # an ID stays as it is


async def test_a_name_two_kgs_share_is_refused_with_both_ids(two):
    names = await RelationNames.of(two)
    with pytest.raises(
        InvalidInput,
        match="names 2 relations: books:has_genre, films:has_genre|"
        "names 2 relations: films:has_genre, books:has_genre",
    ):
        names.resolve("has_genre")
    assert (
        "films:has_genre" in names.listing() and "directed_by" in names.listing()
    )  # shown by ID, not by name


async def test_an_unknown_name_lists_what_there_is(two):
    names = await RelationNames.of(two)
    with pytest.raises(
        InvalidInput, match=r"no relation named 'genre'; relations: films: .*directed_by"
    ):
        names.resolve("genre")


async def test_a_large_vocabulary_is_not_listed(tmp_path):
    lines = "".join(f"A|rel_{i}|B\n" for i in range(MAX_LISTED + 1))
    big = kg(tmp_path, "big", lines)
    names = await RelationNames.of(big)
    assert names.listing() == "" and names.resolve("rel_7") == "big:rel_7"


async def test_a_kg_that_lists_only_a_sample_is_named_not_listed(tmp_path):
    """Wikidata's info() samples 20 of ~12,000 properties: listing those 20 would read as its whole
    vocabulary."""
    from tot_mcp.kg_adapters.base import KnowledgeGraph
    from tot_mcp.kg_adapters.models import Direction, KGInfo, Relation

    films = kg(tmp_path, "films", "Heat|directed_by|Michael Mann\n")

    class Sampled(
        KnowledgeGraph
    ):  # only what RelationNames reads: no vocabulary, a full info() sample
        async def info(self):
            rels = [
                Relation(
                    id=f"wd:P{i}",
                    label=f"property {i}",
                    inverse_label=f"inverse of property {i}",
                    direction=Direction.forward,
                )
                for i in range(20)
            ]
            return KGInfo(name="wd", backend="sparql", relation_sample=rels)

        initialize = search_entities = relations = edges = adjacent_ids = None  # type: ignore
        labels = describe_entity = find = None  # type: ignore

    wd = Graph(Sampled("wd"))
    linked = LinkedKG({"films": films, "wd": wd}, Linker({"films": films, "wd": wd}, []))
    names = await RelationNames.of(linked)
    assert (
        names.listing()
        == "films: directed_by; wd: too many to list (get_relations(search=...) finds them)"
    )
    assert (
        names.resolve("directed_by") == "films:directed_by" and names.resolve("wd:P31") == "wd:P31"
    )


async def test_a_kg_that_does_not_answer_is_named_and_asked_again_next_time(tmp_path):
    """An endpoint down when initialize first listed the relations used to be kept as a KG with
    none, for the server's lifetime: a model then read 'no catalog relations' and the path tools
    refused the catalog's names."""
    from tot_mcp.kg_adapters.sparql import EndpointRegistry, open_sparql_kg
    from net_helpers import free_port

    films = kg(tmp_path, "films", "Heat|directed_by|Michael Mann\n")
    down = Graph(
        open_sparql_kg(
            "catalog",
            "sparql",
            f"http://127.0.0.1:{free_port()}/query",
            registry=EndpointRegistry(),
            retries=0,
            backoff=0.01,
        )
    )
    try:
        names = await RelationNames.of(
            LinkedKG(
                {"films": films, "catalog": down}, Linker({"films": films, "catalog": down}, [])
            )
        )
    finally:
        await down.aclose()
    assert (
        names.listing()
        == "films: directed_by; catalog: not listed (the KG did not answer; initialize again later)"
    )
    assert (
        "catalog" not in names.by_kg and not names.complete
    )  # so Runtime.relation_names asks again
    assert (
        names.resolve("catalog:genre") == "catalog:genre"
        and names.resolve("directed_by") == "films:directed_by"
    )
