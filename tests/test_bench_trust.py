"""bench/trust.py's question generator on the embedded KG and 16 MetaQA dev lines (fixture
tests/fixtures/trust_questions.txt, gold lists cut to three): the same seed builds the same
questions; its made-up names are no label of the KG; its missing relations match no relation of the
KG; typo and bare questions keep their gold. No method is run (``python -m bench.trust`` does that).

    pytest tests/test_bench_trust.py     # a few seconds: the embedded KG and its name index
"""

from __future__ import annotations

import asyncio
import re

import pytest

from bench import trust
from conftest import TESTS

FIXTURE = trust.KB(
    "movies",
    (("movies", "embedded"),),
    ((str(TESTS / "fixtures" / "trust_questions.txt"), "metaqa"),),
    embedded=True,
)
QUOTA = {kind: 6 for kind in trust.KINDS}


@pytest.fixture(scope="module")
def built(embedded_kg):
    runs = [asyncio.run(trust.build_kb(FIXTURE, [embedded_kg], QUOTA, seed=7)) for _ in range(2)]
    return runs, embedded_kg


def test_same_seed_same_questions(built, embedded_kg):
    (a, b), _ = built
    assert a.rows == b.rows
    assert all(len(a.rows[kind]) == 6 for kind in trust.KINDS)
    other = asyncio.run(trust.build_kb(FIXTURE, [embedded_kg], QUOTA, seed=8))
    assert other.rows != a.rows


def test_made_up_names_are_not_labels(built):
    (rows, _), kg = built
    made_up = rows.rows["made_up"]
    assert {r["shares_word"] for r in made_up} == {True, False}
    for r in made_up:
        assert f"[{r['name']}]" in r["question"] and r["answers"] == []
        assert not asyncio.run(kg.find_by_label(r["name"]))
        assert not asyncio.run(trust.is_label([kg], r["name"]))


def test_missing_relations_match_no_relation(built):
    (rows, _), kg = built
    names = [n.rsplit(":", 1)[-1].lower() for n in kg.relation_vocabulary()]
    names += [label.lower() for label in kg.relation_labels().values()]
    by_template = {p.template: p for p in trust.PHRASINGS}
    for r in rows.rows["missing_relation"]:
        keys = by_template[r["phrasing"]].keys
        assert not [(k, n) for k in keys for n in names if k in n], r["question"]
    assert "where was {} born" in {r["phrasing"] for r in rows.rows["missing_relation"]} | {
        p.template for p in trust.missing_phrasings(trust.vocabulary_words([kg]))
    }
    assert "what languages does {} speak" not in {  # movies have in_language: not "missing"
        p.template for p in trust.missing_phrasings(trust.vocabulary_words([kg]))
    }


def test_typo_and_bare_keep_gold(built):
    (rows, _), _ = built
    sources = {s.id: s for s in trust.load_sources(FIXTURE)}
    for r in rows.rows["typo"]:
        src = sources[r["from"]]
        assert r["answers"] == src.answers and r["name"] != src.mention
        assert abs(len(r["name"]) - len(src.mention)) <= 1
    for r in rows.rows["bare"]:
        assert not re.search(r"[\[\]]", r["question"])
        assert r["answers"] == sources[r["from"]].answers
