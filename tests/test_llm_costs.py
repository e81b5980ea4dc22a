"""Prompt caching and cost accounting, against a loopback fake server speaking both wire formats (no
network): the Anthropic request marks the system prompt with ``cache_control``; cache reads/writes
are counted from the Messages API usage and OpenAI's ``prompt_tokens_details.cached_tokens``; the
cost estimate uses the built-in table or a ``--prices`` file, an unknown model costs "?" (never a
crash), offline costs 0; ``tot-search`` writes the cost per question to the JSONL and prints the
cost line in its summary."""

from __future__ import annotations

import json
import re
import typing
from http.server import BaseHTTPRequestHandler

import pytest
from llm_wire import anthropic_message, openai_completion, send_json, serve

from tot_mcp.strategies.benchmarks.runner import RunRecord, summarize
from tot_mcp.strategies.llm.anthropic_llm import DEFAULT_MODEL, AnthropicLLM
from tot_mcp.strategies.llm.base import LLMUsage
from tot_mcp.strategies.llm.openai_llm import OpenAICompatibleLLM
from tot_mcp.strategies.llm.prices import (
    DEFAULT_PRICES,
    PricesError,
    cost_usd,
    format_cost,
    load_prices,
)

ANTHROPIC_USAGE = {
    "input_tokens": 10,
    "cache_creation_input_tokens": 1000,
    "cache_read_input_tokens": 3000,
    "output_tokens": 20,
}
OPENAI_USAGE = {
    "prompt_tokens": 2000,
    "completion_tokens": 50,
    "total_tokens": 2050,
    "prompt_tokens_details": {"cached_tokens": 1536},
}


class Fake(BaseHTTPRequestHandler):
    requests: typing.ClassVar[list[dict]] = []
    reply_text = "ANSWER: Forrest Gump | movies:E1"
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        Fake.requests.append({"path": self.path, "body": body})
        if self.path.endswith("/messages"):
            payload = anthropic_message(body.get("model"), Fake.reply_text, ANTHROPIC_USAGE)
        else:
            payload = openai_completion(body.get("model"), Fake.reply_text, OPENAI_USAGE)
        send_json(self, 200, payload)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    with serve(Fake) as url:
        yield url


@pytest.fixture(autouse=True)
def _clear():
    Fake.requests = []


