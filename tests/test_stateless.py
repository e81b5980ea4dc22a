"""Scale-out: ``tot-mcp --transport http --stateless`` behind a load balancer without sticky
sessions, and the Host check a reverse proxy meets (421, fixed by ``--allowed-host``).

Three real server processes for the module: A and B ``--stateless`` (A also ``--allowed-host
mcp.example.org``), C as by default (sessions). The round-robin proxy is the one of
``bench/load_test.py``.
"""

from __future__ import annotations

import json

import httpx
import pytest
from mcp_client import ERAS, http_session, run_http_server, text_of

from bench import load_test
from tot_mcp.server.cli import main as cli_main

TOM_HANKS = "movies:E1407"
STARRED = {"relation_id": "movies:starred_actors", "direction": "backward"}
DIRECTED = {"relation_id": "movies:directed_by", "direction": "forward"}
PUBLIC_HOST = "mcp.example.org"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
# Handles are derived from the call, so a call a process already answered (in another test) gives it
# the handle: each test makes its handle with its own page size.
LIMITS = {
    ("across", "legacy"): 41,
    ("across", "modern"): 42,
    ("proxy", "legacy"): 43,
    ("proxy", "modern"): 44,
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """Three processes as on three machines behind a load balancer: no disk in common (a handle kept
    on disk by one is not seen by another)."""

    def disk(name: str) -> dict[str, str]:
        return {"TOT_MCP_CACHE_DIR": str(tmp_path_factory.mktemp(f"machine-{name}"))}

    with (
        run_http_server(["--stateless", "--allowed-host", PUBLIC_HOST], env=disk("a")) as a,
        run_http_server(["--stateless"], env=disk("b")) as b,
        run_http_server([], env=disk("c")) as c,
    ):
        yield {"A": a, "B": b, "C": c}


def _call_body(era: str, name: str, arguments: dict) -> tuple[dict, dict]:
    """A ``tools/call`` as one self-contained POST: no ``initialize`` before it, no
    ``Mcp-Session-Id``."""
    from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

    params: dict = {"name": name, "arguments": arguments}
    if era == "modern":
        params["_meta"] = {
            PROTOCOL_VERSION_META_KEY: "2026-07-28",
            CLIENT_CAPABILITIES_META_KEY: {},
        }
        headers = {
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": name,
        }
    else:
        headers = {"mcp-protocol-version": "2025-06-18"}
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}, {
        **ACCEPT,
        **headers,
    }


def _response(r: httpx.Response) -> dict:
    """The JSON-RPC response of a POST answered as JSON or as an SSE stream."""
    if r.headers.get("content-type", "").startswith("application/json"):
        return r.json()
    for line in r.text.splitlines():
        if line.startswith("data:") and '"id":7' in line.replace(" ", ""):
            return json.loads(line[5:])
    raise AssertionError(f"no response in {r.text[:300]!r}")


# -- handles across processes ----------------------------------------------------------------------
@pytest.mark.parametrize("era", ERAS)
async def test_another_process_refuses_a_handle_clearly_and_repeating_the_call_recreates_it(
    servers, era
):
    producing = {"entity_ids": [TOM_HANKS], **STARRED, "limit": LIMITS["across", era]}
    async with http_session(servers["A"], era=era) as a, http_session(servers["B"], era=era) as b:
        made = await a.call_tool("get_edges", producing)
        handle = made.structured_content["result_id"]
        refused = await b.call_tool("get_edges", {"from_result": handle, **DIRECTED})
        again = await b.call_tool("get_edges", producing)
        works = await b.call_tool("get_edges", {"from_result": handle, **DIRECTED})
    text = text_of(refused)
    assert refused.is_error and len(text.splitlines()) == 1
    assert f"result {handle} is unknown here" in text and "repeat the call that returned it" in text
    assert again.structured_content["result_id"] == handle
    assert not works.is_error and len(works.structured_content["edges"]) >= 30


