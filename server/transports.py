"""Run a built server over stdio (the default, for desktop clients) or streamable HTTP (uvicorn on a
socket)."""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tot_mcp.strategies.settings import ServerConfig

from .asgi import header, respond
from .auth import BearerTokenMiddleware
from .sessions import IDLE_SECONDS, SessionJanitor
from .stdio_pipes import pipe_stdio
from .slow_clients import BodyDeadline, protocol_class

if TYPE_CHECKING:
    from anyio import AsyncFile

log = logging.getLogger("tot_mcp.transports")

MCP_PATH = "/mcp"
STDIN_CLOSED_GRACE = (
    60.0  # seconds the stdio server waits, once stdin is closed, for requests it read to finish
)


async def serve_stdio(server: MCPServer) -> None:
    """``MCPServer.run_stdio_async``, except that a line that is not a JSON-RPC message gets a
    JSON-RPC error (-32700 parse error, or -32600 invalid request with the request's id when it has
    one), as over HTTP: the SDK's stdio reader drops such lines, and the client waits forever for an
    answer; and pipes are served from the event loop (``stdio_pipes``), not through a worker thread
    per line."""
    import anyio
    import anyio.abc
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

    # private, for lack of a public way: mcp 2.3.0 runs an MCPServer only over streams it opens
    # itself (run_stdio_async); revisit when a later SDK takes the streams
    # (tests/test_server_stdio.py fails if this moves)
    lowlevel = server._lowlevel_server
    async with (
        pipe_stdio() as (stdin, stdout),
        # the pipes are read and written as stdio_server does an AsyncFile: lines, write, flush
        stdio_server(
            cast("AsyncFile[str] | None", stdin), cast("AsyncFile[str] | None", stdout)
        ) as (read_stream, write_stream),
    ):
        unanswered: set = set()  # IDs of requests read and not answered yet
        all_answered = anyio.Event()

        def answered(request_id) -> None:
            if request_id in unanswered:
                unanswered.discard(request_id)
                if not unanswered:
                    all_answered.set()

        class Answering(anyio.abc.ObjectReceiveStream):
            """The SDK's read stream with malformed lines answered in passing (no task or stream in
            between: a hop through one cost every message a task switch). At the end of input it
            waits for the requests already read to be answered (up to ``STDIN_CLOSED_GRACE``): a
            client that writes its requests and closes stdin gets every answer, as the spec's
            shutdown (close stdin, wait for the exit) expects."""

            async def receive(self):
                nonlocal all_answered
                while True:
                    try:
                        item = await read_stream.receive()
                    except anyio.EndOfStream:
                        with anyio.move_on_after(STDIN_CLOSED_GRACE):
                            if unanswered:
                                await all_answered.wait()
                        raise
                    if not isinstance(item, Exception):
                        message = item.message
                        if isinstance(message, JSONRPCRequest):
                            if not unanswered:
                                all_answered = anyio.Event()
                            unanswered.add(message.id)
                        elif (
                            isinstance(message, JSONRPCNotification)
                            and message.method == "notifications/cancelled"
                        ):
                            params = message.params if isinstance(message.params, dict) else {}
                            answered(params.get("requestId"))  # a cancelled request gets no answer
                        return item
                    log.warning("stdio: malformed JSON-RPC message: %s", _first_line(item))
                    await write_stream.send(SessionMessage(_jsonrpc_error(item)))

            async def aclose(self) -> None:
                await read_stream.aclose()

        class Replying(anyio.abc.ObjectSendStream):
            """The SDK's write stream, noting which requests have their answer."""

            async def send(self, item: SessionMessage) -> None:
                await write_stream.send(item)
                if isinstance(item.message, JSONRPCResponse | JSONRPCError):
                    answered(item.message.id)

            def close(self) -> None:
                write_stream.close()

            async def aclose(self) -> None:
                await write_stream.aclose()

        await lowlevel.run(Answering(), Replying(), lowlevel.create_initialization_options())


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _jsonrpc_error(exc: Exception):
    """The JSON-RPC error for a line the SDK could not read as a message: -32700 when it is not JSON
    at all, else -32600 with the id the line carried (a string or an integer), if any."""
    import mcp_types as types

    errors = exc.errors() if hasattr(exc, "errors") else []
    not_json = any(e.get("type") == "json_invalid" for e in errors) or not errors
    request_id = None
    for e in errors:
        raw = e.get("input")
        if (
            isinstance(raw, dict)
            and isinstance(raw.get("id"), (str, int))
            and not isinstance(raw.get("id"), bool)
        ):
            request_id = raw["id"]
            break
    code, message = (
        (-32700, "Parse error: the line is not JSON")
        if not_json
        else (-32600, "Invalid Request: not a JSON-RPC 2.0 message (e.g. params must be an object)")
    )
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind before serving so ``--port 0`` works and the real address can be announced (and bind
    errors are reported as such rather than from inside uvicorn)."""
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


LOOPBACK = ("127.0.0.1", "localhost", "::1")
_LOOPBACK_HOSTS = [
    "127.0.0.1:*",
    "localhost:*",
    "[::1]:*",
]  # what the SDK allows by itself on a loopback bind


def transport_security(
    bind_host: str, allowed_hosts: Sequence[str] = ()
) -> TransportSecuritySettings | None:
    """The SDK's DNS-rebinding protection for this bind address and the ``--allowed-host`` values.

    A request whose ``Host`` header is not allowed gets ``421 Misdirected Request`` (a disallowed
    ``Origin``: 403). Bound to loopback, the SDK allows only loopback names; behind a reverse proxy
    that forwards the public name (``Host: mcp.example.org``) that is a 421, so each
    ``--allowed-host`` adds a name (any port unless one is given) and its ``http``/``https``
    origins. ``*`` turns the check off (the proxy or gateway checks hosts). Bound elsewhere, the
    check stays on: the bind address is allowed, and on a wildcard bind (``0.0.0.0``, ``::``) this
    machine's own name and addresses; any other name must be an ``--allowed-host``."""
    if "*" in allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = list(allowed_hosts)
    if bind_host in ("0.0.0.0", "::", ""):
        names += [f"[{a}]" if ":" in a else a for a in _own_addresses()]
    elif bind_host not in LOOPBACK:
        names.append(f"[{bind_host}]" if ":" in bind_host else bind_host)
    hosts = list(_LOOPBACK_HOSTS)
    for name in names:
        hosts += [name] if _has_port(name) else [name, f"{name}:*"]
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def _own_addresses() -> list[str]:
    """This machine's host name and the addresses it resolves to: what a client on the network may
    put in ``Host`` when the server listens on every interface."""
    name = socket.gethostname()
    out = [name]
    try:
        out += sorted({str(info[4][0]) for info in socket.getaddrinfo(name, None)})
    except OSError:
        pass
    return [a for a in dict.fromkeys(out) if a and a not in LOOPBACK]


