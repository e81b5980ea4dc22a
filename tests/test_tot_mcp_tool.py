"""The tree_of_traversals MCP tool through the real MCP client: sampling-driven search with progress
notifications, clean fallback/errors when the policy cannot run, bad input as tool errors."""

from __future__ import annotations

import contextlib

import mcp_types as types
import pytest
from mcp.client.client import Client
from tot_fixtures import make_kg

from tot_mcp.server.app import build_server
from tot_mcp.server.runtime import Runtime

Q = "who directed the films [Keanu Reeves] acted in"


def respond(prompt: str) -> str:
    """The 'client model': a scripted reasoner that reads the prompt it is shown."""
    asked = prompt.rsplit("Reply with", 1)[-1]
    if "SCORE" in asked:
        if "Proposed answer" in prompt:
            return (
                "SCORE: 0.9"
                if "Lana Wachowski" in prompt.split("Proposed answer:")[1]
                else "SCORE: 0.2"
            )
        return "SCORE: 0.6"
    if "SELECT_RELATION" in asked:
        return (
            "SELECT_RELATION: directed_by forward"
            if "directed by" in prompt
            else "SELECT_RELATION: 1"
        )
    if "SELECT_ENTITIES" in asked:
        return (
            "SELECT_ENTITIES: The Matrix, Speed"
            if "(The Matrix)" in prompt
            else "SELECT_ENTITIES: Keanu Reeves"
        )
    if (
        ": Lana Wachowski" in prompt.split("Actions so far")[0]
    ):  # her entity line, not a film's description
        return "ANSWER: Lana Wachowski, Jan de Bont"
    return "EXPAND_KG"


async def sampling(context, params: types.CreateMessageRequestParams):
    return types.CreateMessageResult(
        role="assistant",
        model="scripted",
        content=types.TextContent(type="text", text=respond(params.messages[0].content.text)),
    )


@pytest.fixture
def server():
    return build_server(Runtime({"m": make_kg("m")}))


async def test_sampling_policy_answers_with_progress_per_expansion(server):
    progress = []

    async def on_progress(done, total, message):
        progress.append((done, total, message))

    async with Client(server, sampling_callback=sampling, mode="legacy") as client:
        result = await client.call_tool(
            "tree_of_traversals",
            {"query": Q, "k": 2, "llm": "sampling"},
            progress_callback=on_progress,
        )
        full = await client.call_tool(
            "tree_of_traversals", {"query": Q, "k": 2, "llm": "sampling", "detail": "full"}
        )
    assert not result.is_error, result.content
    data = result.structured_content
    assert data["status"] == "answered" and data["strategy"] == "tot, policy sampling"
    assert {it["label"] for it in data["items"]} == {"Lana Wachowski", "Jan de Bont"}
    assert data["total"] == 2
    assert data["value"] == 0.9 and data["llm_calls"] > 0
    assert [h["label"] for h in data["paths"][0]] == ["starred actors", "directed by"]
    answers = {"Lana Wachowski", "Jan de Bont"}
    assert {f["object_label"] for f in data["facts"]} >= answers  # the edges behind them
    assert "full" not in data and "tree_text" not in data  # the tree only when asked for
    assert [p[0] for p in progress] == list(range(1, data["expansions"] + 1))
    assert all(p[1] == 25 for p in progress) and "expanded" in progress[0][2]
    text = result.content[0].text
    assert text.startswith("answered: ") and "1. Lana Wachowski [m:E" in text
    assert "Search tree" not in text
    whole = full.structured_content["full"]
    assert whole["path"][0] == 0 and whole["nodes"][whole["path"][-1]]["action"]["kind"] == "answer"
    assert "* [1.00] ROOT" in full.content[0].text
    assert "Final local subgraph:" in full.content[0].text


async def test_sampling_without_client_support_falls_back_or_fails_cleanly(server):
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool("tree_of_traversals", {"query": Q, "llm": "sampling"})
    if result.is_error:  # no offline policy in this build: one clear line naming both problems
        msg = result.content[0].text
        assert "did not declare the sampling capability" in msg and "offline policy" in msg
    else:
        assert result.structured_content["strategy"] == "tot, policy offline"
        assert "fell back to the offline policy" in result.structured_content["warnings"][0]


async def test_anthropic_without_a_key_is_a_tool_error():
    from tot_mcp.strategies.settings import Config
    from tot_mcp.kg_adapters.environment import Environment

    runtime = Runtime(
        {"m": make_kg("m")},
        config=Config.model_validate({"llm": {"backend": "anthropic"}}),
        environment=Environment({}),
    )
    async with Client(build_server(runtime)) as client:
        result = await client.call_tool("tree_of_traversals", {"query": Q, "llm": "anthropic"})
    assert result.is_error and result.content[0].text == (
        "tree_of_traversals: llm='anthropic' is not usable on this server (ANTHROPIC_API_KEY is "
        "not set); use llm='sampling' (your own model) or 'offline'"
    )  # what the client can do: the CLI's "--llm offline" is no argument of this tool