# -- calls without session ids ---------------------------------------------------------------------
@pytest.mark.parametrize("era", ERAS)
def test_a_call_without_initialize_or_session_id_is_served_by_a_stateless_process(servers, era):
    body, headers = _call_body(era, "get_relations", {"entity_ids": [TOM_HANKS]})
    r = httpx.post(servers["A"], json=body, headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    assert "mcp-session-id" not in r.headers
    result = _response(r)["result"]
    assert not result.get("isError") and "movies:starred_actors" in json.dumps(
        result["structuredContent"]
    )


def test_without_stateless_a_2025_era_call_needs_its_session_but_a_2026_era_call_never_does(
    servers,
):
    legacy = httpx.post(
        servers["C"],
        json=_call_body("legacy", "list_kgs", {})[0],
        headers=_call_body("legacy", "list_kgs", {})[1],
        timeout=30,
    )
    body, headers = _call_body("modern", "list_kgs", {})
    modern = httpx.post(servers["C"], json=body, headers=headers, timeout=30)
    assert legacy.status_code == 400 and "session" in legacy.text.lower()
    assert (
        modern.status_code == 200
        and _response(modern)["result"]["structuredContent"]["kgs"][0]["name"] == "movies"
    )


# -- one client session across processes -----------------------------------------------------------
@pytest.mark.parametrize("era", ERAS)
async def test_one_client_session_spread_over_two_processes_by_a_round_robin_proxy_works(
    servers, era
):
    proxy = load_test.RoundRobinProxy(
        [servers["A"], servers["B"]], max_requests=200, max_seconds=120
    )
    url = await proxy.start()
    updates = []

    async def on_progress(done, total, message):
        updates.append((done, total, message))

    try:
        async with http_session(url, era=era) as s:
            tools = {t.name for t in (await s.list_tools()).tools}
            linked = await s.call_tool(
                "initialize", {"query": "[Tom Hanks]"}, progress_callback=on_progress
            )
            answers = [
                await s.call_tool("get_relations", {"entity_ids": [TOM_HANKS]}) for _ in range(4)
            ]
            made = await s.call_tool(
                "get_edges", {"entity_ids": [TOM_HANKS], **STARRED, "limit": LIMITS["proxy", era]}
            )
            used = [
                await s.call_tool(
                    "describe_entity",
                    {"from_result": made.structured_content["result_id"], "position": i},
                )
                for i in range(2)
            ]
    finally:
        await proxy.aclose()
    assert {"get_edges", "tree_of_traversals"} <= tools
    assert linked.structured_content["entities"][0]["entity"]["label"] == "Tom Hanks"
    assert updates == [
        (1.0, 1.0, "movies answered")
    ]  # progress crosses the proxy on the call's own response
    assert (
        all(not a.is_error for a in answers)
        and len({json.dumps(a.structured_content) for a in answers}) == 1
    )
    # a handle lands on whichever process the proxy picks: it works there, or says how to get it
    # back
    assert all(not u.is_error or "repeat the call that returned it" in text_of(u) for u in used)
    assert any(not u.is_error for u in used) and any(u.is_error for u in used)
    assert min(proxy.counts) >= 4 and proxy.failures == 0


# -- the Host check behind a reverse proxy ---------------------------------------------------------
def test_an_unknown_host_is_421_saying_which_flag_admits_it_and_allowed_host_admits_it(servers):
    body, headers = _call_body("legacy", "list_kgs", {})
    refused = httpx.post(
        servers["B"], json=body, headers={**headers, "host": PUBLIC_HOST}, timeout=30
    )
    admitted = httpx.post(
        servers["A"],
        json=body,
        headers={**headers, "host": PUBLIC_HOST, "origin": f"https://{PUBLIC_HOST}"},
        timeout=30,
    )
    other = httpx.post(
        servers["A"], json=body, headers={**headers, "host": "evil.example"}, timeout=30
    )
    assert refused.status_code == 421
    assert (
        f"Host '{PUBLIC_HOST}' is not allowed" in refused.text
        and f"--allowed-host {PUBLIC_HOST}" in refused.text
    )
    assert admitted.status_code == 200 and not _response(admitted)["result"].get("isError")
    assert other.status_code == 421


async def test_the_sdk_client_reaches_a_server_through_its_public_host_name(servers):
    async with http_session(
        servers["A"], era="legacy", headers={"host": f"{PUBLIC_HOST}:443"}
    ) as s:
        result = await s.call_tool("get_relations", {"entity_ids": [TOM_HANKS]})
    assert not result.is_error


@pytest.mark.parametrize(
    "value", ["https://mcp.example.org", "mcp.example.org/mcp", "bad host", "x:70000", "*:80"]
)
def test_a_bad_allowed_host_is_one_line_and_exit_2(value, capsys):
    assert cli_main(["--transport", "http", "--allowed-host", value, "--check"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tot-mcp: error: argument --allowed-host:") and len(err.splitlines()) == 1


# -- the load test's scale-out mode ----------------------------------------------------------------
def test_the_load_test_runs_one_and_two_processes_behind_the_proxy_with_exact_results(capsys):
    pool = load_test.call_pool(12, 11, "agent")
    assert any(
        name == "tree_of_traversals" for name, _ in pool
    )  # whole searches, answered alike by every process
    code = load_test.main(
        [
            "--processes",
            "1,2",
            "--clients",
            "3",
            "--calls",
            "5",
            "--pool",
            "12",
            "--rounds",
            "1",
            "--mix",
            "agent",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    rows = [line for line in out.splitlines() if line.startswith(("| 1 | 1 |", "| 2 | 1 |"))]
    assert len(rows) == 2 and all("| 15 / 0 / 0 |" in row for row in rows), out
    assert rows[1].rstrip(" |").split("| ")[-1].count("/") == 1  # two backends, each with its share
    assert rows[1].split(" | ")[-2].endswith("x")  # the CPU-bound ceiling beside the measured ratio
    assert out.rstrip().endswith("errors_total: 0")


@pytest.mark.parametrize(
    "argv", [["--processes", "0"], ["--processes", "two"], ["--processes", "2", "--rate", "1"]]
)
def test_bad_scale_out_options_are_usage_errors(argv):
    with pytest.raises(SystemExit) as exc:
        load_test.main(argv)
    assert exc.value.code == 2


def test_bound_to_every_interface_a_foreign_host_or_origin_is_still_refused():
    """#36 item 8: bound to 0.0.0.0 the server turned the DNS-rebinding check off (it served
    ``Host: attacker.example``); now loopback names and this machine's own names and addresses
    pass."""
    body, headers = _call_body("legacy", "list_kgs", {})
    with run_http_server(["--host", "0.0.0.0", "--stateless"]) as url:
        url = url.replace("://0.0.0.0:", "://127.0.0.1:")
        own = httpx.post(url, json=body, headers=headers, timeout=30)
        foreign = httpx.post(
            url, json=body, headers={**headers, "host": "attacker.example"}, timeout=30
        )
        origin = httpx.post(
            url, json=body, headers={**headers, "origin": "http://attacker.example"}, timeout=30
        )
    assert own.status_code == 200 and not _response(own)["result"].get("isError")
    assert foreign.status_code == 421 and "--allowed-host attacker.example" in foreign.text
    assert origin.status_code == 403
