"""Start the real ``tot-mcp`` process and talk to it through the MCP SDK's own clients.

Reuse these in any test that needs the server end to end::

    async with stdio_session(["--kg", "movies=embedded"]) as session:
        result = await session.call_tool("initialize", {"query": "[Tom Hanks]"})

    async with http_server(["--token", "s3cret"]) as url:
        async with http_session(url, token="s3cret") as session:
            ...

``stdio_session`` yields an initialized ``ClientSession``; ``http_server`` starts
``tot-mcp --transport http --port 0`` (a free port chosen by the OS), waits until it listens and yields the
endpoint URL; ``http_session`` connects to such a URL. Everything runs on 127.0.0.1 and is torn down on exit.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from server.http_child import REPO, SERVER_CMD, http_child, server_env

__all__ = ["REPO", "SERVER_CMD", "server_env", "stdio_session", "run_http_server", "http_server", "http_session",
           "text_of", "inprocess_client"]


@contextlib.asynccontextmanager
async def stdio_session(
    args: Sequence[str] = (), *, env: dict[str, str] | None = None, read_timeout: float = 60.0
) -> AsyncIterator[ClientSession]:
    """An initialized client session with ``tot-mcp ARGS`` running over stdio. Server stderr goes to a temp
    file that is printed if the block raises, so failures show the server's side too."""
    params = StdioServerParameters(command=SERVER_CMD[0], args=[*SERVER_CMD[1:], *args], env=server_env(env),
                                   cwd=str(REPO))
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    yield session
        except BaseException:
            errlog.seek(0)
            sys.stderr.write("---- tot-mcp stderr ----\n" + errlog.read()[-4000:])
            raise


@contextlib.contextmanager
def run_http_server(args: Sequence[str] = (), *, env: dict[str, str] | None = None,
                    startup_timeout: float = 60.0) -> Iterator[str]:
    """Synchronous core of :func:`http_server` (the launcher the load benchmark uses too): yields the URL."""
    with http_child(args, env=env, startup_timeout=startup_timeout) as child:
        yield child.url


@contextlib.asynccontextmanager
async def http_server(args: Sequence[str] = (), *, env: dict[str, str] | None = None) -> AsyncIterator[str]:
    """``tot-mcp --transport http`` on a free 127.0.0.1 port; yields ``http://127.0.0.1:PORT/mcp``."""
    with run_http_server(args, env=env) as url:
        yield url


@contextlib.asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    """An initialized client session over streamable HTTP, sending the bearer token if given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=120.0)) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                yield session


def text_of(result) -> str:
    """The concatenated text content of a tool/prompt result."""
    return "\n".join(getattr(c, "text", "") for c in result.content)


@contextlib.asynccontextmanager
async def inprocess_client(runtime) -> AsyncIterator["Client"]:
    """The SDK's ``Client`` connected in-process to ``build_server(runtime)``: the same tools, schemas and error
    mapping as the real process, without spawning one (fast; use for detailed behaviour tests)."""
    from mcp import Client

    from server.app import build_server

    async with Client(build_server(runtime)) as client:
        yield client
