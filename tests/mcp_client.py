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
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[1]
# Run the server module with this interpreter so the test needs no installed console script on PATH.
SERVER_CMD = [sys.executable, "-m", "server.cli"]
_URL_RE = re.compile(r"serving MCP over streamable HTTP at (http://\S+)")


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.pop("TOT_MCP_TOKEN", None)
    env.update(extra or {})
    return env


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
    """Synchronous core of :func:`http_server`: start the process, yield the URL once it listens, stop it."""
    proc = subprocess.Popen(
        [*SERVER_CMD, "--transport", "http", "--host", "127.0.0.1", "--port", "0", *args],
        cwd=str(REPO), env=server_env(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )
    lines: list[str] = []
    found = threading.Event()
    url: list[str] = []

    def pump() -> None:  # keep draining stderr so the server never blocks on a full pipe
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            m = _URL_RE.search(line)
            if m and not url:
                url.append(m.group(1))
                found.set()
        found.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        deadline = time.monotonic() + startup_timeout
        while not found.wait(0.05):
            if time.monotonic() > deadline:
                raise TimeoutError("tot-mcp did not start listening in time:\n" + "".join(lines))
        if not url:
            raise RuntimeError(f"tot-mcp exited with {proc.wait()}:\n" + "".join(lines))
        _wait_listening(url[0], deadline)
        yield url[0]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_listening(url: str, deadline: float) -> None:
    while True:
        try:
            httpx2.get(url, timeout=2.0)
            return
        except httpx2.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


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
