"""A pydantic-ai agent with tot-mcp's tools (pip install 'pydantic-ai-slim[mcp]').

One server process for the whole agent: MCPToolset keeps its session open while the agent runs, so result handles
(`from_result`) work across calls. Swap the model for any pydantic-ai model ('anthropic:claude-…', 'openai:…').

    python examples/pydantic_ai_agent.py "who directed the films [Tom Hanks] starred in?"
"""

from __future__ import annotations

import asyncio
import sys

from fastmcp.client import Client
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset


def toolset(*args: str) -> MCPToolset:
    """tot-mcp over stdio (``tot-mcp`` on PATH); for a shared server use ``MCPToolset("http://HOST:8000/mcp")``."""
    return MCPToolset(Client(StdioTransport(command="tot-mcp", args=list(args) or ["--kg", "movies=embedded"])))


async def main(question: str, model: str = "anthropic:claude-sonnet-4-5") -> None:
    agent = Agent(model, toolsets=[toolset()], instructions="Answer from the knowledge graph's tools only.")
    async with agent:  # one session for every tool call of the run
        print((await agent.run(question)).output)


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "who directed the films [Tom Hanks] starred in?"))
