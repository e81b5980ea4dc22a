"""Abandoned handshakes cannot lock clients out (issue #25 item 3): at the session limit, a session
that never went past its ``initialize`` (else the one idle longest) is ended to admit the next
client; a session in use is kept. Through the real ``tot-mcp --transport http`` process, raw HTTP
for the attacker and the SDK client for the users."""

from __future__ import annotations

import httpx
from mcp_client import http_server, http_session, text_of

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "abandoned", "version": "0"},
    },
}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


async def abandon_handshakes(url: str, n: int) -> list[int]:
    """``n`` initialize POSTs whose sessions are never used again; their HTTP statuses."""
    async with httpx.AsyncClient(timeout=10) as client:
        return [(await client.post(url, json=INIT, headers=HEADERS)).status_code for _ in range(n)]


async def test_abandoned_handshakes_make_room_for_a_real_client_and_a_session_in_use_is_kept(
    tmp_path,
):
    config = tmp_path / "tot.toml"
    config.write_text("[server]\nmax_sessions = 3\n", encoding="utf-8")
    async with http_server(["--kg", "movies=embedded", "--config", str(config)]) as url:
        async with http_session(url) as user:  # a client that keeps using its session
            before = await user.call_tool("list_kgs", {})
            statuses = await abandon_handshakes(url, 10)  # far past the limit
            async with http_session(url) as newcomer:
                late = await newcomer.call_tool("initialize", {"query": "[Tom Hanks]"})
            after = await user.call_tool("list_kgs", {})  # the session in use survived the churn
    assert (
        statuses == [200] * 10
    )  # each abandoned handshake was admitted by ending an older abandoned one
    assert not before.is_error and not late.is_error and not after.is_error, text_of(after)


async def test_one_client_past_its_share_of_sessions_ends_its_own_oldest_not_other_clients(
    tmp_path,
):
    """A peer address holds at most ``max_sessions_per_client`` sessions: a flood from one address
    (127.0.0.2 here) ends that address's own oldest idle sessions; another client's idle session is
    left alone."""
    config = tmp_path / "tot.toml"
    config.write_text("[server]\nmax_sessions_per_client = 3\n", encoding="utf-8")
    async with http_server(["--kg", "movies=embedded", "--config", str(config)]) as url:
        async with http_session(url) as user:
            await user.call_tool("list_kgs", {})  # then idle while the flood comes
            flood = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
            async with httpx.AsyncClient(timeout=10, transport=flood) as other:
                sessions = []
                for _ in range(6):
                    r = await other.post(url, json=INIT, headers=HEADERS)
                    sessions.append(r.headers["mcp-session-id"])
                ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
                used = [
                    (
                        await other.post(url, json=ping, headers={**HEADERS, "mcp-session-id": s})
                    ).status_code
                    for s in sessions
                ]
            after = await user.call_tool("list_kgs", {})
    assert used == [404, 404, 404, 200, 200, 200]  # the flood kept its three newest sessions
    assert not after.is_error, text_of(after)


async def test_a_client_that_sends_its_headers_or_body_too_slowly_is_cut_off(tmp_path):
    """Slow-loris: headers never finished → the connection is closed; a body never finished → the
    request ends (the app sees the client gone) — both within the configured seconds, not held open
    indefinitely."""
    import asyncio
    import time
    from urllib.parse import urlsplit

    config = tmp_path / "tot.toml"
    config.write_text("[server]\nheader_timeout = 1\nbody_timeout = 2\n", encoding="utf-8")
    async with http_server(["--kg", "movies=embedded", "--config", str(config)]) as url:
        host, port = urlsplit(url).hostname, urlsplit(url).port

        async def stalled(data: bytes) -> tuple[float, bytes]:
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(data)
            started = time.monotonic()
            got = await asyncio.wait_for(reader.read(200), 20)
            writer.close()
            return time.monotonic() - started, got

        headers_at, headers_got = await stalled(
            f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
        )
        body_at, body_got = await stalled(
            f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: "
            "application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: "
            f"1000\r\n\r\n{{".encode()
        )
        async with http_session(url) as s:  # a normal client is served as ever
            ok = await s.call_tool("list_kgs", {})
    assert headers_got == b"" and 0.9 < headers_at < 8  # closed without an answer
    assert body_got.startswith(b"HTTP/1.1 4") and 1.9 < body_at < 10  # an error answer, then done
    assert not ok.is_error


