"""LangChain with tot-mcp's tools (pip install langchain-mcp-adapters; it needs mcp<2, so its own
environment).

Load the tools from one session: MultiServerMCPClient.get_tools() alone starts a server process per
tool call (~3 s each here). Handles (`from_result`) work either way (they are kept in the cache
directory), but one session is 60-80x faster per call.

    python examples/langchain_session.py
"""

from __future__ import annotations

import asyncio
import shutil
import sys

try:
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools
except ImportError:
    print(
        "langchain_session: pip install langchain-mcp-adapters first (it needs mcp<2: use an "
        "environment of its own, with tot-mcp on PATH from another)",
        file=sys.stderr,
    )
    sys.exit(2)


async def main() -> None:
    client = MultiServerMCPClient(
        {"tot": {"command": "tot-mcp", "args": ["--kg", "movies=embedded"], "transport": "stdio"}}
    )
    async with client.session("tot") as session:
        tools = {
            t.name: t for t in await load_mcp_tools(session)
        }  # use these inside the block (e.g. in an agent)
        path = await tools["follow_path"].ainvoke(
            {
                "start": "Tom Hanks",
                "limit": 3,
                "hops": [
                    {"relation_id": "starred_actors", "direction": "backward"},
                    {"relation_id": "directed_by"},
                ],
            }
        )
        print(path)


if __name__ == "__main__":
    if shutil.which("tot-mcp") is None:
        print(
            "langchain_session: tot-mcp is not on PATH: pip install tot-mcp (or add its "
            "environment's bin/)",
            file=sys.stderr,
        )
        sys.exit(2)
    asyncio.run(main())
