"""The query router as a dispatcher: the analysis (LLM JSON or rules), the routing rule, the
strategies it runs (with escalation from chain to the tree search), and its statistics per services
object."""

from __future__ import annotations

import pytest

from retrieval_fixtures import ScriptedLLM, make_kg, run_strategy, shared_embedder
from tot_mcp.strategies.llm.base import LLMError
from tot_mcp.strategies.registry import REGISTRY, Call, Strategy, get
from tot_mcp.strategies.results import RetrievedEntity, StrategyResult
from tot_mcp.strategies.router import QueryAnalysis, RuleQueryAnalyser, choose_route, round_robin
from tot_mcp.strategies.services import Services


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("router")
    kg = make_kg(tmp)
    svc = Services([kg], embedder_factory=shared_embedder, cache_dir=tmp / "cache")
    return kg, svc, svc.resources_now(kg)


async def route(svc, kg, query, llm=None, **options):
    return await run_strategy("router", svc, kg, query, llm, **options)


def analysis(hops=1, qtype="multi_hop", n=1):
    return QueryAnalysis(
        hops=hops,
        complexity=0.5,
        relationship_intensity=0.5,
        reasoning_needed=False,
        entity_count=n,
        query_type=qtype,
    )


@pytest.mark.parametrize(
    ("a", "linked", "local", "expected"),
    [
        (analysis(1, "lookup"), 1, True, "chain"),
        (analysis(3), 1, True, "chain"),
        (analysis(2, "path", 2), 2, True, "tot"),
        (analysis(1, "lookup"), 0, True, "ark"),
        (analysis(1, "subgraph"), 1, True, "ark"),
        (analysis(0, "lookup"), 1, True, "combined"),
        (analysis(1, "lookup"), 0, False, "chain"),
        (analysis(0, "lookup"), 1, False, "chain"),
    ],
)
def test_routing_rule(a, linked, local, expected):
    assert choose_route(a, linked, local) == expected


def test_round_robin_interleaves_and_deduplicates():
    def e(x):
        return RetrievedEntity(id=f"k:E{x}", label=x, score=0.0, source="t")

    merged = round_robin([[e("1"), e("2"), e("3")], [e("2"), e("4")], []], 10)
    assert [m.label for m in merged] == [
        "1",
        "2",
        "3",
        "4",
    ]  # B's "2" taken in round 1, so its next is "4"
    assert len(round_robin([[e("1"), e("2")], [e("3")]], 2)) == 2


async def test_a_chain_question_is_answered_by_chain_and_counted_per_services(setup):
    kg, svc, _ = setup
    before = svc.route_stats.snapshot().total
    out = await route(svc, kg, "which films did [Ada Stone] direct")
    assert out.route == "chain" and out.ran == ["chain"] and out.status == "answered"
    assert {r.label for r in out.results} == {"Night Harbor", "Paper Moons"}
    snap = svc.route_stats.snapshot()
    assert snap.total == before + 1 and snap.routes.get("chain", 0) >= 1
    other = Services([kg], embedder_factory=shared_embedder)  # another server starts from zero
    assert other.route_stats.snapshot().total == 0


async def test_open_and_unlinkable_questions_get_ark_context(setup):
    kg, svc, _ = setup
    out = await route(svc, kg, "tell me everything about mountain adventure films")
    assert out.route == "ark" and out.ran == ["ark"] and out.results


async def test_a_question_naming_no_relation_runs_the_chain_then_ark_and_interleaves_them(setup):
    kg, svc, _ = setup
    out = await route(svc, kg, "[Ada Stone]")
    assert (
        out.analysis.hops == 0 and out.analysis.source == "rules"
    )  # read after the chain, from its embeddings
    assert out.route == "combined" and out.ran == ["chain", "ark"] and out.results
    assert len({r.id for r in out.results}) == len(out.results)