@pytest.mark.parametrize(
    "args, message",
    [
        ({"query": Q, "k": 0}, "k"),
        ({"query": Q, "tau": 2}, "tau"),
        ({"query": Q, "llm": "gpt"}, "llm"),
        ({"query": Q, "kg": "nope"}, "no KG named 'nope'"),
        ({"query": "", "llm": "sampling"}, "query is empty"),
    ],
)
async def test_bad_input_is_a_tool_error(server, args, message):
    async with Client(server, sampling_callback=sampling, mode="legacy") as client:
        result = await client.call_tool("tree_of_traversals", args)
    assert result.is_error and message in result.content[0].text


async def test_the_tool_is_listed_with_its_schema(server):
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    tool = tools["tree_of_traversals"]
    # the search's other bounds (max_hops, tau, max_expansions) are the server's [strategy.tot]
    # settings
    assert set(tool.input_schema["properties"]) == {"query", "k", "llm", "kg", "detail"}
    assert tool.output_schema and "items" in tool.output_schema["properties"]


async def test_the_tool_runs_the_registered_method_so_tot_search_measures_what_it_does(server):
    """One Tree-of-Traversals: the tool and `tot-search --method tot` run the same strategy, with
    the same bounds."""
    from tot_mcp.strategies.registry import get

    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool(
            "tree_of_traversals", {"query": Q, "llm": "offline", "k": 2}
        )
    props = tools["tree_of_traversals"].input_schema["properties"]
    fields = get("tot").options.model_fields
    for name in ("k",):
        meta = {m.__class__.__name__: m for m in fields[name].metadata}
        bounds = {k: getattr(m, k) for m in meta.values() for k in ("ge", "le") if hasattr(m, k)}
        assert props[name].get("minimum") == bounds.get("ge") and props[name].get(
            "maximum"
        ) == bounds.get("le"), name
    assert not result.is_error, result.content
    assert result.structured_content["status"] in {
        "answered",
        "below_tau",
        "incomplete",
        "no_answer",
    }


async def test_a_paid_llm_the_operator_did_not_configure_is_refused(server):
    """#36 item 9: llm='anthropic' ran on the server's key for any client, with no opt-in."""
    async with Client(server) as client:
        result = await client.call_tool("tree_of_traversals", {"query": Q, "llm": "openai"})
    assert (
        result.is_error
        and 'has not opened to clients ([llm] backend = "openai")' in result.content[0].text
    )


@contextlib.contextmanager
def counting_model():
    """A loopback Anthropic API answering every completion with EXPAND_KG; yields its URL and the
    list that gets one item per request it received."""
    from http.server import BaseHTTPRequestHandler

    from llm_wire import anthropic_message, send_json, serve

    sent: list[int] = []

    class Model(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["content-length"]))
            sent.append(1)
            send_json(
                self,
                200,
                anthropic_message("m", "EXPAND_KG", {"input_tokens": 5, "output_tokens": 2}),
            )

        def log_message(self, *args):
            pass

    with serve(Model) as url:
        yield url, sent


async def test_a_client_spends_at_most_its_share_of_the_operators_llm_calls():
    """Each completion is charged before it is sent, so neither a long search nor calls at once run
    past the share (an outside re-run found 16 concurrent calls spending 317 of a share of 5)."""
    import asyncio

    from tot_mcp.strategies.settings import Config
    from tot_mcp.kg_adapters.environment import Environment

    with counting_model() as (url, sent):
        config = Config.model_validate(
            {"llm": {"backend": "anthropic", "base_url": url, "client_calls": 3, "max_retries": 0}}
        )
        runtime = Runtime(
            {"m": make_kg("m")}, config=config, environment=Environment({"ANTHROPIC_API_KEY": "k"})
        )
        async with Client(build_server(runtime)) as client:
            calls = [
                client.call_tool("tree_of_traversals", {"query": Q, "llm": "anthropic"})
                for _ in range(8)
            ]
            await asyncio.gather(*calls)
            after = await client.call_tool("tree_of_traversals", {"query": Q, "llm": "anthropic"})
    assert len(sent) == 3  # the share, not a request more, whatever ran at once
    assert after.is_error and "has used its 3 LLM calls" in after.content[0].text


async def test_new_sessions_from_one_address_share_that_address_share(tmp_path):
    """Outside re-runs of #36: the share was per session, so a client reconnecting got a fresh one
    each time (12 paid requests against a share of 3), then per forwarded address. Over HTTP, three
    sessions of one address, each claiming another address in X-Forwarded-For, spend one share."""
    from mcp_client import http_server, http_session

    with counting_model() as (url, sent):
        config = tmp_path / "tot-mcp.toml"
        config.write_text(
            f'[llm]\nbackend = "anthropic"\nbase_url = "{url}"\nclient_calls = 3\n'
            "max_retries = 0\n",
            encoding="utf-8",
        )
        env = {"ANTHROPIC_API_KEY": "k"}
        async with http_server(["--config", str(config)], env=env) as mcp_url:
            for i in range(
                3
            ):  # a forged X-Forwarded-For makes no new client (an outside re-run's attack)
                async with http_session(
                    mcp_url, headers={"X-Forwarded-For": f"10.0.0.{i + 1}"}
                ) as session:
                    await session.call_tool("tree_of_traversals", {"query": Q, "llm": "anthropic"})
            async with http_session(mcp_url) as session:
                after = await session.call_tool(
                    "tree_of_traversals", {"query": Q, "llm": "anthropic"}
                )
    assert len(sent) == 3
    assert after.is_error and "has used its 3 LLM calls" in after.content[0].text
