"""Local RDF files: every syntax gives the same graph; labels, descriptions and aliases are metadata
(not edges) chosen by language preference; blank nodes get stable keys; bad files are clear errors;
big files go to a store."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.files import open_file_kg
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.oxigraph_store import OxigraphKG
from tot_mcp.kg_adapters.rdf_file import METADATA_PREDICATES, load_rdf_file

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FORMATS = ["ttl", "nt", "nt.gz", "nq", "rdf", "jsonld", "trig"]


def graph(path: Path, **kw) -> set[tuple]:
    """The file's edges as (subject, relation, object) keys, blank nodes replaced by their
    labels."""
    idx = load_rdf_file(path, **kw)
    name = lambda i: idx.nodes[i].label if idx.nodes[i].key.startswith("_:") else idx.nodes[i].key  # noqa: E731
    return {
        (name(s), idx.rel_keys[r], name(o), idx.nodes[o].datatype, idx.nodes[o].lang)
        for s, rels in enumerate(idx.out)
        for r, objs in rels.items()
        for o in objs
    }


def metadata(path: Path) -> dict[str, tuple]:
    idx = load_rdf_file(path)
    return {
        n.key: (n.label, n.description, tuple(n.aliases))
        for n in idx.nodes
        if not n.key.startswith("_:")
    }


@pytest.mark.parametrize("ext", FORMATS[1:])
def test_every_syntax_gives_the_same_graph_and_names(ext):
    reference = FIXTURES / "local_movies.ttl"
    other = FIXTURES / f"local_movies.{ext}"
    assert graph(other) == graph(reference)
    assert metadata(other) == metadata(reference)


def test_label_triples_are_metadata_not_relations():
    idx = load_rdf_file(FIXTURES / "local_movies.ttl")
    assert idx.triples == 18
    assert not set(idx.rel_keys) & METADATA_PREDICATES
    labels = dict(zip(idx.rel_local_ids, idx.rel_labels, strict=True))
    assert labels["directedBy"] == "directed by"  # from the predicate's own rdfs:label
    assert labels["releaseYear"] == "release year"  # humanized local name


def test_language_preference_picks_labels_and_falls_back_to_untagged_then_any(tmp_path):
    en = {n.key: n.label for n in load_rdf_file(FIXTURES / "local_movies.ttl").nodes}
    assert en["http://example.org/movies/TheMatrix"] == "The Matrix"
    de = {
        n.key: n.label for n in load_rdf_file(FIXTURES / "local_movies.ttl", languages=["de"]).nodes
    }
    assert de["http://example.org/movies/TheMatrix"] == "Matrix"
    assert de["http://example.org/movies/SandraBullock"] == "Sandra Bullock"  # untagged next
    only_fr = tmp_path / "fr.ttl"
    only_fr.write_text(
        '<http://x/a> <http://www.w3.org/2000/01/rdf-schema#label> "Pomme"@fr ; <http://x/p> '
        "<http://x/b> .\n"
    )
    assert load_rdf_file(only_fr).nodes[0].label == "Pomme"  # any language last
    nameless = {n.key: n.label for n in load_rdf_file(only_fr).nodes}
    assert nameless["http://x/b"] == "b"  # no label: the IRI's local name


def test_blank_nodes_get_stable_keys_across_loads():
    a = [n.key for n in load_rdf_file(FIXTURES / "local_movies.ttl").nodes]
    b = [n.key for n in load_rdf_file(FIXTURES / "local_movies.ttl").nodes]
    assert a == b and "_:b0" in a


def test_a_triple_in_two_named_graphs_counts_once():
    kg = Graph(open_file_kg("mv", FIXTURES / "local_movies.nq"))
    keanu = asyncio.run(kg.search_entities("Keanu Reeves"))[0].entity.id
    assert [(r.label, r.count) for r in asyncio.run(kg.get_relations([keanu])).relations] == [
        ("starring", 3)
    ]


def test_format_option_overrides_the_extension(tmp_path):
    odd = tmp_path / "movies.data"
    shutil.copy(FIXTURES / "local_movies.ttl", odd)
    with pytest.raises(InvalidInput, match="unknown file type"):
        open_file_kg("mv", odd)
    assert asyncio.run(Graph(open_file_kg("mv", odd, format="ttl")).info()).triples == 18
    with pytest.raises(InvalidInput, match="unknown RDF format"):
        open_file_kg("mv", odd, format="yaml")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("broken.ttl", "<http://x/a> <http://x/p> ."),
        ("broken.rdf", "<rdf:RDF"),
        ("broken.jsonld", "{not json"),
    ],
)
def test_a_file_that_does_not_parse_is_an_error_naming_it(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InvalidInput, match=rf"{name}: could not parse as"):
        open_file_kg("x", path)


def test_bad_options_are_errors():
    ttl = FIXTURES / "local_movies.ttl"
    with pytest.raises(InvalidInput, match="unknown option"):
        open_file_kg("x", ttl, colour="blue")
    with pytest.raises(
        InvalidInput, match="backend: Input should be 'auto', 'memory' or 'oxigraph'"
    ):
        open_file_kg("x", ttl, backend="postgres")
    with pytest.raises(InvalidInput, match="needs backend oxigraph"):
        open_file_kg("x", ttl, backend="memory", store="memory")
    with pytest.raises(InvalidInput, match="max_memory_mb"):
        open_file_kg("x", ttl, max_memory_mb=-1)
    with pytest.raises(InvalidInput, match="languages"):
        open_file_kg("x", ttl, languages=[1, 2])
    with pytest.raises(InvalidInput, match="no such file"):
        open_file_kg("x", FIXTURES / "nope.ttl")


def test_files_over_the_thresholds_go_to_a_store(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    small = open_file_kg("mv", FIXTURES / "local_movies.nt")
    assert isinstance(small, MemoryKG)
    by_count = open_file_kg("mv", FIXTURES / "local_movies.nt", max_memory_triples=10)
    assert isinstance(by_count, OxigraphKG)
    assert list((tmp_path / "cache" / "tot-mcp" / "stores").iterdir())  # the default store location
    del by_count
    by_size = open_file_kg("mv", FIXTURES / "local_movies.ttl", max_memory_mb=0.001)
    assert isinstance(by_size, OxigraphKG)
    assert (
        asyncio.run(Graph(by_size).search_entities("Keanu Reeves"))[0].entity.label
        == "Keanu Reeves"
    )