# #36 items 3 and 10: a GET stream does not pin a session, and the biggest holder gives way.


async def pin(url: str, client: httpx.AsyncClient, stack=None) -> tuple[str, httpx.Response | None]:
    """A session as a client that listens would hold it: ``initialize``,
    ``notifications/initialized``, then (given an exit ``stack``) a GET (SSE) stream left open; its
    id and the open stream."""
    r = await client.post(url, json=INIT, headers=HEADERS)
    assert r.status_code == 200, r.text
    session = r.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await client.post(url, json=done, headers={**HEADERS, "mcp-session-id": session})
    if stack is None:
        return session, None
    stream = await stack.enter_async_context(
        client.stream(
            "GET",
            url,
            headers={**HEADERS, "accept": "text/event-stream", "mcp-session-id": session},
        )
    )
    assert stream.status_code == 200
    return session, stream


async def alive(url: str, client: httpx.AsyncClient, sessions: list[str]) -> list[int]:
    """The status of a ping in each session: 200 while it is open, 404 once it was ended."""
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    statuses = []
    for s in sessions:
        r = await client.post(url, json=ping, headers={**HEADERS, "mcp-session-id": s})
        statuses.append(r.status_code)
    return statuses


async def ended(stream: httpx.Response) -> bool:
    """Whether an SSE stream reaches its end within 10 s (the session it listened to was ended)."""
    import asyncio

    async def drain() -> None:
        async for _ in stream.aiter_bytes():
            pass

    try:
        await asyncio.wait_for(drain(), 10)
    except asyncio.TimeoutError:
        return False
    return True


def peer(address: str) -> httpx.AsyncClient:
    """An HTTP client whose connections come from ``address`` (127.0.0.x routes to lo on Linux)."""
    return httpx.AsyncClient(timeout=10, transport=httpx.AsyncHTTPTransport(local_address=address))


async def test_sessions_pinned_by_get_streams_do_not_lock_a_new_client_out(tmp_path):
    """#36 item 3: one peer (127.0.0.2) opens three times the session limit, each session with a
    GET stream open. Its streams no longer make its sessions unevictable: it never holds more than
    the limit, the sessions ended for it have their streams closed, and a new client connects and
    works."""
    import contextlib

    config = tmp_path / "tot.toml"
    config.write_text("[server]\nmax_sessions = 4\n", encoding="utf-8")
    async with http_server(["--kg", "movies=embedded", "--config", str(config)]) as url:
        async with contextlib.AsyncExitStack() as stack, peer("127.0.0.2") as pinner:
            pinned = [await pin(url, pinner, stack) for _ in range(12)]
            async with http_session(url) as newcomer:
                late = await newcomer.call_tool("list_kgs", {})
            statuses = await alive(url, pinner, [s for s, _ in pinned])
            closed = [await ended(stream) for s, stream in pinned[:6]]
    assert not late.is_error, text_of(late)
    assert statuses == [404] * 9 + [200] * 3  # it held the limit; the newcomer took its oldest
    assert all(closed)


