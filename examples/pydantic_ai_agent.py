"""A pydantic-ai agent with tot-mcp's tools.

Needs, besides ``tot-mcp`` on PATH: ``pip install 'pydantic-ai-slim[mcp,anthropic]'`` and
``ANTHROPIC_API_KEY`` for the default model; any other pydantic-ai model with ``--model``
(``openai:gpt-4.1-mini`` needs the ``openai`` extra and ``OPENAI_API_KEY``; ``test``, pydantic-ai's
offline test model, needs nothing: it calls ``list_kgs`` and returns what the tool said, to show
the toolset working). What is missing is said in one line before anything starts.

One server process for the whole agent: MCPToolset keeps its session open while the agent runs, so
result handles (`from_result`) work across calls.

    python examples/pydantic_ai_agent.py "who directed the films [Tom Hanks] starred in?"
    python examples/pydantic_ai_agent.py --model test
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys

DEFAULT_MODEL = "anthropic:claude-sonnet-4-5"
USAGE_ERROR = 2


def missing(model: str) -> str | None:
    """What this machine lacks to run the agent with ``model``, in one line, or None."""
    if shutil.which("tot-mcp") is None:
        return (
            "tot-mcp is not on PATH: pip install tot-mcp (or activate the environment that has it)"
        )
    try:
        from pydantic_ai.mcp import MCPToolset  # noqa: F401 - the [mcp] extra
        from pydantic_ai.models import infer_model
    except ImportError:
        return "pydantic-ai is not installed here: pip install 'pydantic-ai-slim[mcp,anthropic]'"
    try:
        infer_model(model)  # the provider's package and its API key
    except ImportError as e:
        return (
            f"model {model!r}: {str(e).split(' — ')[0].rstrip('.,')}; "
            f"pip install 'pydantic-ai-slim[{model.split(':')[0]}]'"
        )
    except Exception as e:  # pydantic-ai's UserError: no API key, unknown model
        if model == "test":
            return None
        return f"model {model!r}: {str(e).split('. ')[0]} (or try --model test, which needs no key)"
    return None


def toolset(*args: str):
    """tot-mcp over stdio (``tot-mcp`` on PATH); for a shared server use ``MCPToolset("http://HOST:8000/mcp")``."""
    from fastmcp.client import Client
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset

    return MCPToolset(
        Client(StdioTransport(command="tot-mcp", args=list(args) or ["--kg", "movies=embedded"]))
    )


async def main(question: str, model: str = DEFAULT_MODEL) -> None:
    from pydantic_ai import Agent

    if model == "test":  # no LLM: one tool call with no arguments, then its result as the answer
        from pydantic_ai.models.test import TestModel

        model = TestModel(call_tools=["list_kgs"])
    agent = Agent(
        model, toolsets=[toolset()], instructions="Answer from the knowledge graph's tools only."
    )
    async with agent:  # one session for every tool call of the run
        print((await agent.run(question)).output)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description="A pydantic-ai agent answering from tot-mcp's tools."
    )
    parser.add_argument(
        "question", nargs="*", help="default: who directed the films [Tom Hanks] starred in?"
    )
    parser.add_argument(
        "--model", default=DEFAULT_MODEL, help=f"a pydantic-ai model (default {DEFAULT_MODEL})"
    )
    args = parser.parse_args()
    problem = missing(args.model)
    if problem:
        print(f"pydantic_ai_agent: {problem}", file=sys.stderr)
        sys.exit(USAGE_ERROR)
    asyncio.run(
        main(
            " ".join(args.question) or "who directed the films [Tom Hanks] starred in?", args.model
        )
    )
