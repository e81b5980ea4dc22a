"""Bounded 2025-era HTTP sessions that abandoned handshakes cannot exhaust (issue #25 item 3).

The SDK keeps at most ``max_sessions`` sessions and refuses the next ``initialize`` with 503 until an idle one
expires (600 s). So 1,000 ``initialize`` POSTs that never come back locked every new client out for ten minutes.
:class:`SessionJanitor` wraps the MCP app and, when a new session is refused for that reason, ends the session the
least likely to be missed — one whose handshake never went further than ``initialize``, else the one idle longest,
never one with a request in flight — through the protocol's own ``DELETE``, then lets the new session in. Sessions
that stay half-open longer than ``HANDSHAKE_SECONDS`` are ended the same way whenever a new session opens. One
client (a peer address) holds at most ``max_per_client`` sessions: its next one ends its own least likely to be
missed, so one client's flood of sessions ends its own idle ones, not everyone else's.

Only the public protocol is used (the ``Mcp-Session-Id`` header, ``DELETE``), so the SDK's session manager stays a
black box. 2026-era requests carry no session and pass straight through.
"""

from __future__ import annotations

import logging
import time
from collections import Counter

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("tot_mcp.sessions")

HANDSHAKE_SECONDS = 30.0  # a session with nothing after its initialize is ended after this, when others arrive
MAX_PER_CLIENT = 100  # sessions one peer address may hold (`[server] max_sessions_per_client`)
MAX_OPENING_BYTES = 1 << 20  # an initialize body larger than this is passed on unbuffered (and cannot be retried)
_SESSION = b"mcp-session-id"


class SessionJanitor:
    def __init__(self, app: ASGIApp, path: str, handshake_seconds: float = HANDSHAKE_SECONDS,
                 max_per_client: int = MAX_PER_CLIENT) -> None:
        self.app, self.path, self.handshake_seconds = app, path, handshake_seconds
        self.max_per_client = max(1, max_per_client)
        self.opened: dict[str, float] = {}  # session → when it was opened
        self.client: dict[str, str] = {}  # session → the peer address that opened it
        self.last_seen: dict[str, float] = {}  # session → end of its last request
        self.used: set[str] = set()  # sessions that sent anything after their initialize
        self.in_flight: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        session = _header(scope, _SESSION)
        if session is not None:
            await self._in_session(session, scope, receive, send)
        elif scope.get("method") == "POST":
            await self._opening(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _in_session(self, session: str, scope: Scope, receive: Receive, send: Send) -> None:
        self.in_flight[session] += 1
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            self.in_flight[session] -= 1
            if not self.in_flight[session]:
                del self.in_flight[session]
            if status == 404 or scope.get("method") == "DELETE":
                self._forget(session)
            elif session in self.opened:
                self.used.add(session)
                self.last_seen[session] = time.monotonic()

    async def _opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A request without a session (an ``initialize``): served; if refused as one session too many, an old
        session is ended and the request served again from its buffered body."""
        await self._end_half_open(scope)
        body, more = await _read_body(receive)
        if more:  # too large to buffer: no retry, but still served
            await self.app(scope, _replay(body, receive, more_body=True), send)
            return
        held: list[Message] = []
        refused = False
        client = _peer(scope)
        opened: list[str] = []  # the session this request opened, once the app has answered
        noted = self._noting(send, client, opened)

        async def hold(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start":
                refused = message["status"] == 503 and bool(self.opened)
            if refused:
                held.append(message)
            else:
                await noted(message)

        await self.app(scope, _replay(body, receive), hold)
        if refused:
            victim = self._victim()
            if victim is None:
                for message in held:  # every session is busy: the SDK's own 503 stands
                    await send(message)
                return
            await self._end(victim, scope)
            log.warning("session limit reached: ended session %s… (idle or half-open) to admit a new one", victim[:8])
            await self.app(scope, _replay(body, receive), noted)
        await self._bound_client(client, opened, scope)

    def _noting(self, send: Send, client: str, opened: list[str]) -> Send:
        async def noted(message: Message) -> None:
            if message["type"] == "http.response.start":
                opened.extend(self._note_opened(message, client))
            await send(message)

        return noted

    def _note_opened(self, start: Message, client: str) -> list[str]:
        session = _header(start, _SESSION)
        if session is None or start["status"] >= 400:
            return []
        now = time.monotonic()
        self.opened.setdefault(session, now)
        self.last_seen[session] = now
        self.client[session] = client
        return [session]

    def _victim(self, among: list[str] | None = None) -> str | None:
        idle = [s for s in (self.opened if among is None else among) if not self.in_flight.get(s)]
        if not idle:
            return None
        return min(idle, key=lambda s: (s in self.used, self.last_seen.get(s, 0.0)))

    async def _bound_client(self, client: str, opened: list[str], scope: Scope) -> None:
        """Past its share, the client's own least-missed session (never the one it just opened) is ended."""
        mine = [s for s, c in self.client.items() if c == client and s in self.opened]
        while len(mine) > self.max_per_client:
            victim = self._victim([s for s in mine if s not in opened])
            if victim is None:
                return
            await self._end(victim, scope)
            mine.remove(victim)
            log.warning("client %s holds %d sessions: ended its session %s… (idle or half-open)", client,
                        self.max_per_client, victim[:8])

    async def _end_half_open(self, scope: Scope) -> None:
        cutoff = time.monotonic() - self.handshake_seconds
        stale = [s for s, t in self.opened.items() if s not in self.used and t < cutoff and not self.in_flight.get(s)]
        for session in stale:
            await self._end(session, scope)

    async def _end(self, session: str, scope: Scope) -> None:
        """``DELETE`` the session through the app, as its client could have."""
        headers = [(k, v) for k, v in scope.get("headers", ()) if k in (b"host", b"origin", b"authorization")]
        headers += [(_SESSION, session.encode("latin-1")), (b"mcp-protocol-version", b"2025-11-25")]
        delete = {**scope, "method": "DELETE", "headers": headers, "query_string": b""}

        async def discard(_: Message) -> None:
            return None

        try:
            await self.app(delete, _replay(b"", None), discard)
        except Exception:  # noqa: BLE001 - ending a session nobody uses must never fail the request that needs room
            log.exception("ending session %s… failed", session[:8])
        self._forget(session)

    def _forget(self, session: str) -> None:
        self.opened.pop(session, None)
        self.client.pop(session, None)
        self.last_seen.pop(session, None)
        self.used.discard(session)


def _peer(scope: Scope) -> str:
    """The client a session belongs to: its peer address (a proxy in front makes every client one)."""
    peer = scope.get("client")
    return str(peer[0]) if peer else "?"


def _header(scope: Scope | Message, name: bytes) -> str | None:
    """The value of header ``name`` in a request's scope or a response's start message."""
    return next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == name), None)


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    """The request body, up to :data:`MAX_OPENING_BYTES`; ``more`` when it is larger (the rest is left unread)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if not message.get("more_body"):
            return b"".join(chunks), False
        if size > MAX_OPENING_BYTES:
            return b"".join(chunks), True


def _replay(body: bytes, rest: Receive | None, more_body: bool = False) -> Receive:
    """A ``receive`` that gives ``body`` first, then what the original ``receive`` gives (the rest of the body when
    ``more_body``, else the client's disconnect, whenever it comes); with no original, a disconnect at once."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": more_body}
        if rest is not None:
            return await rest()
        return {"type": "http.disconnect"}

    return receive
