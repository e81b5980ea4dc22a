"""Both protocol eras, both transports: every registered tool through the SDK's own client.

The MCP spec of 2026-07-28 has no ``initialize`` handshake and no sessions: a client sends
``server/discover``, then every request carries its protocol version, client info and capabilities
in ``_meta`` (over HTTP also in the ``Mcp-Protocol-Version`` header). Clients of the 2025 era still
open with ``initialize``. The SDK (mcp 2.3) serves both from one server: over stdio the first
request decides the connection's era; over streamable HTTP each request is routed by its
``Mcp-Protocol-Version`` header (a 2026 request is one self-contained POST, a 2025 one belongs to
the session its ``initialize`` opened). On the client side ``ClientSession.initialize()`` opens a
2025-era connection and ``ClientSession.discover()`` a 2026-era one (``mcp.Client`` does
``mode="auto"``: discover, fall back to initialize) — ``tests/mcp_client.py`` exposes that as
``era="legacy" | "modern"``.

For each (transport, era) one tour runs in a module-scoped fixture — one stdio server process per
era, and one HTTP server process that both eras share — and calls every tool the server lists (a
tool without a call here fails ``test_every_listed_tool_is_driven``), plus ``tree_of_traversals``
with progress and a bad call. The tests then check the tour's results. The KG is the small movie KG
of the retrieval tests, so the retrieval tools build their indexes in seconds.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp_client import ERAS, http_session, run_http_server, stdio_session, text_of
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from retrieval_fixtures import TRIPLES

QUESTION = "what genres are the films directed by [Eli Park]"
TOT_ARGS = {"query": "which films did [Eli Park] direct", "llm": "offline", "k": 2}


def _calls(eli: str, handle: str) -> dict[str, dict[str, Any]]:
    """One valid call per registered tool (``eli`` = Eli Park's ID, ``handle`` = a result handle of
    his films)."""
    return {
        "initialize": {"query": QUESTION, "limit": 3},
        "search_entities": {"text": "glass rivers", "limit": 3},
        "get_relations": {"entity_ids": [eli]},
        "get_edges": {
            "entity_ids": [eli],
            "relation_id": "mini:directed_by",
            "direction": "backward",
        },
        "follow_path": {
            "from_result": handle,
            "hops": [{"relation_id": "mini:has_genre", "direction": "forward"}],
        },
        "describe_entity": {"from_result": handle, "position": 0},
        "list_kgs": {},
        "tree_of_traversals": TOT_ARGS,
        "ark_retrieve": {"query": QUESTION},
        "route_query": {"query": "which films did [Ada Stone] direct"},
        "router_stats": {},
        "beam_search": {"query": "adventure films by Ivo Tan"},
        "rerank_retrieve": {"query": "films directed by Ivo Tan"},
        "build_index": {"index": "all"},
    }


BAD_CALL = ("get_edges", {"entity_ids": ["Eli Park"], "relation_id": "mini:directed_by"})


class Tour:
    """What one session in one era saw."""

    def __init__(self, transport: str, era: str) -> None:
        self.transport, self.era = transport, era
        self.protocol_version: str | None = None
        self.listed: list[str] = []
        self.results: dict[str, Any] = {}
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.bad: Any = None
        self.after_bad: Any = None


async def _tour(session, tour: Tour) -> Tour:
    tour.protocol_version = session.protocol_version
    tools = (await session.list_tools()).tools
    tour.listed = [t.name for t in tools]
    plain_query = {t.name for t in tools if t.input_schema.get("required") == ["query"]}
    linked = await session.call_tool("initialize", {"query": QUESTION, "limit": 3})
    eli = linked.structured_content["entities"][0]["entity"]["id"]
    films = await session.call_tool(
        "get_edges",
        {"entity_ids": [eli], "relation_id": "mini:directed_by", "direction": "backward"},
    )
    handle = films.structured_content["result_id"]

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        tour.progress.append((done, total, message))

    calls = _calls(eli, handle)
    # a strategy tool registered later, whose only required argument is the query, is called with
    # just that
    calls.update(
        {
            name: {"query": QUESTION}
            for name in tour.listed
            if name not in calls and name in plain_query
        }
    )
    for name, args in calls.items():
        if name in tour.listed:
            callback = on_progress if name == "tree_of_traversals" else None
            tour.results[name] = await session.call_tool(name, args, progress_callback=callback)
    tour.bad = await session.call_tool(*BAD_CALL)
    tour.after_bad = await session.call_tool("list_kgs", {})
    return tour


COMBOS = [(transport, era) for transport in ("stdio", "http") for era in ERAS]


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("eras")
    path = tmp / "mini_kb.txt"
    path.write_text(TRIPLES, encoding="utf-8")
    config = (
        tmp / "tot.toml"
    )  # the search's knobs are the server's settings, not the tool's arguments
    config.write_text("[strategy.tot]\nmax_hops = 2\nmax_expansions = 6\n", encoding="utf-8")
    return (
        [
            "--kg",
            f"mini={path}",
            "--config",
            str(config),
            "--tools",
            "all",
        ],  # every tool, to drive each
        {"TOT_MCP_CACHE_DIR": str(tmp / "cache")},
    )


@pytest.fixture(scope="module")
def http_url(kb):
    """One streamable-HTTP server process for both eras (a 2025 and a 2026 client at the same
    endpoint)."""
    args, env = kb
    with run_http_server(args, env=env, startup_timeout=90.0) as url:
        yield url


@pytest.fixture(scope="module", params=COMBOS, ids=[f"{t}-{e}" for t, e in COMBOS])
def tour(request, kb) -> Tour:
    transport, era = request.param
    args, env = kb
    result = Tour(transport, era)

    async def run() -> Tour:
        with anyio.fail_after(240):
            if transport == "stdio":
                async with stdio_session(args, env=env, era=era) as session:
                    return await _tour(session, result)
            async with http_session(request.getfixturevalue("http_url"), era=era) as session:
                return await _tour(session, result)

    return anyio.run(run)


# -- the tests -------------------------------------------------------------------------------------
def test_the_session_runs_in_the_era_asked_for(tour):
    expected = MODERN_PROTOCOL_VERSIONS if tour.era == "modern" else HANDSHAKE_PROTOCOL_VERSIONS
    assert tour.protocol_version in expected


def test_every_listed_tool_is_driven(tour):
    """Every tool the server lists was called: a tool registered later that needs more than a query
    and has no call in ``_calls`` fails here instead of going untested; the tools of ``_calls`` are
    all still there."""
    assert set(tour.listed) == set(tour.results), "add a call for each new tool to _calls"
    assert set(_calls("x", "y")) <= set(tour.listed)
    later = {name: r for name, r in tour.results.items() if name not in _calls("x", "y")}
    assert not {
        name: text_of(r) for name, r in later.items() if r.is_error
    }  # called with just a query


@pytest.mark.parametrize("name", list(_calls("x", "y")))
def test_every_tool_answers_with_structured_content(tour, name):
    result = tour.results[name]
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict) and text_of(result).strip()


def test_results_agree_across_eras_where_they_are_deterministic(tour):
    r = tour.results
    assert r["initialize"].structured_content["entities"][0]["entity"]["label"] == "Eli Park"
    assert (
        r["search_entities"].structured_content["entities"][0]["entity"]["label"] == "Glass Rivers"
    )
    assert {t["label"] for t in r["follow_path"].structured_content["targets"]} == {
        "Thriller",
        "Drama",
    }
    assert r["describe_entity"].structured_content["entity"]["label"] in {
        "Iron Orchard",
        "Glass Rivers",
    }
    assert r["list_kgs"].structured_content["kgs"][0]["name"] == "mini"
    assert (
        r["router_stats"].structured_content["total"] >= 1
    )  # the HTTP process counts both eras' route_query
    assert r["build_index"].structured_content["levels"]["L2"] > 0


def test_tree_of_traversals_answers_offline_with_a_progress_notification_per_expansion(tour):
    data = tour.results["tree_of_traversals"].structured_content
    assert data["strategy"] == "tot, policy offline" and data["expansions"] >= 1
    assert {it["label"] for it in data["items"]} == {"Iron Orchard", "Glass Rivers"}
    assert [p[0] for p in tour.progress] == list(range(1, data["expansions"] + 1))
    assert all(
        total == 6 for _, total, _ in tour.progress
    )  # [strategy.tot] max_expansions of the config
    assert all(message and "expan" in message for _, _, message in tour.progress)


def test_bad_input_is_a_one_line_tool_error_and_the_session_goes_on(tour):
    text = text_of(tour.bad)
    assert tour.bad.is_error
    assert (
        text.startswith("get_edges: invalid input: malformed ID 'Eli Park'")
        and len(text.splitlines()) == 1
    )
    assert "Traceback" not in text
    assert not tour.after_bad.is_error