async def test_anthropic_marks_the_system_prompt_for_caching_and_counts_cache_tokens(server):
    llm = AnthropicLLM(
        "claude-sonnet-4-6", api_key="k", base_url=server, max_retries=0, cache_system=True
    )
    await llm.complete("question", system="You traverse knowledge graphs.")
    await llm.complete("another question", system="You traverse knowledge graphs.")
    body = Fake.requests[0]["body"]
    assert body["system"] == [
        {
            "type": "text",
            "text": "You traverse knowledge graphs.",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert body["messages"] == [{"role": "user", "content": "question"}]
    u = llm.usage
    assert (
        u.calls,
        u.input_tokens,
        u.cache_write_tokens,
        u.cache_read_tokens,
        u.output_tokens,
    ) == (2, 2 * 4010, 2000, 6000, 40)
    assert u.model == "claude-sonnet-4-6"
    await llm.aclose()


async def test_anthropic_auto_caching_marks_only_a_long_system_prompt(server):
    llm = AnthropicLLM(api_key="k", base_url=server, max_retries=0)
    await llm.complete("q", system="be brief")
    await llm.complete("q", system="x" * 5000)
    await llm.complete("q")
    short, long, none = (r["body"] for r in Fake.requests)
    assert short["system"] == "be brief"
    assert long["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "system" not in none
    assert llm.usage.model == DEFAULT_MODEL
    await llm.aclose()


async def test_openai_cached_tokens_are_counted(server):
    llm = OpenAICompatibleLLM("gpt-4o", base_url=f"{server}/v1", max_retries=0)
    await llm.complete("hello", system="sys")
    u = llm.usage
    assert (
        u.calls,
        u.input_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
        u.output_tokens,
    ) == (1, 2000, 1536, 0, 50)
    assert u.since(LLMUsage()).cache_read_tokens == 1536 and u.since(LLMUsage()).model == "gpt-4o"
    await llm.aclose()


def test_cost_with_the_default_table():
    usage = LLMUsage(
        calls=1,
        input_tokens=4010,
        cache_write_tokens=1000,
        cache_read_tokens=3000,
        output_tokens=20,
        model="claude-sonnet-4-5",
    )
    want = (10 * 3.0 + 1000 * 3.75 + 3000 * 0.30 + 20 * 15.0) / 1e6
    assert cost_usd(usage) == pytest.approx(want)
    dated = usage.model_copy(
        update={"model": "claude-haiku-4-5-20251001"}
    )  # a dated ID finds its alias
    assert cost_usd(dated) == pytest.approx((10 * 1.0 + 1000 * 1.25 + 3000 * 0.10 + 20 * 5.0) / 1e6)
    assert DEFAULT_MODEL in DEFAULT_PRICES
    openai = LLMUsage(
        calls=1, input_tokens=2000, cache_read_tokens=1536, output_tokens=50, model="gpt-4o"
    )
    assert cost_usd(openai) == pytest.approx((464 * 2.5 + 1536 * 1.25 + 50 * 10.0) / 1e6)


def test_cost_with_a_prices_override(tmp_path):
    f = tmp_path / "prices.toml"
    f.write_text(
        '[models."local-model"]\ninput = 1.0\noutput = 2.0\ncache_write = 1.5\ncache_read = 0.1\n'
        '[models."claude-sonnet-4-5"]\ninput = 100.0\noutput = 0.0\n',
        encoding="utf-8",
    )
    prices = load_prices(f)
    local = LLMUsage(
        calls=1, input_tokens=2000, cache_read_tokens=1000, output_tokens=100, model="local-model"
    )
    assert cost_usd(local, prices) == pytest.approx((1000 * 1.0 + 1000 * 0.1 + 100 * 2.0) / 1e6)
    sonnet = LLMUsage(calls=1, input_tokens=1000, cache_read_tokens=500, model="claude-sonnet-4-5")
    assert cost_usd(sonnet, prices) == pytest.approx(
        1000 * 100.0 / 1e6
    )  # cache prices default to input
    assert "gpt-4o" in prices  # the built-in table stays underneath
    bad = tmp_path / "bad.toml"
    bad.write_text('[models."m"]\ninput = "cheap"\n', encoding="utf-8")
    with pytest.raises(PricesError, match="model 'm'"):
        load_prices(bad)


def test_unknown_model_costs_question_mark_and_offline_costs_zero():
    unknown = LLMUsage(calls=3, input_tokens=100, output_tokens=10, model="some-local-model")
    assert cost_usd(unknown) is None and format_cost(cost_usd(unknown)) == "?"
    assert cost_usd(LLMUsage()) == 0.0 and format_cost(0.0) == "$0"
    records = [
        RunRecord(id="1", question="q", gold=[], cost_usd=None, llm_calls=3),
        RunRecord(id="2", question="q", gold=[], cost_usd=0.5, llm_calls=3),
    ]
    table = summarize(records).table()
    assert re.search(
        r"^cost median / total \(est\.\)\s+\? / \?\s+\(1 question", table, re.MULTILINE
    ), table
    offline = summarize([RunRecord(id="1", question="q", gold=[])]).table()
    assert re.search(r"^cost median / total \(est\.\)\s+\$0 / \$0$", offline, re.MULTILINE), offline


@pytest.fixture
def tot_search(monkeypatch, embedded_kg, capsys):
    import tot_mcp.strategies.search_cli as cli
    from tot_mcp.strategies.system import assemble

    monkeypatch.setattr(
        cli, "open_system", lambda ns, config: assemble({"movies": embedded_kg}, config)
    )

    def run(*argv: str) -> tuple[int, str, str]:
        code = cli.main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_tot_search_reports_cost_per_question_and_in_the_summary(server, tot_search, tmp_path):
    questions = tmp_path / "q.txt"
    questions.write_text(
        "what movies did [Tom Hanks] star in\tForrest Gump\n"
        "who directed [The Last Mimzy]\tBob Shaye\n",
        encoding="utf-8",
    )
    prices = tmp_path / "prices.toml"
    prices.write_text(
        '[models."local-model"]\ninput = 1.0\noutput = 2.0\ncache_write = 1.0\ncache_read = 0.5\n',
        encoding="utf-8",
    )
    out_file = tmp_path / "x.jsonl"
    code, out, err = tot_search(
        "--llm",
        "openai",
        "--model",
        "local-model",
        "--base-url",
        f"{server}/v1",
        "--max-expansions",
        "2",
        "--quiet",
        "--questions",
        str(questions),
        "--out",
        str(out_file),
        "--prices",
        str(prices),
    )
    assert code == 0, err
    rows = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 2 and all(r["llm_calls"] > 0 for r in rows), rows
    for r in rows:
        calls = r["llm_calls"]
        assert r["input_tokens"] == 2000 * calls and r["cache_read_tokens"] == 1536 * calls
        assert r["cache_write_tokens"] == 0 and r["model"] == "local-model"
        assert r["cost_usd"] == pytest.approx(calls * (464 * 1.0 + 1536 * 0.5 + 50 * 2.0) / 1e6)
    total = sum(r["cost_usd"] for r in rows)
    line = re.search(r"^cost median / total \(est\.\)\s+(\S+) / (\S+)$", out, re.MULTILINE)
    assert line and line.group(2) == format_cost(total), out
    assert re.search(r"^tokens in / cached read / out\s+\d+ / \d+ / \d+$", out, re.MULTILINE), out


def test_tot_search_unknown_model_shows_question_mark(server, tot_search, tmp_path):
    questions = tmp_path / "q.txt"
    questions.write_text("what movies did [Tom Hanks] star in\tForrest Gump\n", encoding="utf-8")
    code, out, err = tot_search(
        "--llm",
        "openai",
        "--model",
        "not-priced",
        "--base-url",
        f"{server}/v1",
        "--max-expansions",
        "1",
        "--quiet",
        "--questions",
        str(questions),
    )
    assert code == 0, err
    assert re.search(r"^cost median / total \(est\.\)\s+\? / \?", out, re.MULTILINE), out


def test_tot_search_bad_prices_file_is_a_usage_error(tot_search, tmp_path):
    bad = tmp_path / "p.toml"
    bad.write_text("not toml = = =", encoding="utf-8")
    code, _, err = tot_search("--prices", str(bad), "what movies did [Tom Hanks] star in")
    assert code == 2 and "--prices" in err and "Traceback" not in err