async def test_a_chain_without_answer_escalates_to_the_tree_search(setup, monkeypatch):
    kg, svc, _ = setup

    async def nothing(call: Call) -> StrategyResult:
        return StrategyResult(query=call.query, kg=call.kg.name, results=[], status="no_answer")

    chain = get("chain")
    monkeypatch.setitem(
        REGISTRY._loaded,
        "chain",
        Strategy(
            name="chain", job="answer", options=chain.options, run=nothing, summary="finds nothing"
        ),
    )
    out = await route(svc, kg, "which films did [Ada Stone] direct")
    assert out.ran == ["chain", "tot"] and out.status == "answered"
    assert {r.label for r in out.results} == {"Night Harbor", "Paper Moons"}


async def test_a_weak_chain_answer_is_returned_with_its_value_not_escalated(setup, monkeypatch):
    kg, svc, _ = setup

    async def weak(call: Call) -> StrategyResult:
        hit = RetrievedEntity(id="mini:E0", label="Night Harbor", score=0.3, source="chain")
        return StrategyResult(
            query=call.query, kg=call.kg.name, results=[hit], status="below_tau", value=0.3
        )

    chain = get("chain")
    monkeypatch.setitem(
        REGISTRY._loaded,
        "chain",
        Strategy(name="chain", job="answer", options=chain.options, run=weak, summary="weak"),
    )
    out = await route(svc, kg, "which films did [Ada Stone] direct")
    assert out.ran == ["chain"] and out.status == "below_tau" and out.value == 0.3


async def test_llm_analysis_is_used_when_it_is_valid_json(setup):
    kg, svc, _ = setup
    llm = ScriptedLLM(
        [
            'Sure! {"hops": 2, "complexity": 0.9, "relationship_intensity": 0.2, '
            '"reasoning_needed": true, "entity_count": 1, "query_type": "subgraph"}'
        ]
    )
    out = await route(
        svc, kg, "what genres are the movies directed by [Ada Stone]", llm=llm, analyser="llm"
    )
    assert (
        out.analysis.source == "llm"
        and out.analysis.fallback_reason is None
        and out.analysis.hops == 2
    )
    assert out.route == "ark"  # the LLM called it a subgraph question
    assert len(llm.prompts) == 1  # ARK's judge stays offline: only the analysis asked the LLM


@pytest.mark.parametrize(
    "bad",
    [
        "no idea",
        '{"complexity": "high"}',
        '{"complexity": 3, "relationship_intensity": 0}',
        LLMError("down"),
    ],
)
async def test_bad_llm_analysis_falls_back_to_rules(setup, bad):
    kg, svc, _ = setup
    out = await route(
        svc,
        kg,
        "which films did [Ada Stone] direct",
        llm=ScriptedLLM([bad]),
        analyser="llm",
        route="ark",
    )
    assert out.analysis.source == "rules" and out.analysis.fallback_reason
    assert out.results


def test_rule_analysis_grows_with_relations_and_entities(setup):
    _, _, res = setup
    rules = RuleQueryAnalyser(res.relevance())
    one = rules.analyse("who directed [Night Harbor]", ["Night Harbor"], 1)
    three = rules.analyse(
        "what languages are the films that share actors with the films directed by [Ivo Tan]",
        ["Ivo Tan"],
        1,
    )
    two_entities = rules.analyse(
        "how are [Ada Stone] and [Eli Park] connected", ["Ada Stone", "Eli Park"], 2
    )
    assert one.hops == 1 and one.query_type == "lookup" and choose_route(one, 1, True) == "chain"
    assert three.hops > one.hops and three.complexity > one.complexity
    assert two_entities.query_type == "path" and choose_route(two_entities, 2, True) == "tot"
    bare = RuleQueryAnalyser().analyse(
        "movies of the director of [X]"
    )  # no KG vocabulary: cue words
    assert bare.entity_count == 1 and bare.relationship_intensity > 0


async def test_empty_query_is_a_clear_error(setup):
    kg, svc, _ = setup
    from tot_mcp.kg_adapters.errors import InvalidInput

    with pytest.raises(InvalidInput, match="empty"):
        await route(svc, kg, "")


async def test_a_misspelt_option_is_an_error_naming_the_valid_ones():
    from tot_mcp.kg_adapters.errors import InvalidInput

    with pytest.raises(InvalidInput, match="top_kk.*valid options: analyser, route, top_k"):
        get("router").parse_options({"top_kk": 3})