def _has_port(host: str) -> bool:
    return host.rpartition("]")[2].count(":") == 1 if host.startswith("[") else ":" in host


class MisdirectedHint:
    """ASGI wrapper: the SDK answers a disallowed ``Host`` with a bare ``421 Invalid Host header``;
    a user behind a proxy needs to know which name was refused and which flag fixes it, so the body
    says both."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        replaced = False

        async def send_hinted(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 421:
                replaced = True
                host = (header(scope, b"host") or "")[:200]
                body = (
                    f"Misdirected request: Host {host!r} is not allowed here (DNS-rebinding "
                    "protection). If this server is meant to answer to that name (e.g. behind a "
                    f"reverse proxy), start it with --allowed-host {host or 'NAME'}\n"
                ).encode()
                await respond(send, 421, body, b"text/plain; charset=utf-8")
                return
            if replaced:  # the SDK's own body of that response
                return
            await send(message)

        await self.app(scope, receive, send_hinted)


async def serve_http(
    server: MCPServer,
    sock: socket.socket,
    token: str | None,
    settings: ServerConfig,
    log_level: str = "warning",
) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp`` on an already-bound socket, with the
    ``[server]`` settings (``allowed_hosts`` checked already; see :func:`transport_security`).

    ``stateless``: no ``Mcp-Session-Id``: every 2025-era request is served on its own (2026-era
    requests always are), so any process behind a load balancer can answer any request; the price is
    the server-to-client request channel (sampling) for 2025-era clients."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    stateless, allowed_hosts = settings.stateless, settings.allowed_hosts
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        max_sessions=settings.max_sessions,
        session_idle_timeout=IDLE_SECONDS,
        stateless_http=stateless,
        transport_security=transport_security(host, allowed_hosts),
    )
    # at the session limit, an abandoned or idle session makes room for a new client
    # (server/sessions.py)
    asgi: ASGIApp = MisdirectedHint(
        app
        if stateless
        else SessionJanitor(app, MCP_PATH, max_per_client=settings.max_sessions_per_client)
    )
    asgi = BodyDeadline(asgi, settings.body_timeout)  # a slow body: cut (slow headers: below)
    if token:
        asgi = BearerTokenMiddleware(asgi, token)
    # proxy_headers=False: uvicorn would take X-Forwarded-For from any loopback peer as the client's
    # address, and every per-client share (sessions, calls in flight, the LLM budget) is keyed by it
    config = uvicorn.Config(
        asgi,
        log_level=log_level.lower(),
        lifespan="on",
        access_log=False,
        http=protocol_class(settings.header_timeout),
        proxy_headers=False,
    )
    url_host = f"[{host}]" if ":" in host else host
    notes = [n for n, on in (("bearer token required", token), ("stateless", stateless)) if on]
    if allowed_hosts:
        notes.append("allowed hosts: " + ", ".join(allowed_hosts))
    print(
        f"tot-mcp: serving MCP over streamable HTTP at http://{url_host}:{port}{MCP_PATH}"
        + "".join(f" ({n})" for n in notes),
        file=sys.stderr,
        flush=True,
    )
    await uvicorn.Server(config).serve(sockets=[sock])
