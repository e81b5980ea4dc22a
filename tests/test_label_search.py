"""Entity search quality and speed: exact before case-insensitive before fuzzy; no one-letter or
letters-only junk for names; extra words in the query cost little; a few milliseconds on MetaQA's
43k labels."""

from __future__ import annotations

import pytest

from tot_mcp.kg_adapters.label_index import LabelIndex


def labels_of(index: LabelIndex, hits) -> list[str]:
    return [index._labels[h.index] for h in hits]


def test_exact_case_beats_casefold_beats_fuzzy():
    idx = LabelIndex(["Ginger Rogers", "ginger rogers", "Ginger Rogerz", "Roger Moore"])
    hits = idx.search("ginger rogers")
    assert [(labels_of(idx, [h])[0], h.match) for h in hits[:3]] == [
        ("ginger rogers", "exact"),
        ("Ginger Rogers", "casefold"),
        ("Ginger Rogerz", "fuzzy"),
    ]
    assert hits[0].score == 1.0 and hits[1].score == 0.95 and hits[2].score < 0.95


def test_short_labels_do_not_match_longer_names():
    idx = LabelIndex(["O", "M", "Tom Hanks", "r", "Hank"])
    assert labels_of(idx, idx.search("tom hank"))[:1] == ["Tom Hanks"]
    assert not {"O", "M", "r"} & set(labels_of(idx, idx.search("tom hank")))


def test_priors_break_ties_between_equal_matches():
    idx = LabelIndex(["matrix", "The Matrix"], priors=[2, 40])
    assert labels_of(idx, idx.search("matrix reloaded movie"))[0] == "The Matrix"
    idx = LabelIndex(["matrix", "The Matrix"], priors=[40, 2])
    assert labels_of(idx, idx.search("matrix reloaded movie"))[0] == "matrix"


def test_nothing_similar_gives_nothing():
    idx = LabelIndex(["Tom Hanks", "The Matrix"])
    assert idx.search("quantum chromodynamics") == []
    assert idx.search("?!") == []
    assert idx.search("tom hanks", limit=0) == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("tom hank", {"Tom Hanks", "tom hanks"}),
        ("keanu reevs", {"Keanu Reeves", "keanu reeves"}),
        ("matrix reloaded movie", {"The Matrix"}),
        ("who directed the matrix reloaded", {"The Matrix"}),
        ("what movies did Joely Richardson star in", {"Joely Richardson"}),
        ("the matrix", {"The Matrix"}),
    ],
)
async def test_search_on_the_embedded_kg_puts_the_intended_entity_first(
    embedded_kg, query, expected
):
    hits = await embedded_kg.search_entities(query, limit=5)
    top = [h.entity.label for h in hits[: len(expected)]]
    assert set(top) == expected, [(h.entity.label, h.score, h.match) for h in hits]
    assert all(len(h.entity.label) > 2 for h in hits), (
        "one- or two-letter labels are not fuzzy matches"
    )


async def test_initialize_keeps_brackets_exact_first(embedded_kg):
    hits = await embedded_kg.initialize("movies tagged [ginger rogers]")
    assert [(h.entity.label, h.match) for h in hits[:2]] == [
        ("ginger rogers", "exact"),
        ("Ginger Rogers", "casefold"),
    ]
    assert all(h.mention == "ginger rogers" for h in hits)
