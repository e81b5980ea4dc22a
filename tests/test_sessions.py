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