async def test_a_clients_share_holds_whatever_it_keeps_open(tmp_path):
    """#36 item 3: with a share of 3, six sessions from one peer, each with a GET stream open, leave
    it three: its own three oldest are ended (their streams closed), never another client's."""
    import contextlib

    config = tmp_path / "tot.toml"
    config.write_text("[server]\nmax_sessions_per_client = 3\n", encoding="utf-8")
    async with http_server(["--kg", "movies=embedded", "--config", str(config)]) as url:
        async with (
            http_session(url) as user,
            contextlib.AsyncExitStack() as stack,
            peer("127.0.0.2") as pinner,
        ):
            await user.call_tool("list_kgs", {})
            pinned = [await pin(url, pinner, stack) for _ in range(6)]
            statuses = await alive(url, pinner, [s for s, _ in pinned])
            closed = [await ended(stream) for _, stream in pinned[:3]]
            after = await user.call_tool("list_kgs", {})
    assert statuses == [404, 404, 404, 200, 200, 200] and all(closed)
    assert not after.is_error, text_of(after)


async def test_spreading_over_addresses_ends_the_spreaders_sessions_not_another_clients(tmp_path):
    """#36 item 10: at the session limit the session ended belongs to the client holding the most
    sessions, and only to one holding more than the newcomer. Before, two addresses with a share of
    3 each sufficed to end another client's idle session at a limit of 6 (ten by default); now a
    client spread over five addresses ends only its own, and the user's idle session survives."""
    import contextlib

    config = tmp_path / "tot.toml"
    config.write_text("[server]\nmax_sessions = 6\nmax_sessions_per_client = 3\n", encoding="utf-8")
    async with http_server(["--kg", "movies=embedded", "--config", str(config)]) as url:
        async with contextlib.AsyncExitStack() as stack:
            user = await stack.enter_async_context(peer("127.0.0.1"))
            mine = [(await pin(url, user))[0]]  # no GET stream: idle, the longest of all
            peers = {n: await stack.enter_async_context(peer(f"127.0.0.{n}")) for n in range(2, 7)}
            held: dict[int, list[str]] = {n: [] for n in peers}
            for n, count in ((2, 3), (3, 2), (4, 2)):  # 2 fills its share, 3 the limit; then 4
                held[n] += [(await pin(url, peers[n]))[0] for _ in range(count)]
            first = {n: await alive(url, peers[n], held[n]) for n in (2, 3, 4)}
            for n in (5, 6, 2, 3, 4):  # then three more sessions from each of the five addresses
                held[n] += [(await pin(url, peers[n]))[0] for _ in range(3)]
            last = {n: await alive(url, peers[n], held[n]) for n in peers}
            after = await alive(url, user, mine)
    # 4's first session ended one of 2's (the biggest holder: 3), its second the older of 2's, 3's
    assert first == {2: [404, 404, 200], 3: [200, 200], 4: [200, 200]}
    assert after == [200]
    assert sum(s.count(200) for s in last.values()) <= 5  # the limit, less the user's own session
    assert all(s[-1] == 200 for s in last.values())  # each address kept its newest


class FakeSessions:
    """A stand-in for the SDK's session manager, in process: opens sessions up to ``limit`` (503
    past it), answers 404 for unknown ones, ends one on ``DELETE``, and holds a request whose body
    is ``b"slow"`` until ``release`` is set, so a session can be busy on cue."""

    def __init__(self, limit: int) -> None:
        import asyncio

        self.limit, self.sessions, self.release = limit, set(), asyncio.Event()
        self.passed: list[str] = []  # versions of session-less requests that opened nothing

    async def __call__(self, scope, receive, send) -> None:
        import uuid

        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        headers = dict(scope["headers"])
        session, version = headers.get(b"mcp-session-id"), headers.get(b"mcp-protocol-version")
        extra = []
        if session is None and version == b"2026-07-28":
            self.passed.append(version.decode())
            status = 200
        elif session is None:
            status = 503 if len(self.sessions) >= self.limit else 200
            if status == 200:
                session = uuid.uuid4().hex.encode()
                self.sessions.add(session)
                extra = [(b"mcp-session-id", session)]
        elif session not in self.sessions:
            status = 404
        elif scope["method"] == "DELETE":
            self.sessions.discard(session)
            status = 200
        else:
            if body == b"slow":
                await self.release.wait()
            status = 200
        await send({"type": "http.response.start", "status": status, "headers": extra})
        await send({"type": "http.response.body", "body": b""})


