"""Answer metrics on hand-computed examples (labels compared after kg_adapters.text.key
normalisation)."""

from __future__ import annotations

import pytest

from tot_mcp.strategies.benchmarks.metrics import answer_f1, em_in, hits_at_1, recall_at
from tot_mcp.strategies.benchmarks.runner import RunRecord, summarize


def test_hits_at_1_looks_only_at_the_top_answer_and_normalises():
    assert hits_at_1(["lana  WACHOWSKI", "x"], ["Lana Wachowski"]) == 1.0
    assert hits_at_1(["x", "Lana Wachowski"], ["Lana Wachowski"]) == 0.0
    assert hits_at_1([], ["a"]) == 0.0
    assert hits_at_1(["enno iii"], ["enno_iii"]) == 1.0


def test_answer_set_f1():
    # predicted {a, b, c}, gold {b, c, d, e}: P = 2/3, R = 2/4, F1 = 2·(2/3·1/2)/(2/3+1/2) = 4/7
    assert answer_f1(["a", "b", "c"], ["b", "c", "d", "e"]) == pytest.approx(4 / 7)
    assert answer_f1(["a", "A"], ["a"]) == 1.0
    assert answer_f1([], ["a"]) == 0.0 and answer_f1(["x"], ["a"]) == 0.0


def test_em_in_is_whole_token_containment_of_any_gold_answer():
    assert em_in("The director was Jan de Bont.", [], ["Jan de Bont"]) == 1.0
    assert em_in("Jan de Bontley", [], ["Jan de Bont"]) == 0.0  # not a whole-token match
    assert em_in("", ["Speed"], ["speed", "x"]) == 1.0  # predicted labels count as answer text
    assert em_in("no idea", [], ["Speed"]) == 0.0


def test_recall_at_10():
    retrieved = [f"e{i}" for i in range(20)]
    assert recall_at(retrieved, ["e3", "e15"], 10) == 0.5
    assert recall_at([], ["a"]) == 0.0


def test_summary_averages_over_all_records_including_errors():
    rs = [
        RunRecord(
            id="1",
            question="q",
            gold=["a"],
            hits1=1,
            f1=1,
            em_in=1,
            correct=True,
            latency_s=1.0,
            llm_calls=3,
        ),
        RunRecord(
            id="2", question="q", gold=["a"], hits1=0, f1=0.5, em_in=1, latency_s=3.0, llm_calls=1
        ),
        RunRecord(
            id="3",
            question="q",
            gold=["a"],
            error="topic entity 'x' is not in the KG",
            latency_s=2.0,
        ),
    ]
    s = summarize(rs)
    assert (s.n, s.errors, s.llm_calls) == (3, 1, 4)
    assert (
        s.hits1 == pytest.approx(1 / 3)
        and s.f1 == pytest.approx(0.5)
        and s.em_in == pytest.approx(2 / 3)
    )
    assert s.median_latency_s == 2.0 and s.mean_latency_s == 2.0 and s.recall10 is None
