"""Adaptive rerank as an entity linker: candidates fused from the label index and two embedding
models, the second stage, the broaden/deepen loop, its termination and its second-stage backends."""

from __future__ import annotations

import pytest

from retrieval_fixtures import ScriptedLLM, make_kg, make_service
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.strategies.benchmarks.metrics import ranking_metrics
from tot_mcp.strategies.global_view import RetrievalUnavailable
from tot_mcp.strategies.rerank import RerankConfig, adaptive_rerank


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rerank")
    kg = make_kg(tmp)
    return kg, make_service(tmp / "cache").resources_now(kg)


Q = "films directed by Ivo Tn"  # unmarked and misspelt


async def test_a_misspelt_unmarked_mention_is_linked_first(setup):
    kg, res = setup
    out = await adaptive_rerank(kg, Q, res, RerankConfig(max_iterations=0, top_k=5))
    assert out.models == {"lexical": 1.0, "minilm": 0.5, "static": 0.25}
    assert out.results[0].label == "Ivo Tan" and out.results[0].source == "rerank"
    assert out.deepen_backend == "features"
    misspelt_film = await adaptive_rerank(
        kg, "who starred in Red Sumit", res, RerankConfig(max_iterations=0)
    )
    assert misspelt_film.results[0].label == "Red Summit"


async def test_a_relation_word_is_not_taken_for_the_mention(tmp_path):
    """ "director" names a relation here (directed_by) and is also a tag; the misspelt name must win
    over the exact tag, because a span that names a relation is rarely the question's entity."""
    from tot_mcp.kg_adapters.memory import MemoryKG
    from tot_mcp.kg_adapters.triples_file import load_triples_file

    from retrieval_fixtures import TRIPLES

    path = tmp_path / "kb.txt"
    path.write_text(
        TRIPLES + "Silent Meadow|has_tags|director\nBlue Canyon|has_tags|director\n",
        encoding="utf-8",
    )
    kg = Graph(MemoryKG("tags", load_triples_file(path)))
    res = make_service(tmp_path / "cache").resources_now(kg)
    out = await adaptive_rerank(
        kg, "which films was Hana Kmi the director of", res, RerankConfig(max_iterations=0)
    )
    assert out.results[0].label == "Hana Kim", [r.label for r in out.results[:3]]


@pytest.mark.parametrize("max_it", [1, 3, 6])
async def test_loop_terminates_within_max_iterations(setup, max_it):
    kg, res = setup
    out = await adaptive_rerank(
        kg, Q, res, RerankConfig(quality_threshold=2.0, max_iterations=max_it, deepen_k=2)
    )
    assert len(out.iterations) == max_it and out.stopped == "max_iterations"
    eps = [it.epsilon for it in out.iterations]
    assert eps == sorted(eps, reverse=True)  # exploration decays


async def test_exploration_rate_chooses_broaden_or_deepen(setup):
    kg, res = setup
    wide = await adaptive_rerank(
        kg,
        Q,
        res,
        RerankConfig(quality_threshold=2.0, max_iterations=3, exploration=1.0, decay=1.0),
    )
    assert [it.action for it in wide.iterations] == ["broaden"] * 3
    deep = await adaptive_rerank(
        kg,
        Q,
        res,
        RerankConfig(quality_threshold=2.0, max_iterations=2, exploration=0.0, deepen_k=2),
    )
    assert deep.iterations[0].action == "deepen" and deep.iterations[0].deepen_backend == "features"
    assert deep.iterations[0].candidates >= 4


async def test_quality_threshold_stops_early(setup):
    kg, res = setup
    out = await adaptive_rerank(kg, Q, res, RerankConfig(quality_threshold=-1.0, max_iterations=5))
    assert out.stopped == "quality" and out.iterations == []


async def test_llm_second_stage_and_its_fallback(setup):
    kg, res = setup
    llm = ScriptedLLM(['[{"n": 1, "score": 2}, {"n": 2, "score": 9}]'])
    out = await adaptive_rerank(kg, Q, res, RerankConfig(max_iterations=0, deepen_k=3), llm=llm)
    assert (
        out.deepen_backend == "llm"
        and llm.usage.calls == 1
        and out.results[0].score == pytest.approx(0.9)
    )
    assert "Which of these knowledge-graph entities is the question about" in llm.prompts[0]
    junk = await adaptive_rerank(
        kg, Q, res, RerankConfig(max_iterations=0), llm=ScriptedLLM(["no"])
    )
    assert (
        junk.deepen_backend == "features" and junk.results[0].label == "Ivo Tan"
    )  # documented fallback


async def test_bad_configuration_is_a_clear_error(setup):
    kg, res = setup
    with pytest.raises(RetrievalUnavailable, match="unknown candidate model"):
        await adaptive_rerank(kg, Q, res, RerankConfig(weights={"bert": 1.0}))
    with pytest.raises(RetrievalUnavailable, match="not a directory"):
        await adaptive_rerank(
            kg, Q, res, RerankConfig(max_iterations=0, cross_encoder_path="/nonexistent/ce")
        )


def test_ranking_metrics():
    m = ranking_metrics(["a", "B", "c", "b"], ["b", "d"], k=3)
    assert m["hits@1"] == 0.0 and m["recall@3"] == 0.5 and m["mrr"] == 0.5
    assert 0 < m["ndcg@3"] < 1
    assert ranking_metrics(["x_y"], ["X Y"])["hits@1"] == 1.0
