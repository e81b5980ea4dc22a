"""Abandoned handshakes cannot lock clients out (issue #25 item 3): at the session limit, a session that never went
past its ``initialize`` (else the one idle longest) is ended to admit the next client; a session in use is kept.
Through the real ``tot-mcp --transport http`` process, raw HTTP for the attacker and the SDK client for the users."""

from __future__ import annotations

import httpx
from mcp_client import http_server, http_session, text_of

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "abandoned", "version": "0"}}}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json",
           "mcp-protocol-version": "2025-11-25"}


async def abandon_handshakes(url: str, n: int) -> list[int]:
    """``n`` initialize POSTs whose sessions are never used again; their HTTP statuses."""
    async with httpx.AsyncClient(timeout=10) as client:
        return [(await client.post(url, json=INIT, headers=HEADERS)).status_code for _ in range(n)]


async def test_abandoned_handshakes_make_room_for_a_real_client_and_a_session_in_use_is_kept(tmp_path):
    config = tmp_path / "tot.toml"
    config.write_text("[server]\nmax_sessions = 3\n", encoding="utf-8")
    async with http_server(["--kg", "movies=embedded", "--config", str(config)]) as url:
        async with http_session(url) as user:  # a client that keeps using its session
            before = await user.call_tool("list_kgs", {})
            statuses = await abandon_handshakes(url, 10)  # far past the limit
            async with http_session(url) as newcomer:
                late = await newcomer.call_tool("initialize", {"query": "[Tom Hanks]"})
            after = await user.call_tool("list_kgs", {})  # the session in use survived the churn
    assert statuses == [200] * 10  # each abandoned handshake was admitted by ending an older abandoned one
    assert not before.is_error and not late.is_error and not after.is_error, text_of(after)


async def test_one_client_past_its_share_of_sessions_ends_its_own_oldest_not_other_clients(tmp_path):
    """A peer address holds at most ``max_sessions_per_client`` sessions: a flood from one address (127.0.0.2 here)
    ends that address's own oldest idle sessions; another client's idle session is left alone."""
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
                used = [(await other.post(url, json=ping, headers={**HEADERS, "mcp-session-id": s})).status_code
                        for s in sessions]
            after = await user.call_tool("list_kgs", {})
    assert used == [404, 404, 404, 200, 200, 200]  # the flood kept its three newest sessions
    assert not after.is_error, text_of(after)


async def test_a_client_that_sends_its_headers_or_body_too_slowly_is_cut_off(tmp_path):
    """Slow-loris: headers never finished → the connection is closed; a body never finished → the request ends
    (the app sees the client gone) — both within the configured seconds, not held open indefinitely."""
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

        headers_at, headers_got = await stalled(f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n".encode())
        body_at, body_got = await stalled(
            f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\nAccept: "
            f"application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{{".encode())
        async with http_session(url) as s:  # a normal client is served as ever
            ok = await s.call_tool("list_kgs", {})
    assert headers_got == b"" and 0.9 < headers_at < 8  # closed without an answer
    assert body_got.startswith(b"HTTP/1.1 4") and 1.9 < body_at < 10  # an error answer, then done
    assert not ok.is_error
