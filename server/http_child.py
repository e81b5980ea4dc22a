"""``tot-mcp --transport http`` as a child process on a free 127.0.0.1 port, for tests and
benchmarks.

One helper so the end-to-end tests (``tests/mcp_client.py``) and the load test
(``bench/load_test.py``) start the server the same way: this interpreter, this checkout first on
``PYTHONPATH``, no inherited token, ``--port 0``, and the URL read from the line the server prints
once its socket listens.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Run the server module with this interpreter so no installed console script is needed on PATH.
SERVER_CMD = [sys.executable, "-m", "tot_mcp.server.cli"]
_NO_PROXY = urllib.request.build_opener(
    urllib.request.ProxyHandler({})
)  # loopback: never through a proxy
_URL_RE = re.compile(r"serving MCP over streamable HTTP at (http://\S+)")


@dataclass(frozen=True)
class ChildServer:
    url: str  # http://127.0.0.1:PORT/mcp
    pid: int  # for reading the server's RSS and CPU time from /proc


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child server: this checkout importable first, ``TOT_MCP_TOKEN`` removed
    (a token is passed explicitly where a test wants one), then ``extra``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.pop("TOT_MCP_TOKEN", None)
    env.update(extra or {})
    return env


@contextlib.contextmanager
def http_child(
    args: Sequence[str] = (), *, env: dict[str, str] | None = None, startup_timeout: float = 60.0
) -> Iterator[ChildServer]:
    """Start ``tot-mcp --transport http --host 127.0.0.1 --port 0 ARGS``, yield once it answers
    HTTP, stop it on exit. Its stderr is drained all along (a full pipe would block the server) and
    quoted if it fails to start."""
    proc = subprocess.Popen(
        [*SERVER_CMD, "--transport", "http", "--host", "127.0.0.1", "--port", "0", *args],
        cwd=str(REPO),
        env=server_env(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    found = threading.Event()
    url: list[str] = []

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            m = _URL_RE.search(line)
            if m and not url:
                url.append(m.group(1))
                found.set()
        found.set()  # the process ended without announcing a URL

    threading.Thread(target=pump, daemon=True).start()
    try:
        deadline = time.monotonic() + startup_timeout
        while not found.wait(0.05):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    "tot-mcp did not start listening in time:\n" + "".join(lines[-40:])
                )
        if not url:
            raise RuntimeError(f"tot-mcp exited with {proc.wait()}:\n" + "".join(lines[-40:]))
        _wait_answering(url[0], deadline)
        yield ChildServer(url[0], proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_answering(url: str, deadline: float) -> None:
    """Until the server answers an HTTP request at all (a bare GET on the MCP path is an HTTP error:
    fine)."""
    while True:
        try:
            _NO_PROXY.open(url, timeout=2.0).close()
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
