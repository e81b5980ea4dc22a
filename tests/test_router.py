"""Query router: analysis (LLM JSON or rules), the routing thresholds, each route's retrieval, per-runtime stats."""

from __future__ import annotations

import pytest

from retrieval_fixtures import ScriptedLLM, make_kg, make_service
from strategies.judges import LLMQueryAnalyser, QueryAnalysis, RuleQueryAnalyser
from strategies.llm.base import LLMError
from strategies.router import RouteStats, choose_route, round_robin, route_query
from strategies.retrieval_common import RetrievedEntity


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("router")
    kg = make_kg(tmp)
    svc = make_service(tmp / "cache")
    return kg, svc, svc.resources(kg)


def analysis(c, ri, qtype="multi_hop", n=1):
    return QueryAnalysis(complexity=c, relationship_intensity=ri, reasoning_needed=False, entity_count=n,
                         query_type=qtype)


@pytest.mark.parametrize(
    ("c", "ri", "route"),
    [(0.0, 0.0, "traditional"), (0.39, 0.69, "traditional"), (0.4, 0.0, "combined"), (0.7, 0.7, "combined"),
     (0.71, 0.0, "graph"), (0.1, 0.71, "graph"), (1.0, 1.0, "graph")],
)
def test_routing_thresholds(c, ri, route):
    assert choose_route(analysis(c, ri)) == route


def test_round_robin_interleaves_and_deduplicates():
    def e(x):
        return RetrievedEntity(id=f"k:E{x}", label=x, score=0.0, source="t")

    merged = round_robin([[e("1"), e("2"), e("3")], [e("2"), e("4")], []], 10)
    assert [m.label for m in merged] == ["1", "2", "3", "4"]  # B's "2" taken in round 1, so its next is "4"
    assert len(round_robin([[e("1"), e("2")], [e("3")]], 2)) == 2


async def test_llm_analysis_is_used_when_it_is_valid_json(setup):
    kg, svc, res = setup
    llm = ScriptedLLM(['Sure! {"complexity": 0.9, "relationship_intensity": 0.2, "reasoning_needed": true, '
                       '"entity_count": 1, "query_type": "multi_hop"}'])
    out = await route_query(kg, "what genres are the movies directed by [Ada Stone]", res,
                            analyser=LLMQueryAnalyser(llm, RuleQueryAnalyser()), stats=RouteStats())
    assert out.analysis.source == "llm" and out.analysis.fallback_reason is None
    assert out.route == "graph"
    assert {"Drama", "Comedy"} <= {r.label for r in out.results[:3]}


@pytest.mark.parametrize("bad", ["no idea", '{"complexity": "high"}', '{"complexity": 3, "relationship_intensity": 0}',
                                 LLMError("down")])
async def test_bad_llm_analysis_falls_back_to_rules(setup, bad):
    kg, _, res = setup
    analyser = LLMQueryAnalyser(ScriptedLLM([bad]), RuleQueryAnalyser(res.relevance()))
    out = await route_query(kg, "which films did [Ada Stone] direct", res, analyser=analyser, stats=RouteStats())
    assert out.analysis.source == "rules" and out.analysis.fallback_reason
    assert out.results


def test_rule_analysis_grows_with_relations_and_entities(setup):
    _, _, res = setup
    rules = RuleQueryAnalyser(res.relevance())
    one = rules.analyse("who directed [Night Harbor]", ["Night Harbor"], 1)
    three = rules.analyse("what languages are the films that share actors with the films directed by [Ivo Tan]",
                          ["Ivo Tan"], 1)
    two_entities = rules.analyse("how are [Ada Stone] and [Eli Park] connected", ["Ada Stone", "Eli Park"], 2)
    assert one.complexity < 0.4 and choose_route(one) == "traditional" and one.query_type == "lookup"
    assert three.relationship_intensity > one.relationship_intensity and three.complexity > one.complexity
    assert choose_route(three) == "graph"
    assert two_entities.query_type == "path"
    bare = RuleQueryAnalyser().analyse("movies of the director of [X]")  # no KG vocabulary: cue words
    assert bare.entity_count == 1 and bare.relationship_intensity > 0


async def test_each_route_retrieves_and_stats_count_per_runtime(setup):
    kg, svc, res = setup
    trad = await route_query(kg, "which films did [Ada Stone] direct", res, force_route="traditional")
    assert trad.route == "traditional" and {"entity", "bm25", "dense"} <= set(trad.parts)
    assert {"Night Harbor", "Paper Moons"} <= {r.label for r in trad.results[:6]}
    comb = await route_query(kg, "which films did [Ada Stone] direct", res, force_route="combined")
    assert any(k.startswith("graph.") for k in comb.parts) and any(k.startswith("traditional.") for k in comb.parts)
    path = await route_query(kg, "how are [Night Harbor] and [Iron Orchard] connected", res, force_route="graph")
    assert path.analysis.query_type == "path" and "Ben Cole" in {r.label for r in path.results[:3]}
    snap = svc.route_stats.snapshot()
    assert snap.total == 3 and snap.routes == {"traditional": 1, "combined": 1, "graph": 1}
    other = make_service(res.service.cache_dir)  # another runtime starts from zero
    assert other.route_stats.snapshot().total == 0


async def test_empty_query_is_a_clear_error(setup):
    kg, _, res = setup
    from kg_adapters.errors import InvalidInput

    with pytest.raises(InvalidInput, match="empty"):
        await route_query(kg, "", res)
