"""The on-disk SQLite FTS5 label index: exact, case-insensitive, prefix and BM25 search, linking,
durability."""

from __future__ import annotations

import sqlite3

import pytest

from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.fts_index import FtsLabelIndex, label_index_path

NAMES = [
    ("urn:e:1", "Maria Okafor", "label"),
    ("urn:e:2", "Maria Okafor II", "label"),
    ("urn:e:3", "Mario Okafor", "label"),
    ("urn:e:4", "The Silent Harbour (film)", "label"),
    ("urn:e:5", "The Silent Harbour (novel)", "label"),
    ("urn:e:6", "Silent Harbour Award", "label"),
    ("urn:e:7", "Drama", "label"),
    ("urn:e:8", "Pedro Almodóvar", "label"),
    ("urn:e:8", "Almodóvar", "alias"),
    ("urn:e:9", "drama", "label"),
    ("_:b1", "Marianne", "label"),
]


@pytest.fixture
def index(tmp_path):
    ix = FtsLabelIndex.create(tmp_path / "labels.sqlite")
    assert ix.add(NAMES) == len(NAMES)
    ix.optimize()
    ix.close()
    ro = FtsLabelIndex.open(tmp_path / "labels.sqlite")
    yield ro
    ro.close()


def keys(hits):
    return [h.key for h in hits]


def test_exact_label_ranks_first_then_case_insensitive(index):
    hits = index.search("Drama")
    assert [(h.key, h.score, h.match) for h in hits[:2]] == [
        ("urn:e:7", 1.0, "exact"),
        ("urn:e:9", 0.95, "casefold"),
    ]
    assert index.search("maria okafor")[0].key == "urn:e:1"
    assert index.search("maria okafor")[0].match == "casefold"


def test_accents_and_punctuation_do_not_matter(index):
    assert index.search("pedro almodovar")[0].key == "urn:e:8"
    assert index.search("The Silent Harbour film")[0].key == "urn:e:4"


def test_prefix_completes_the_last_word_and_keeps_shorter_names_first(index):
    hits = index.search("Maria Oka")
    assert keys(hits)[:2] == ["urn:e:1", "urn:e:2"]
    assert {h.match for h in hits[:2]} == {"prefix"}
    assert "urn:e:3" not in keys(hits[:2])  # "Mario" does not start with "Maria"
    assert keys(index.search("Mari"))[:1] == ["_:b1"] or "_:b1" in keys(index.search("Mari"))


def test_bm25_finds_names_sharing_some_words_ranked_by_relevance(index):
    hits = index.search("harbour award ceremony")
    assert hits[0].key == "urn:e:6" and hits[0].match == "bm25"
    assert {"urn:e:4", "urn:e:5"} <= set(keys(hits))
    assert all(0 < h.score <= 0.8 for h in hits)


def test_one_hit_per_entity_and_aliases_match(index):
    hits = index.search("Almodóvar")
    assert keys(hits).count("urn:e:8") == 1 and hits[0].key == "urn:e:8"


def test_nothing_matching_and_fts_syntax_in_queries_are_safe(index):
    assert index.search("zzzz qqqq") == []
    assert index.search('"') == [] and index.search("*") == []
    for nasty in ['Maria" OR "x', "NEAR(a b)", "Drama AND", "-Drama", "a:b", "(("]:
        index.search(nasty)  # must not raise an FTS syntax error
    assert index.search("Drama", limit=0) == []


def test_link_prefers_bracketed_mentions_then_longest_names_in_the_question(index):
    hits = index.link("who directed [the silent harbour (film)]")
    assert hits[0].key == "urn:e:4" and hits[0].mention == "the silent harbour (film)"
    hits = index.link("what did maria okafor ii write")
    assert hits[0].key == "urn:e:2" and hits[0].match == "mention"
    assert "urn:e:1" not in keys(hits)  # the shorter name is inside the linked one


def test_re_adding_rows_is_a_no_op(tmp_path):
    ix = FtsLabelIndex.create(tmp_path / "l.sqlite")
    assert ix.add(NAMES[:5]) == 5
    assert ix.add(NAMES[:7]) == 2  # a replayed chunk adds only what is new
    assert ix.count() == 7
    # the full-text side was not fed twice either: three names contain "okafor", each indexed once
    assert ix._rows("SELECT count(*) FROM names_fts WHERE names_fts MATCH 'okafor'", ()) == [(3,)]
    ix.close()


def test_missing_or_foreign_files_are_clear_errors(tmp_path):
    with pytest.raises(InvalidInput, match="label index not found"):
        FtsLabelIndex.open(tmp_path / "nope.sqlite")
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t(x)").connection.commit()
    with pytest.raises(InvalidInput, match="not a label index"):
        FtsLabelIndex.open(other)
    assert FtsLabelIndex.for_store(tmp_path / "store") is None
    assert label_index_path(tmp_path / "store") == tmp_path / "store.labels.sqlite"
