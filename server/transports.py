"""Run a built server over stdio (the default, for desktop clients) or streamable HTTP (uvicorn on a socket)."""

from __future__ import annotations

import logging
import socket
import sys

from mcp.server.mcpserver import MCPServer

from .auth import BearerTokenMiddleware

log = logging.getLogger("tot_mcp.transports")

MCP_PATH = "/mcp"


async def serve_stdio(server: MCPServer) -> None:
    await server.run_stdio_async()


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind before serving so ``--port 0`` works and the real address can be announced (and bind errors are
    reported as such rather than from inside uvicorn)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve_http(server: MCPServer, sock: socket.socket, token: str | None, log_level: str = "warning") -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp`` on an already-bound socket."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, host=host, max_sessions=1000, session_idle_timeout=600
    )
    asgi = BearerTokenMiddleware(app, token) if token else app
    config = uvicorn.Config(asgi, log_level=log_level.lower(), lifespan="on", access_log=False)
    url_host = f"[{host}]" if ":" in host else host
    print(
        f"tot-mcp: serving MCP over streamable HTTP at http://{url_host}:{port}{MCP_PATH}"
        + (" (bearer token required)" if token else ""),
        file=sys.stderr,
        flush=True,
    )
    await uvicorn.Server(config).serve(sockets=[sock])
