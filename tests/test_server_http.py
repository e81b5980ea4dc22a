"""The real ``tot-mcp --transport http`` process, driven by the SDK's streamable HTTP client."""

from __future__ import annotations

import httpx2
import pytest
from mcp_client import http_server, http_session, text_of

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


async def test_with_a_token_requests_without_it_get_401_and_with_it_work():
    async with http_server(["--token", "s3cret-token"]) as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        missing = httpx2.post(
            url, json=INIT, headers={"Accept": "application/json, text/event-stream"}
        )
        wrong = httpx2.post(url, json=INIT, headers={"Authorization": "Bearer nope"})
        assert (missing.status_code, wrong.status_code) == (401, 401)
        assert missing.headers["www-authenticate"].startswith("Bearer")

        updates = []

        async def on_progress(progress, total, message):
            updates.append((progress, total))

        async with http_session(url, token="s3cret-token") as session:
            linked = await session.call_tool(
                "initialize", {"query": "[Tom Hanks]"}, progress_callback=on_progress
            )
            bad = await session.call_tool("get_relations", {"entity_ids": ["nope"]})
            films = await session.call_tool(
                "get_edges",
                {
                    "entity_ids": ["movies:E1407"],
                    "relation_id": "movies:starred_actors",
                    "direction": "backward",
                },
            )
    assert linked.structured_content["entities"][0]["entity"]["label"] == "Tom Hanks"
    assert updates == [(1.0, 1.0)]
    assert bad.is_error and text_of(bad).startswith(
        "get_relations: invalid input: malformed ID 'nope'"
    )
    assert len(films.structured_content["edges"]) == 32


async def test_the_token_can_come_from_the_environment_and_a_wrong_one_fails_the_client():
    async with http_server([], env={"TOT_MCP_TOKEN": "from-env"}) as url:
        assert httpx2.post(url, json=INIT).status_code == 401
        async with http_session(url, token="from-env") as session:
            assert (await session.list_tools()).tools
        with pytest.raises(BaseException):
            async with http_session(url, token="wrong"):
                pass


async def test_without_a_token_the_loopback_server_is_open():
    async with http_server() as url:
        async with http_session(url) as session:
            resources = (await session.list_resources()).resources
            prompt = await session.get_prompt(
                "tree_of_traversals", {"question": "Who starred in Big?"}
            )
    assert [str(r.uri) for r in resources] == [
        "kg://movies",
        "ui://tot-mcp/search-tree",
    ]  # the KG, the tree app
    assert "Question: Who starred in Big?" in prompt.messages[0].content.text
