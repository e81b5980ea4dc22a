"""Adaptive rerank: multi-model fusion, the broaden/deepen loop, its termination and its deepening backends."""

from __future__ import annotations

import pytest

from retrieval_fixtures import ScriptedLLM, make_kg, make_service
from strategies.rerank import RerankConfig, adaptive_rerank
from strategies.benchmarks.metrics import ranking_metrics
from strategies.local_graph import RetrievalUnavailable


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rerank")
    kg = make_kg(tmp)
    return kg, make_service(tmp / "cache").resources_now(kg)


Q = "films directed by Ivo Tan"


async def test_fuses_both_models_and_finds_the_answers(setup):
    kg, res = setup
    out = await adaptive_rerank(kg, Q, res, RerankConfig(max_iterations=0, top_k=6))
    assert out.models == {"minilm": 1.0, "static": 0.35}
    assert out.iterations == [] and out.stopped in ("quality", "max_iterations")
    assert {"Blue Canyon", "Red Summit"} & {r.label for r in out.results}


@pytest.mark.parametrize("max_it", [1, 3, 6])
async def test_loop_terminates_within_max_iterations(setup, max_it):
    kg, res = setup
    out = await adaptive_rerank(kg, Q, res, RerankConfig(quality_threshold=2.0, max_iterations=max_it))
    assert len(out.iterations) == max_it and out.stopped == "max_iterations"
    eps = [it.epsilon for it in out.iterations]
    assert eps == sorted(eps, reverse=True)  # exploration decays


async def test_exploration_rate_chooses_broaden_or_deepen(setup):
    kg, res = setup
    wide = await adaptive_rerank(kg, Q, res, RerankConfig(quality_threshold=2.0, max_iterations=3, exploration=1.0,
                                                          decay=1.0))
    assert [it.action for it in wide.iterations] == ["broaden"] * 3 and wide.deepen_backend is None
    deep = await adaptive_rerank(kg, Q, res, RerankConfig(quality_threshold=2.0, max_iterations=2, exploration=0.0))
    assert deep.iterations[0].action == "deepen" and deep.deepen_backend == "bi-encoder"
    assert deep.results[0].source == "rerank"


async def test_quality_threshold_stops_early(setup):
    kg, res = setup
    out = await adaptive_rerank(kg, Q, res, RerankConfig(quality_threshold=-1.0, max_iterations=5))
    assert out.stopped == "quality" and out.iterations == []


async def test_llm_deepening_and_its_fallback(setup):
    kg, res = setup
    llm = ScriptedLLM(['[{"n": 1, "score": 2}, {"n": 2, "score": 9}]'])
    out = await adaptive_rerank(kg, Q, res, RerankConfig(quality_threshold=2.0, max_iterations=1, exploration=0.0,
                                                         deepen_k=3), llm=llm)
    assert out.deepen_backend == "llm" and llm.usage.calls == 1 and out.results[0].score == pytest.approx(0.9)
    junk = await adaptive_rerank(kg, Q, res, RerankConfig(quality_threshold=2.0, max_iterations=1, exploration=0.0),
                                 llm=ScriptedLLM(["no"]))
    assert junk.deepen_backend == "bi-encoder"  # documented fallback for an unusable LLM answer


async def test_bad_configuration_is_a_clear_error(setup):
    kg, res = setup
    with pytest.raises(RetrievalUnavailable, match="unknown embedding"):
        await adaptive_rerank(kg, Q, res, RerankConfig(weights={"bert": 1.0}))
    with pytest.raises(RetrievalUnavailable, match="not a directory"):
        await adaptive_rerank(kg, Q, res, RerankConfig(quality_threshold=2.0, max_iterations=1, exploration=0.0,
                                                       cross_encoder_path="/nonexistent/ce"))


def test_ranking_metrics():
    m = ranking_metrics(["a", "B", "c", "b"], ["b", "d"], k=3)
    assert m["hits@1"] == 0.0 and m["recall@3"] == 0.5 and m["mrr"] == 0.5
    assert 0 < m["ndcg@3"] < 1
    assert ranking_metrics(["x_y"], ["X Y"])["hits@1"] == 1.0
    assert ranking_metrics([], ["a"])["mrr"] == 0.0
