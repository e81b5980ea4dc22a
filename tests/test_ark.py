"""ARK adaptive BFS/DFS: the decision loop, its variants, safe handling of a bad judge, and the
fixed baselines."""

from __future__ import annotations

import pytest

from tot_mcp.kg_adapters.errors import InvalidInput
from retrieval_fixtures import ScriptedLLM, make_kg, make_service, node
from tot_mcp.strategies.ark import ArkConfig, ark_search, fixed_traversal
from tot_mcp.strategies.ark import LLMArkJudge, OfflineArkJudge, parse_ark_decision
from tot_mcp.strategies.llm.base import LLMError


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ark")
    kg = make_kg(tmp)
    return kg, make_service(tmp / "cache").resources_now(kg)


def labels(result):
    return [r.label for r in result.results]


async def test_sufficient_at_depth_zero_returns_the_lexical_results_and_asks_once(setup):
    kg, res = setup
    llm = ScriptedLLM(['{"decision": "sufficient"}'])
    out = await ark_search(kg, "films directed by [Ada Stone]", res, judge=LLMArkJudge(llm))
    assert [(h.depth, h.decision, h.judged) for h in out.history] == [(0, "sufficient", True)]
    assert llm.usage.calls == 1
    assert "Ada Stone" in labels(out)
    # the BM25 descriptors carry the neighbourhood: her films are found without any traversal
    assert {"Night Harbor", "Paper Moons"} <= set(labels(out)[:5])
    assert out.depth_reached == 0


async def test_expand_twice_then_stop_reaches_two_hop_answers(setup):
    kg, res = setup
    llm = ScriptedLLM(['{"decision": "expand"}', '{"decision": "expand"}', '{"decision": "stop"}'])
    out = await ark_search(
        kg, "what genres are the movies directed by [Ada Stone]", res, judge=LLMArkJudge(llm)
    )
    assert [(h.depth, h.decision) for h in out.history] == [
        (0, "expand"),
        (1, "expand"),
        (2, "stop"),
    ]
    counts = [h.result_count for h in out.history]
    assert counts == sorted(counts) and counts[2] > counts[0]
    assert llm.usage.calls == 3
    top = labels(out)[:4]
    assert {"Drama", "Comedy"} <= set(top), top
    drama = next(r for r in out.results if r.label == "Drama")
    assert [s.label for s in drama.path] == ["directed by", "has genre"]
    assert drama.path[0].direction.value == "backward"


async def test_garbage_judge_answer_stops_and_is_recorded(setup):
    kg, res = setup
    out = await ark_search(
        kg,
        "films directed by [Ada Stone]",
        res,
        judge=LLMArkJudge(ScriptedLLM(["I think maybe we should look around more?"])),
    )
    (step,) = out.history
    assert step.decision == "stop" and step.valid is False and "maybe" in step.raw
    assert "unusable" in step.reason
    assert out.results  # the depth-0 results are still returned


async def test_judge_llm_failure_stops_safely(setup):
    kg, res = setup
    out = await ark_search(
        kg,
        "films directed by [Ada Stone]",
        res,
        judge=LLMArkJudge(ScriptedLLM([LLMError("overloaded")])),
    )
    assert out.history[0].decision == "stop" and not out.history[0].valid
    assert "overloaded" in out.history[0].reason


async def test_judge_relation_filter_restricts_the_expansion(setup):
    kg, res = setup
    llm = ScriptedLLM(
        ['{"decision": "expand", "relations": ["release_year"]}', '{"decision": "sufficient"}']
    )
    out = await ark_search(kg, "movies by [Paper Moons] year", res, judge=LLMArkJudge(llm))
    expanded = [r for r in out.results if r.depth == 1]
    assert expanded and all(r.path[0].label == "release year" for r in expanded)


async def test_min_depth_and_early_stopping_skip_the_judge(setup):
    kg, res = setup
    llm = ScriptedLLM(['{"decision": "stop"}'])
    out = await ark_search(
        kg,
        "films directed by [Ada Stone]",
        res,
        judge=LLMArkJudge(llm),
        config=ArkConfig(min_depth=1),
    )
    assert [(h.decision, h.judged) for h in out.history] == [("expand", False), ("stop", True)]
    assert llm.usage.calls == 1
    capped = await ark_search(
        kg,
        "films directed by [Ada Stone]",
        res,
        judge=LLMArkJudge(llm),
        config=ArkConfig(max_results=3),
    )
    assert capped.history[0].decision == "stop" and not capped.history[0].judged
    assert "max_results" in capped.history[0].reason
    starved = await ark_search(
        kg,
        "films directed by [Ada Stone]",
        res,
        judge=LLMArkJudge(llm),
        config=ArkConfig(min_results=1000, max_depth=2),
    )
    assert [h.judged for h in starved.history] == [False, False, False]
    assert "max depth" in starved.history[-1].reason


