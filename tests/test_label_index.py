"""Entity search ranking on the embedded MetaQA KG, pinned: the fuzzy pass was made cheaper
(precomputed IDF, boolean candidate masks, joined label words kept) and must still return exactly
these hits, scores and kinds — including fuzzy hits after an exact one when the limit has room."""

from __future__ import annotations

import pytest

PINNED = {
    "keanu reevs": [
        ("keanu reeves", 0.8626, "bm25"),
        ("Keanu Reeves", 0.8626, "bm25"),
        ("Keane", 0.6, "bm25"),
    ],
    "tom hank": [
        ("Tom Hanks", 0.8471, "fuzzy"),
        ("tom hanks", 0.8471, "fuzzy"),
        ("Tom Shankland", 0.6857, "fuzzy"),
        ("Tom Horn", 0.675, "fuzzy"),
        ("Tom Holland", 0.6632, "fuzzy"),
    ],
    "Ginger Rogers": [
        ("Ginger Rogers", 1.0, "exact"),
        ("ginger rogers", 0.95, "casefold"),
        ("Roger Dodger", 0.648, "fuzzy"),
        ("Roger Nygard", 0.648, "fuzzy"),
        ("The Ringer", 0.6432, "bm25"),
    ],
    "matrix reloaded movie": [
        ("The Matrix", 0.7414, "bm25"),
        ("matrix", 0.7414, "bm25"),
        ("Loaded", 0.6499, "bm25"),
    ],
    "steven spielberg": [
        ("steven spielberg", 1.0, "exact"),
        ("Steven Spielberg", 0.95, "casefold"),
        ("spielberg", 0.793, "bm25"),
        ("Steven Fierberg", 0.7548, "fuzzy"),
        ("Steven Silver", 0.7448, "fuzzy"),
    ],
}


@pytest.mark.parametrize("query", list(PINNED))
def test_search_returns_the_same_hits_scores_and_kinds_as_before(embedded_kg, query):
    index = embedded_kg.store._labels
    hits = index.search(query, 5)
    assert [(index._labels[h.index], h.score, h.match) for h in hits] == PINNED[query]


def test_a_bracketed_mention_links_exact_then_casefold_then_fuzzy(embedded_kg):
    index = embedded_kg.store._labels
    hits = index.link("movies tagged [ginger rogers]", 4)
    assert [(index._labels[h.index], h.score, h.match, h.mention) for h in hits] == [
        ("ginger rogers", 1.0, "exact", "ginger rogers"),
        ("Ginger Rogers", 0.95, "casefold", "ginger rogers"),
        ("Roger Dodger", 0.648, "fuzzy", "ginger rogers"),
        ("Roger Nygard", 0.648, "fuzzy", "ginger rogers"),
    ]


@pytest.mark.parametrize("query", list(PINNED))
def test_a_repeated_search_is_answered_from_recent_answers_with_the_same_hits_at_any_shorter_limit(
    embedded_kg, query
):
    index = embedded_kg.store._labels
    index._recent.clear()
    longer = index.search(query, 8)
    assert index._recent[query][0] == 8
    for limit in (1, 3, 5, 8):
        assert index.search(query, limit) == index._search(
            query, limit
        )  # from the remembered answer ...
    assert (
        index.search(query, 12) == index._search(query, 12) and index._recent[query][0] == 12
    )  # ... or anew
    assert longer == index.search(query, 8)
