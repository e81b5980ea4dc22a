"""Answering tools return what a client model can read and check (issue #35): the answers with
IDs, the status and why, what was linked, the path and edges behind the answers — small, and one
shape for every tool — and the whole search only when asked (``detail="full"``). Through the real
``tot-mcp`` process and the SDK's stdio client."""

from __future__ import annotations

import json

import pytest
from mcp_client import stdio_session, text_of

from tot_mcp.server.compact import STRUCTURED_BUDGET, TEXT_BUDGET, Extras, compact_result
from tot_mcp.strategies.results import LinkInfo, RetrievedEntity, StrategyResult

TWO_HOPS = "who directed the films [Tom Hanks] acted in"
ANSWERING = ("tree_of_traversals", "route_query", "ark_retrieve", "beam_search", "rerank_retrieve")


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> dict:
    import anyio

    cache = tmp_path_factory.mktemp("compact-cache")
    out: dict = {}

    async def fetch() -> None:
        async with stdio_session(
            ["--kg", "movies=embedded", "--tools", "all"],
            read_timeout=300,
            env={"TOT_MCP_CACHE_DIR": str(cache)},
        ) as s:
            out["tools"] = {t.name: t for t in (await s.list_tools()).tools}
            out["tot"] = await s.call_tool("tree_of_traversals", {"query": TWO_HOPS})
            out["route"] = await s.call_tool("route_query", {"query": TWO_HOPS})
            out["full"] = await s.call_tool(
                "tree_of_traversals", {"query": TWO_HOPS, "detail": "full"}
            )
            out["bad"] = await s.call_tool("route_query", {"query": TWO_HOPS, "detail": "all"})
            handle = out["tot"].structured_content["result_id"]
            out["related"] = await s.call_tool("get_relations", {"from_result": handle})

    anyio.run(fetch)
    return out


@pytest.mark.parametrize("name", ["tot", "route"])
def test_a_two_hop_answer_is_small_and_says_what_supports_it(served, name):
    result = served[name]
    assert not result.is_error, text_of(result)
    text, data = text_of(result), result.structured_content
    sizes = (len(text), len(json.dumps(data)))
    assert sizes[0] <= TEXT_BUDGET and sizes[1] <= STRUCTURED_BUDGET, sizes
    assert "Steven Spielberg" in {it["label"] for it in data["items"]}
    assert data["total"] >= len(data["items"])
    assert "1. " in text and "[movies:E190]" in text  # each answer with its ID
    assert data["status"] and data["reason"] and data["status"] in text.splitlines()[0]
    assert data["links"][0]["label"] == "Tom Hanks" and "Linked: " in text
    assert [h["label"] for h in data["paths"][0]] == ["starred actors", "directed by"]
    assert "Path: starred actors (inverse) → directed by" in text
    fact = data["facts"][0]  # an edge that leads from Tom Hanks toward an answer
    assert "movies:E1407" in (fact["subject"], fact["object"])
    assert fact["relation_label"] == "starred actors"
    assert not {"tree_text", "subgraph_text", "nodes", "full"} & set(data)  # no text twice
    assert 'detail="full"' in text


def test_every_answering_tool_shares_one_small_output_schema(served):
    tools = served["tools"]
    schemas = {json.dumps(tools[n].output_schema, sort_keys=True) for n in ANSWERING}
    assert len(schemas) == 1 and len(schemas.pop()) <= 4000
    for name in ANSWERING:
        assert tools[name].input_schema["properties"]["detail"]["enum"] == ["answer", "full"]


def test_the_whole_search_is_there_when_asked_for(served):
    full = served["full"]
    text = text_of(full)
    assert "Search tree (* = chosen path):" in text and "* [1.00] ROOT" in text
    assert "Final local subgraph:" in text
    whole = full.structured_content["full"]
    assert whole["nodes"] and whole["path"][0] == 0
    assert full.structured_content["items"] == served["tot"].structured_content["items"]


def test_the_answer_set_has_a_handle_the_step_tools_take(served):
    assert not served["related"].is_error, text_of(served["related"])
    assert "directed_by" in text_of(served["related"])


def test_a_bad_detail_is_a_tool_error(served):
    text = text_of(served["bad"])
    assert served["bad"].is_error and "detail" in text and "Traceback" not in text


def test_a_refusal_is_its_status_its_reason_and_what_was_linked():
    """What grounding.run_checked returns when it refuses before the strategy runs: a plain
    StrategyResult, without the strategy's own fields."""
    link = LinkInfo(
        mention="Tom Hanx",
        id="movies:E1407",
        label="Tom Hanks",
        match="typo",
        score=0.8,
        confident=False,
        note="one letter differs",
    )
    out = StrategyResult(
        query="who directed [Tom Hanx] films",
        kg="movies",
        results=[],
        status="no_entity",
        links=[link],
        value=0.0,
        reason="no entity named 'Tom Hanx'; nearest: Tom Hanks",
    )
    result = compact_result(out, Extras(strategy="tot"), "answer", lambda ids: None)
    assert result.content[0].text.splitlines() == [
        "no_entity: no entity named 'Tom Hanx'; nearest: Tom Hanks",
        "Linked: [Tom Hanx] → Tom Hanks [movies:E1407] (typo 0.80, loose) — one letter differs",
    ]
    data = result.structured_content
    assert data["items"] == [] and data["total"] == 0 and data["links"][0]["match"] == "typo"


def test_many_long_answers_stay_within_the_budgets():
    results = [
        RetrievedEntity(
            id=f"movies:E{k}",
            label="A film with a long title " * 6,
            score=1.0 / (k + 1),
            source="rank",
        )
        for k in range(300)
    ]
    out = StrategyResult(query="q", kg="movies", results=results, status="answered", value=0.9)
    extras = Extras(strategy="beam", context="x" * 400 + "\n" + "y" * 400)
    result = compact_result(out, extras, "answer", lambda ids: "r0123456789")
    text, data = result.content[0].text, result.structured_content
    assert len(text) <= TEXT_BUDGET and len(json.dumps(data)) <= STRUCTURED_BUDGET
    assert data["total"] == 300 and 10 <= len(data["items"]) <= 20
    assert "from_result=r0123456789" in text
