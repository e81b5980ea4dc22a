"""The retrieval strategies as MCP tools, through the real ``tot-mcp`` process and the SDK
client."""

from __future__ import annotations

import json

import pytest

from mcp_client import stdio_session
from retrieval_fixtures import TRIPLES


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tools")
    path = tmp / "mini_kb.txt"
    path.write_text(TRIPLES, encoding="utf-8")
    return path, tmp / "cache"


async def test_retrieval_tools_end_to_end(kb):
    path, cache = kb
    async with stdio_session(
        ["--kg", f"mini={path}", "--tools", "all"],
        env={"TOT_MCP_CACHE_DIR": str(cache)},
        read_timeout=300,
    ) as s:
        names = {t.name for t in (await s.list_tools()).tools}
        assert {
            "ark_retrieve",
            "route_query",
            "router_stats",
            "beam_search",
            "rerank_retrieve",
            "build_index",
        } <= names

        question = "what genres are the films directed by [Eli Park]"
        ark = await s.call_tool("ark_retrieve", {"query": question})
        assert not ark.is_error, ark.content
        data = ark.structured_content
        assert {"Thriller", "Drama"} <= {r["label"] for r in data["items"][:2]}
        text = ark.content[0].text  # the context a client model reads, after the answers
        assert "directed by (inverse) → has genre: (2) " in text and "context" not in data
        whole = await s.call_tool("ark_retrieve", {"query": question, "detail": "full"})
        data = whole.structured_content["full"]
        assert [h["decision"] for h in data["history"]] == ["expand", "expand", "sufficient"]
        assert "d0 expand" in whole.content[0].text and "Ranked entities:" in whole.content[0].text

        routed = await s.call_tool("route_query", {"query": "which films did [Ada Stone] direct"})
        assert not routed.is_error, routed.content
        assert routed.structured_content["strategy"].startswith("route chain → ran chain")
        assert routed.structured_content["status"] == "answered"
        labels = {r["label"] for r in routed.structured_content["items"]}
        assert labels == {"Night Harbor", "Paper Moons"}
        assert "route chain → ran chain" in routed.content[0].text
        stats = await s.call_tool("router_stats", {})
        assert stats.structured_content["total"] == 1 and stats.structured_content["routes"] == {
            "chain": 1
        }
        misspelt = await s.call_tool("beam_search", {"query": "x", "beams": 2})
        assert misspelt.is_error

        beam = await s.call_tool(
            "beam_search",
            {"query": "adventure films by Ivo Tan", "beam": 2, "top_k": 4, "detail": "full"},
        )
        assert not beam.is_error, beam.content
        assert len(beam.structured_content["full"]["l0"]) <= 2
        assert beam.structured_content["total"] <= 4

        rr = await s.call_tool(
            "rerank_retrieve",
            {
                "query": "films directed by Ivo Tan",
                "max_iterations": 2,
                "quality_threshold": 2.0,
                "detail": "full",
            },
        )
        assert not rr.is_error, rr.content
        assert len(rr.structured_content["full"]["iterations"]) == 2

        built = await s.call_tool("build_index", {"index": "all"})
        assert not built.is_error and built.structured_content["levels"]["L2"] > 0

        bad = await s.call_tool("ark_retrieve", {"query": "   "})
        assert bad.is_error and "empty" in bad.content[0].text
        unknown = await s.call_tool("beam_search", {"query": "x", "kg": "nope"})
        assert unknown.is_error and "nope" in unknown.content[0].text
        no_llm = await s.call_tool(
            "ark_retrieve", {"query": "films by [Ada Stone]", "judge": "llm"}
        )
        assert no_llm.is_error and "LLM" in no_llm.content[0].text
        json.dumps(data)  # structured content is plain JSON


async def test_a_large_kg_builds_its_index_in_the_background_and_says_how_far_it_is(kb, tmp_path):
    """Above ``[retrieval] build_limit`` entities a missing index is built in a background thread:
    the call that needs it returns at once with a message saying so (and how far the build is), and
    a later call succeeds."""
    import anyio

    path, _ = kb
    config = tmp_path / "tot.toml"
    cache = tmp_path / "c"
    config.write_text(
        f'[kgs]\nmini = "{path}"\n[retrieval]\nbuild_limit = 0\ncache_dir = "{cache}"\n',
        encoding="utf-8",
    )
    async with stdio_session(["--config", str(config), "--tools", "all"], read_timeout=300) as s:
        first = await s.call_tool("beam_search", {"query": "adventure films by Ivo Tan"})
        assert first.is_error
        text = first.content[0].text
        assert "being built in the background" in text and "call again" in text
        with anyio.fail_after(240):
            while True:
                again = await s.call_tool("beam_search", {"query": "adventure films by Ivo Tan"})
                if not again.is_error:
                    break
                assert "being built in the background" in again.content[0].text, again.content[
                    0
                ].text
                await anyio.sleep(0.5)
        assert again.structured_content["items"]
        edges = await s.call_tool("get_relations", {"entity_ids": ["mini:E0"]})
        assert not edges.is_error  # the step tools never waited for the index