async def test_relevance_margin_limits_the_frontier(setup):
    kg, res = setup
    judge = LLMArkJudge(ScriptedLLM(['{"decision": "expand"}', '{"decision": "stop"}']))
    tight = await ark_search(
        kg,
        "films directed by [Ada Stone]",
        res,
        judge=judge,
        config=ArkConfig(relevance_margin=0.0),
    )
    judge = LLMArkJudge(ScriptedLLM(['{"decision": "expand"}', '{"decision": "stop"}']))
    loose = await ark_search(
        kg,
        "films directed by [Ada Stone]",
        res,
        judge=judge,
        config=ArkConfig(relevance_margin=5.0),
    )
    assert tight.history[0].frontier == 1  # only the named topic
    assert loose.history[0].frontier > tight.history[0].frontier


async def test_neighbour_cache_is_hit_on_a_repeated_query(setup):
    kg, res = setup
    q = "what genres are the movies directed by [Eli Park]"
    await ark_search(kg, q, res)
    again = await ark_search(kg, q, res)
    assert again.neighbour_cache["hits"] > 0 and again.neighbour_cache["misses"] == 0
    off = await ark_search(kg, q, res, config=ArkConfig(cache_neighbours=False))
    assert off.neighbour_cache["hits"] == 0


async def test_offline_judge_answers_one_and_two_hop_questions(setup):
    kg, res = setup
    one = await ark_search(kg, "which films did [Ada Stone] direct", res)
    assert one.judge == "offline"
    assert set(labels(one)[:2]) == {"Night Harbor", "Paper Moons"}
    assert [h.decision for h in one.history] == ["expand", "sufficient"]
    two = await ark_search(kg, "what genres are the films directed by [Eli Park]", res)
    assert set(labels(two)[:2]) == {"Thriller", "Drama"}
    assert [h.decision for h in two.history] == ["expand", "expand", "sufficient"]


async def test_offline_judge_estimates_hops_from_relation_mentions(setup):
    _, res = setup
    judge = OfflineArkJudge(res.relevance(), ["Ada Stone"])
    assert judge.hops("who directed [Night Harbor]") == 1
    assert judge.hops("what genres are the movies directed by [Ada Stone]") == 2


def test_parse_ark_decision_accepts_json_or_a_bare_keyword_and_nothing_else():
    assert parse_ark_decision(
        '```json\n{"decision": "EXPAND", "relations": ["x"]}\n```'
    ).relations == ["x"]
    assert parse_ark_decision("sufficient").decision == "sufficient"
    for junk in [
        "",
        "expand or stop",
        '{"decision": "maybe"}',
        "[1, 2]",
        "lorem ipsum dolor sit amet",
    ]:
        d = parse_ark_decision(junk)
        assert d.decision == "stop" and not d.valid


async def test_bad_queries_are_clear_errors(setup):
    kg, res = setup
    with pytest.raises(InvalidInput, match="empty"):
        await ark_search(kg, "   ", res)
    with pytest.raises(InvalidInput, match="characters"):
        await ark_search(kg, "x" * 5000, res)
    out = await ark_search(
        kg, "zzzz qqqq", res
    )  # nothing matches lexically: an empty, well-formed result
    assert out.results == [] and out.history[-1].decision == "stop"


async def test_fixed_bfs_and_dfs_baselines(setup):
    kg, res = setup
    q = "what genres are the films directed by [Eli Park]"
    bfs = await fixed_traversal(kg, q, res, "bfs", depth=2)
    assert bfs.method == "bfs-2" and {"Thriller", "Drama"} <= set(labels(bfs)[:3])
    dfs = await fixed_traversal(kg, q, res, "dfs", depth=5)
    assert dfs.method == "dfs-5" and {"Thriller", "Drama"} <= set(labels(dfs))
    assert max(r.depth for r in dfs.results) > 2  # it really goes deep
    assert node(kg, "Eli Park") in bfs.seeds
