"""Start the real ``tot-mcp`` process and talk to it through the MCP SDK's own clients.

Reuse these in any test that needs the server end to end::

    async with stdio_session(["--kg", "movies=embedded"]) as session:
        result = await session.call_tool("initialize", {"query": "[Tom Hanks]"})

    async with http_server(["--token", "s3cret"]) as url:
        async with http_session(url, token="s3cret") as session:
            ...

``stdio_session`` yields an initialized ``ClientSession``; ``http_server`` starts
``tot-mcp --transport http --port 0`` (a free port chosen by the OS), waits until it listens and
yields the endpoint URL; ``http_session`` connects to such a URL. Everything runs on 127.0.0.1 and
is torn down on exit.

Protocol eras: both session helpers take ``era=``. ``"legacy"`` (the default) opens with the
2025-era ``initialize`` handshake (``ClientSession.initialize()``, protocol 2025-11-25; over HTTP
the server then keeps a session, ``Mcp-Session-Id``); ``"modern"`` sends ``server/discover`` and
adopts protocol 2026-07-28 (``ClientSession.discover()``): no handshake, no session, every request
carries its version, client info and capabilities in ``_meta`` (and, over HTTP, in the
``Mcp-Protocol-Version`` header). ``"auto"`` is what the SDK's ``Client`` does by default: probe
``server/discover``, fall back to ``initialize``. ``client_extensions`` advertises client
extensions, e.g. MCP Apps: ``{"io.modelcontextprotocol/ui": {"mimeTypes": [...]}}``.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from tot_mcp.server.http_child import REPO, SERVER_CMD, http_child, server_env

if TYPE_CHECKING:
    from mcp import Client

__all__ = [
    "ERAS",
    "REPO",
    "SERVER_CMD",
    "Era",
    "http_server",
    "http_session",
    "inprocess_client",
    "open_era",
    "run_http_server",
    "server_env",
    "stdio_session",
    "text_of",
]

Era = Literal["legacy", "modern", "auto"]
ERAS: tuple[Era, ...] = ("legacy", "modern")  # the two protocol eras a test should cover


async def open_era(session: ClientSession, era: Era) -> None:
    """Open ``session`` in protocol ``era`` and check that it really runs in it."""
    if era == "legacy":
        await session.initialize()
    elif era == "modern":
        await session.discover()
    elif era == "auto":
        from mcp.client._probe import negotiate_auto

        await negotiate_auto(session)  # what mcp.Client(mode="auto") runs
    else:
        raise ValueError(f"era must be one of legacy, modern, auto; got {era!r}")
    version = session.protocol_version
    if era == "legacy" and version not in HANDSHAKE_PROTOCOL_VERSIONS:
        raise AssertionError(f"expected a handshake-era session, got protocol {version}")
    if era == "modern" and version not in MODERN_PROTOCOL_VERSIONS:
        raise AssertionError(f"expected a 2026-era session, got protocol {version}")


@contextlib.asynccontextmanager
async def stdio_session(
    args: Sequence[str] = (),
    *,
    env: dict[str, str] | None = None,
    read_timeout: float = 60.0,
    era: Era = "legacy",
    client_extensions: dict[str, dict[str, Any]] | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized client session with ``tot-mcp ARGS`` running over stdio, in protocol ``era``.
    Server stderr goes to a temp file that is printed if the block raises, so failures show the
    server's side too."""
    params = StdioServerParameters(
        command=SERVER_CMD[0], args=[*SERVER_CMD[1:], *args], env=server_env(env), cwd=str(REPO)
    )
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, extensions=client_extensions) as session,
            ):
                await open_era(session, era)
                yield session
        except BaseException:
            errlog.seek(0)
            sys.stderr.write("---- tot-mcp stderr ----\n" + errlog.read()[-4000:])
            raise


@contextlib.contextmanager
def run_http_server(
    args: Sequence[str] = (), *, env: dict[str, str] | None = None, startup_timeout: float = 60.0
) -> Iterator[str]:
    """Synchronous core of :func:`http_server` (the launcher the load benchmark uses too): yields
    the URL."""
    with http_child(args, env=env, startup_timeout=startup_timeout) as child:
        yield child.url


@contextlib.asynccontextmanager
async def http_server(
    args: Sequence[str] = (), *, env: dict[str, str] | None = None
) -> AsyncIterator[str]:
    """``tot-mcp --transport http`` on a free 127.0.0.1 port; yields ``http://127.0.0.1:PORT/mcp``."""
    with run_http_server(args, env=env) as url:
        yield url


@contextlib.asynccontextmanager
async def http_session(
    url: str,
    token: str | None = None,
    *,
    era: Era = "legacy",
    headers: dict[str, str] | None = None,
    client_extensions: dict[str, dict[str, Any]] | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized client session over streamable HTTP in protocol ``era``, sending the bearer
    token if given (and any extra ``headers``, e.g. a ``Host`` header as a reverse proxy would send
    it)."""
    headers = {**({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=120.0)) as client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(streams[0], streams[1], extensions=client_extensions) as session,
    ):
        await open_era(session, era)
        yield session


def text_of(result) -> str:
    """The concatenated text content of a tool/prompt result."""
    return "\n".join(getattr(c, "text", "") for c in result.content)


@contextlib.asynccontextmanager
async def inprocess_client(runtime) -> AsyncIterator[Client]:
    """The SDK's ``Client`` connected in-process to ``build_server(runtime)``: the same tools,
    schemas and error mapping as the real process, without spawning one (fast; use for detailed
    behaviour tests)."""
    from mcp import Client

    from tot_mcp.server.app import build_server

    async with Client(build_server(runtime)) as client:
        yield client