async def request(
    janitor,
    address: str,
    session: bytes | None = None,
    body: bytes = b"{}",
    version: bytes = b"2025-11-25",
) -> tuple[int, bytes | None]:
    """One request through ``janitor`` from ``address``: its status and the session it names."""
    headers = [(b"mcp-protocol-version", version)]
    if session is not None:
        headers.append((b"mcp-session-id", session))
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": headers,
        "client": (address, 40000),
        "query_string": b"",
    }
    sent = [{"type": "http.request", "body": body, "more_body": False}]
    start: dict = {}

    async def receive():
        return sent.pop() if sent else {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            start.update(message)

    await janitor(scope, receive, send)
    return start["status"], dict(start["headers"]).get(b"mcp-session-id", session)


async def test_a_client_whose_sessions_are_all_busy_is_refused_not_let_past_its_share():
    """The share holds even when no session of the client can be ended: its next initialize is
    refused (503), its sessions untouched; once one is idle again, the next one ends that."""
    import asyncio

    from server.sessions import SessionJanitor

    app = FakeSessions(limit=100)
    janitor = SessionJanitor(app, "/mcp", max_per_client=2)
    mine = [(await request(janitor, "10.0.0.1"))[1] for _ in range(2)]
    busy = [asyncio.create_task(request(janitor, "10.0.0.1", s, b"slow")) for s in mine]
    await asyncio.sleep(0.05)
    refused, _ = await request(janitor, "10.0.0.1")
    other, _ = await request(janitor, "10.0.0.2")  # another client is not affected
    held_while_busy = set(mine) <= app.sessions and len(app.sessions) == 3
    app.release.set()
    await asyncio.gather(*busy)
    admitted, _ = await request(janitor, "10.0.0.1")
    assert (refused, other, admitted) == (503, 200, 200) and held_while_busy
    assert mine[0] not in app.sessions and mine[1] in app.sessions  # its oldest made room


async def test_an_ipv6_client_is_its_64_and_a_2026_request_is_not_a_session():
    """IPv6 addresses of one /64 share one client's share (a host can use any of them); a mapped
    IPv4 address is that address; a 2026-era request opens no session and ends none."""
    from server.sessions import SessionJanitor, client_key

    app = FakeSessions(limit=100)
    janitor = SessionJanitor(app, "/mcp", max_per_client=2)
    sessions = [(await request(janitor, f"2001:db8::{n}"))[1] for n in (1, 2, 3)]
    before = set(app.sessions)
    modern, _ = await request(janitor, "2001:db8::4", version=b"2026-07-28")
    assert sessions[0] not in app.sessions and set(sessions[1:]) <= app.sessions
    assert modern == 200 and app.passed == ["2026-07-28"] and app.sessions == before
    assert client_key("::ffff:10.1.2.3") == "10.1.2.3"
    assert (
        client_key("2001:db8:0:1::5")
        == client_key("2001:db8:0:1:ffff::")
        != client_key("2001:db8:0:2::5")
    )


async def test_at_the_limit_many_addresses_of_one_network_give_way_before_a_client_elsewhere():
    """When every client holds one session, the tie goes to the network holding the most: a flood
    from many addresses of 192.0.2.0/24 ends its own sessions, not a lone client's in another
    network, though that one is idle longest."""
    from server.sessions import SessionJanitor

    app = FakeSessions(limit=5)
    janitor = SessionJanitor(app, "/mcp", max_per_client=3)
    _, lone = await request(janitor, "198.51.100.7")
    await request(janitor, "198.51.100.7", lone)  # used, then idle longest of all
    statuses = []
    for n in range(1, 20):  # each session used once, so later than the lone one
        status, session = await request(janitor, f"192.0.2.{n}")
        statuses += [status, (await request(janitor, f"192.0.2.{n}", session))[0]]
    assert statuses == [200] * 38 and lone in app.sessions and len(app.sessions) == 5
