"""SamplingLLM through a real MCP client: the client's sampling callback answers; without it, a
clean error."""

from __future__ import annotations

import pytest
import mcp_types as types
from mcp.client.client import Client
from mcp.server.mcpserver import Context, MCPServer

from tot_mcp.strategies.llm.base import LLMError
from tot_mcp.strategies.llm.sampling import SamplingLLM, sampling_unavailable_reason


def _server() -> MCPServer:
    srv = MCPServer("sampling-test")

    @srv.tool()
    async def ask(prompt: str, ctx: Context) -> str:
        reason = sampling_unavailable_reason(ctx)
        if reason:
            return f"UNAVAILABLE: {reason}"
        llm = SamplingLLM(ctx)
        first = await llm.complete(prompt, system="sys", max_tokens=30, temperature=0.5)
        second = await llm.complete(prompt + "!")
        return f"{first} / {second} / calls={llm.usage.calls} model={llm.model_seen}"

    return srv


async def test_the_clients_model_answers_mid_call():
    seen = []

    async def sampling(context, params: types.CreateMessageRequestParams):
        seen.append(params)
        return types.CreateMessageResult(
            role="assistant",
            model="fake-model",
            content=types.TextContent(type="text", text="echo " + params.messages[0].content.text),
        )

    async with Client(_server(), sampling_callback=sampling, mode="legacy") as client:
        result = await client.call_tool("ask", {"prompt": "hi"})
    assert result.content[0].text == "echo hi / echo hi! / calls=2 model=fake-model"
    assert (
        seen[0].system_prompt == "sys" and seen[0].max_tokens == 30 and seen[0].temperature == 0.5
    )


async def test_a_client_without_sampling_is_reported_not_crashed():
    async with Client(_server(), mode="legacy") as client:
        result = await client.call_tool("ask", {"prompt": "hi"})
    assert result.content[0].text.startswith(
        "UNAVAILABLE: the MCP client did not declare the sampling capability"
    )


async def test_a_modern_connection_without_back_channel_is_reported():
    async def sampling(context, params):  # pragma: no cover - never reached
        raise AssertionError

    async with Client(_server(), sampling_callback=sampling) as client:
        result = await client.call_tool("ask", {"prompt": "hi"})
    assert "no mid-call sampling back-channel" in result.content[0].text


def test_constructing_without_a_context_is_an_llm_error():
    with pytest.raises(LLMError, match="no MCP request context"):
        SamplingLLM(None)
