"""Agent frameworks' own MCP clients drive tot-mcp (issue #23 item 3): the tools they list, a call
they make, and the result handles between their calls. No LLM: the framework's scripted model
decides the calls, its real MCP client makes them against the real ``tot-mcp`` process.

* pydantic-ai (``MCPToolset`` on FastMCP's client, mcp 2.x): in the test extra, so this runs
  everywhere;
* LangChain (``langchain-mcp-adapters``, which needs ``mcp<2``): only where an interpreter with it
  is named in ``TOT_MCP_LANGCHAIN_PYTHON`` (its own venv; the tests never download), running
  ``examples/langchain_session.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from mcp_client import REPO, SERVER_CMD, server_env

pytest.importorskip(
    "pydantic_ai", reason="pydantic-ai-slim[mcp] is in the test extra: pip install -e '.[test]'"
)

from fastmcp.client import Client  # noqa: E402
from fastmcp.client.transports import StdioTransport  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.mcp import MCPToolset  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

HOPS = [{"relation_id": "starred_actors", "direction": "backward"}, {"relation_id": "directed_by"}]


def scripted(steps, seen: dict):
    """A model that makes ``steps`` (tool name, arguments from the results so far) in turn, then
    answers with the last result; it records the tool list it was offered and every result."""

    def model(messages, info: AgentInfo) -> ModelResponse:
        results = [
            p.content
            for m in messages
            for p in getattr(m, "parts", [])
            if isinstance(p, ToolReturnPart)
        ]
        seen.setdefault("tools", sorted(t.name for t in info.function_tools))
        seen["results"] = results
        if len(results) < len(steps):
            name, args = steps[len(results)]
            return ModelResponse(parts=[ToolCallPart(name, args(results))])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(model)


async def test_a_pydantic_ai_agent_lists_the_tools_and_walks_a_path_then_reuses_its_handle():
    transport = StdioTransport(
        command=SERVER_CMD[0],
        args=[*SERVER_CMD[1:], "--kg", "movies=embedded"],
        env=server_env(None),
        cwd=str(REPO),
    )
    seen: dict = {}
    steps = [
        ("follow_path", lambda _: {"start": "Tom Hanks", "hops": HOPS, "limit": 0}),
        (
            "get_edges",
            lambda r: {
                "from_result": r[0]["result_id"],
                "relation_id": "directed_by",
                "direction": "backward",
                "limit": 5,
            },
        ),
    ]
    agent = Agent(scripted(steps, seen), toolsets=[MCPToolset(Client(transport))])
    async with agent:  # one server process and one session for the whole run
        out = await agent.run("which films did the directors of Tom Hanks's films make?")
    assert out.output == "done"
    assert {"initialize", "follow_path", "get_edges", "tree_of_traversals"} <= set(seen["tools"])
    directors, films = seen["results"]
    assert directors["total"] == 25 and directors["targets"] == []  # limit=0: counted, and a handle
    assert (
        films["edges"] and films["result_id"]
    )  # the handle from the first call worked in the second


@pytest.mark.skipif(
    not os.environ.get("TOT_MCP_LANGCHAIN_PYTHON"),
    reason="set TOT_MCP_LANGCHAIN_PYTHON to a python with langchain-mcp-adapters (mcp<2, own venv)",
)
def test_the_langchain_example_runs_one_session():
    bin_dir = os.path.dirname(sys.executable)  # tot-mcp of this environment on PATH for the example
    env = server_env({"PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")})
    env.pop("PYTHONPATH", None)  # the other venv must not import this one's packages
    done = subprocess.run(
        [os.environ["TOT_MCP_LANGCHAIN_PYTHON"], str(REPO / "examples" / "langchain_session.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=str(REPO),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Steven Spielberg" in done.stdout and "start 'Tom Hanks' = movies:E1407" in done.stdout


def _example(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    bin_dir = os.path.dirname(sys.executable)  # this environment's tot-mcp, as the example expects
    env = server_env({"PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), **env})
    env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run(
        [sys.executable, str(REPO / "examples" / "pydantic_ai_agent.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=str(REPO),
    )


def test_the_pydantic_ai_example_says_what_it_needs_instead_of_a_traceback():
    no_key = _example(env={})
    assert no_key.returncode == 2 and no_key.stdout == "", no_key.stderr
    assert (
        no_key.stderr.startswith("pydantic_ai_agent: model 'anthropic:claude-sonnet-4-5': ")
        and "ANTHROPIC_API_KEY" in no_key.stderr
        and no_key.stderr.count("\n") == 1
    ), no_key.stderr
    no_server = _example(env={"PATH": os.devnull})
    assert no_server.returncode == 2 and "tot-mcp is not on PATH" in no_server.stderr


def test_the_pydantic_ai_example_runs_its_toolset_with_the_test_model():
    done = _example("--model", "test", env={})
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"name":"movies"' in done.stdout and '"entities":43234' in done.stdout
