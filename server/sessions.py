"""2025-era HTTP sessions that no client can hold against the others.

The SDK keeps at most ``max_sessions`` sessions and refuses the next ``initialize`` with 503 until
an idle one expires (600 s; a session with an open GET stream never expires). So 1,000
``initialize`` POSTs that never come back, or 1,000 sessions each holding a GET stream open, locked
every new client out. :class:`SessionJanitor` wraps the MCP app and ends sessions through the
protocol's own ``DELETE`` (which also closes their GET streams) so that:

* **a session is busy only while a request is in flight.** An open GET (SSE) stream is how a client
  listens, not work in progress: a session with only a stream open may be ended like any idle one.
* **one client holds at most ``max_per_client`` sessions.** A client is its peer address; IPv6
  addresses count by their /64, which one host can fill with addresses at will. Its next
  ``initialize`` first ends its own least likely to be missed (never used after its ``initialize``,
  else idle longest); if every one of them has a request in flight, the new session is refused with
  503, so the cap holds whatever the client keeps open.
* **at the global limit, the biggest holder gives way.** The SDK's 503 is answered by ending a
  session of the client holding the most sessions (ties: the one whose network, IPv4 /24 or IPv6
  /48, holds the most), and only of a client holding more than the newcomer does, or of the newcomer
  itself. Spreading over addresses therefore ends the spreader's own sessions first: another
  client's session goes only when it holds more than everyone else, and a session with a request in
  flight never goes.

Sessions that stay half-open longer than ``HANDSHAKE_SECONDS`` are ended whenever a new session
opens. Only the public protocol is used (the ``Mcp-Session-Id`` header, ``DELETE``), so the SDK's
session manager stays a black box. 2026-era requests carry no session and pass straight through.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import time
from collections import Counter
from collections.abc import Callable

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .asgi import header, respond

log = logging.getLogger("tot_mcp.sessions")

HANDSHAKE_SECONDS = (
    30.0  # a session with nothing after its initialize is ended after this, when others arrive
)
IDLE_SECONDS = 600.0  # the SDK's idle timeout (server/transports.py): a quiet session is gone then
MAX_OPENING_BYTES = (
    1 << 20
)  # an initialize body larger than this is passed on unbuffered (and cannot be retried)
_SESSION = b"mcp-session-id"
_VERSION = b"mcp-protocol-version"


class SessionJanitor:
    def __init__(
        self,
        app: ASGIApp,
        path: str,
        max_per_client: int,
        handshake_seconds: float = HANDSHAKE_SECONDS,
        idle_seconds: float = IDLE_SECONDS,
    ) -> None:
        self.app, self.path, self.handshake_seconds = app, path, handshake_seconds
        self.max_per_client = max(1, max_per_client)
        self.idle_seconds = idle_seconds
        self.opened: dict[str, float] = {}  # session → when it was opened
        self.client: dict[str, str] = {}  # session → the client (see client_key) that opened it
        self.last_seen: dict[str, float] = {}  # session → end of its last request
        self.used: set[str] = set()  # sessions that sent anything but a GET after their initialize
        self.in_flight: Counter[str] = Counter()  # session → requests served now, GET streams aside
        self.streams: Counter[str] = Counter()  # session → GET streams open
        self.opening: Counter[str] = Counter()  # client → initialize requests admitted, unanswered

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        session = header(scope, _SESSION)
        if session is not None:
            await self._in_session(session, scope, receive, send)
        elif scope.get("method") == "POST" and _opens_session(scope):
            await self._opening(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _in_session(self, session: str, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a request in a session, counting it as work in flight unless it is a GET stream: a
        session that only listens must not become one that can never be ended."""
        stream = scope.get("method") == "GET"
        counts = self.streams if stream else self.in_flight
        counts[session] += 1
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            counts[session] -= 1
            if not counts[session]:
                del counts[session]
            if status == 404 or scope.get("method") == "DELETE":
                self._forget(session)
            elif session in self.opened:
                if not stream:
                    self.used.add(session)
                self.last_seen[session] = time.monotonic()

    async def _opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        """An ``initialize``: the client's own sessions past its share are ended first (or, all
        busy, the request is refused); if the SDK then refuses it as one session too many, the
        fairest victim is ended and the request served again from its buffered body."""
        await self._end_stale(scope)
        body, more = await _read_body(receive)
        client = client_key(_peer(scope))
        own = self._make_room(client)
        if own is None:
            log.warning(
                "client %s holds %d sessions, all busy: refused a new one",
                client,
                self.max_per_client,
            )
            # a JSON-RPC error, as the SDK answers at its own session limit
            error = {
                "code": -32603,
                "message": "Too many open sessions from this client; "
                "close one or wait for one to finish",
            }
            await respond(
                send, 503, json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
            )
            return
        self.opening[client] += 1  # reserved until the answer starts: the session is noted then
        reserved = True

        def release() -> None:
            nonlocal reserved
            if reserved:
                reserved = False
                self.opening[client] -= 1
                if not self.opening[client]:
                    del self.opening[client]

        try:
            for victim in own:
                await self._delete(victim, scope)
                log.warning(
                    "client %s holds %d sessions: ended its session %s… (idle or half-open)",
                    client,
                    self.max_per_client,
                    victim[:8],
                )
            noted = self._noting(send, client, release)
            await self._admit(client, body, more, scope, receive, noted)
        finally:
            release()

    async def _admit(
        self, client: str, body: bytes, more: bool, scope: Scope, receive: Receive, noted: Send
    ) -> None:
        if more:  # too large to buffer: no retry, but still served
            await self.app(scope, _replay(body, receive, more_body=True), noted)
            return
        held: list[Message] = []
        refused = False

        async def hold(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start":
                refused = message["status"] == 503 and bool(self.opened)
            if refused:
                held.append(message)
            else:
                await noted(message)

        await self.app(scope, _replay(body, receive), hold)
        if not refused:
            return
        victim = self._fair_victim(client)
        if victim is None:
            for message in held:  # no session may fairly go: the SDK's own 503 stands
                await noted(message)
            return
        owner = self.client[victim]
        self._forget(victim)
        await self._delete(victim, scope)
        log.warning(
            "session limit reached: ended session %s… of client %s (the biggest holder) "
            "to admit %s",
            victim[:8],
            owner,
            client,
        )
        await self.app(scope, _replay(body, receive), noted)

    def _noting(self, send: Send, client: str, release: Callable[[], None]) -> Send:
        """``send``, noting the session an answer opens and releasing the client's reservation as
        the answer starts: the client may send its next ``initialize`` before this request's task
        ends, and must not find its last session counted twice."""

        async def noted(message: Message) -> None:
            if message["type"] == "http.response.start":
                self._note_opened(message, client)
                release()
            await send(message)

        return noted

    def _note_opened(self, start: Message, client: str) -> None:
        session = header(start, _SESSION)
        if session is None or start["status"] >= 400:
            return
        now = time.monotonic()
        self.opened.setdefault(session, now)
        self.last_seen[session] = now
        self.client[session] = client

    def _make_room(self, client: str) -> list[str] | None:
        """The client's own sessions to end so that one more fits its share, already forgotten
        here (no other opening can count or pick them); ``None`` when too few of them are idle."""
        mine = [s for s, c in self.client.items() if c == client]
        excess = len(mine) + self.opening[client] + 1 - self.max_per_client
        if excess <= 0:
            return []
        idle = sorted((s for s in mine if not self.in_flight.get(s)), key=self._missed)
        if len(idle) < excess:
            return None
        for session in idle[:excess]:
            self._forget(session)
        return idle[:excess]

    def _fair_victim(self, client: str) -> str | None:
        """The session to end at the global limit: one of the client holding the most sessions
        (ties: of the network holding the most), provided that client holds more than ``client``
        does or is ``client``; ``None`` if no such session is idle."""
        held = Counter(self.client.values())
        nets = Counter(network_key(c) for c in self.client.values())
        mine = held[client]
        idle = [
            s
            for s, c in self.client.items()
            if not self.in_flight.get(s) and (c == client or held[c] > mine)
        ]
        if not idle:
            return None
        return min(
            idle,
            key=lambda s: (
                -held[self.client[s]],
                -nets[network_key(self.client[s])],
                *self._missed(s),
            ),
        )

    def _missed(self, session: str) -> tuple[bool, float]:
        """Sorts sessions least likely to be missed first: never used after ``initialize``, then
        idle longest."""
        return session in self.used, self.last_seen.get(session, 0.0)

    async def _end_stale(self, scope: Scope) -> None:
        """End sessions half-open for longer than ``handshake_seconds``; forget those the SDK has
        let expire (quiet past ``idle_seconds``): they no longer count toward a client's share."""
        now = time.monotonic()
        cutoff = now - self.handshake_seconds
        stale = [
            s
            for s, t in self.opened.items()
            if s not in self.used and t < cutoff and not self.in_flight.get(s)
        ]
        for session in stale:
            self._forget(session)
        expired = [
            s
            for s, t in self.last_seen.items()
            if t < now - self.idle_seconds and not self.in_flight.get(s) and not self.streams.get(s)
        ]
        for session in expired:
            self._forget(session)
        for session in stale:
            await self._delete(session, scope)

    async def _delete(self, session: str, scope: Scope) -> None:
        """``DELETE`` the session through the app, as its client could have; that closes its GET
        stream too. It is forgotten first, so no concurrent opening counts or picks it twice."""
        self._forget(session)
        kept = (b"host", b"origin", b"authorization")
        headers = [(k, v) for k, v in scope.get("headers", ()) if k in kept]
        headers += [(_SESSION, session.encode("latin-1")), (_VERSION, b"2025-11-25")]
        delete = {**scope, "method": "DELETE", "headers": headers, "query_string": b""}

        async def discard(_: Message) -> None:
            return None

        try:
            await self.app(delete, _replay(b"", None), discard)
        # ending a session nobody uses must never fail the request that needs room
        except Exception:  # noqa: BLE001
            log.exception("ending session %s… failed", session[:8])

    def _forget(self, session: str) -> None:
        self.opened.pop(session, None)
        self.client.pop(session, None)
        self.last_seen.pop(session, None)
        self.used.discard(session)


def client_key(address: str) -> str:
    """The client a session is counted against: its IPv4 address, or its IPv6 /64 (one host's usual
    allocation, every address of which it can use); an IPv4-mapped IPv6 address counts as the IPv4
    one. A proxy in front makes every client one."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def network_key(client: str) -> str:
    """The network a client is in (IPv4 /24, IPv6 /48), which breaks ties between clients holding as
    many sessions: many addresses of one network give way before a client elsewhere."""
    try:
        net = ipaddress.ip_network(client, strict=False)
    except ValueError:
        return client
    return str(net.supernet(new_prefix=24 if net.version == 4 else 48))


def _opens_session(scope: Scope) -> bool:
    """A session-less POST opens a 2025-era session unless it names a later protocol version (the
    SDK routes those to its stateless 2026-era path, which never opens one)."""
    version = header(scope, _VERSION)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


def _peer(scope: Scope) -> str:
    """The peer address of a request (a proxy in front makes every client one)."""
    peer = scope.get("client")
    return str(peer[0]) if peer else "?"


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    """The request body, up to :data:`MAX_OPENING_BYTES`; ``more`` when it is larger (the rest is
    left unread)."""
    chunks: list[bytes] = []
    size = 0
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
    """A ``receive`` that gives ``body`` first, then what the original ``receive`` gives (the rest
    of the body when ``more_body``, else the client's disconnect, whenever it comes); with no
    original, a disconnect at once."""
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
