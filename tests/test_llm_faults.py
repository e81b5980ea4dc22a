"""The HTTP LLM backends against a loopback server that misbehaves, speaking the real wire formats:
the Anthropic Messages API (``POST /v1/messages``) and OpenAI Chat Completions (``POST
/v1/chat/completions``).

Each case: an OK reply; a 200 whose body is not JSON; the connection closed mid-body; 429 with
``Retry-After`` then OK (the retry waits at least the header, and a huge header is capped); 529
overloaded then OK (Anthropic); a timeout; a 404 for an unknown model (one line naming the model).
Every failure ends as one-line ``LLMError`` after bounded retries — never another exception. Then
``tot-search`` end to end (in-process, ``main(argv)``) against a server that always answers garbage:
a single question exits 1 with one stderr line, a benchmark run exits 0 with every question's error
recorded. One server for the module (127.0.0.1, port 0); tiny timeouts and backoffs keep it fast.
"""

from __future__ import annotations

import json
import re
import socket
import time
import typing
from http.server import BaseHTTPRequestHandler

import pytest
from llm_wire import anthropic_message, openai_completion, send, send_json, serve

from tot_mcp.kg_adapters.environment import Environment
from tot_mcp.strategies.llm import factory
from tot_mcp.strategies.llm.anthropic_llm import DEFAULT_MODEL, AnthropicLLM
from tot_mcp.strategies.llm.base import LLMError
from tot_mcp.strategies.llm.openai_llm import OpenAICompatibleLLM
from tot_mcp.strategies.llm.retry import RetryPolicy, parse_retry_after

NOT_JSON = b"<html><body><h1>502 Bad Gateway</h1></body></html>"


class Faulty(BaseHTTPRequestHandler):
    """Pops the next behaviour from ``plan`` (else uses ``default``) for each request:

    ``"ok"`` a proper reply in the path's wire format; ``"not_json"`` 200 with an HTML body
    (``content-type`` from ``not_json_type``); ``"cut"`` a 200 whose body stops half-way and the
    connection closes; ``("sleep", s)`` an OK reply after ``s`` seconds; ``(status, headers,
    payload)`` an error status.
    """

    plan: typing.ClassVar[list] = []
    default: object = "ok"
    not_json_type = "application/json"
    reply_text = "ANSWER: Forrest Gump | movies:E1"
    requests: typing.ClassVar[list[dict]] = []
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.loads(raw or b"{}")
        Faulty.requests.append(
            {
                "t": time.monotonic(),
                "path": self.path,
                "body": body,
                "headers": {k.lower(): v for k, v in self.headers.items()},
            }
        )
        what = Faulty.plan.pop(0) if Faulty.plan else Faulty.default
        try:
            if what == "ok":
                send_json(self, 200, self._ok(body))
            elif what == "not_json":
                send(self, 200, NOT_JSON, Faulty.not_json_type)
            elif what == "cut":
                data = json.dumps(self._ok(body)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
            elif isinstance(what, tuple) and what[0] == "sleep":
                time.sleep(what[1])
                send_json(self, 200, self._ok(body))
            else:
                status, headers, payload = what
                send_json(self, status, payload, headers)
        except OSError:  # the client gave up (timeout) and closed the socket
            self.close_connection = True

    def _ok(self, body: dict) -> dict:
        if self.path.endswith("/messages"):
            return anthropic_message(
                body.get("model"), Faulty.reply_text, {"input_tokens": 40, "output_tokens": 7}
            )
        return openai_completion(
            body.get("model"),
            Faulty.reply_text,
            {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35},
        )

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    with serve(Faulty) as url:
        yield url


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    Faulty.plan, Faulty.default, Faulty.requests = [], "ok", []
    Faulty.not_json_type = "application/json"
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TOT_OPENAI_MODEL", "TOT_ANTHROPIC_MODEL"):
        monkeypatch.delenv(var, raising=False)


FAST = {"retry_backoff": 0.01, "max_retry_wait": 2.0}


def anthropic(server, **kw) -> AnthropicLLM:
    opts = {"max_retries": 2, "timeout": 2.0, **FAST, **kw}
    return AnthropicLLM("claude-test", api_key="sk-test", base_url=server, **opts)


def openai(server, **kw) -> OpenAICompatibleLLM:
    opts = {"max_retries": 2, "timeout": 2.0, **FAST, **kw}
    return OpenAICompatibleLLM("local-model", base_url=f"{server}/v1", **opts)


BACKENDS = {"anthropic": anthropic, "openai": openai}


def one_line(e: BaseException) -> str:
    text = str(e)
    assert "\n" not in text and text.strip() == text and len(text) < 600
    return text


# -- OK path ---------------------------------------------------------------------------------------
async def test_openai_ok_reply_sends_chat_completions_and_counts_tokens(server):
    llm = openai(server, api_key="sk-local")
    text = await llm.complete(
        "hello", system="be brief", max_tokens=20, temperature=0.3, stop=["\n\n"]
    )
    assert text == "ANSWER: Forrest Gump | movies:E1"
    req = Faulty.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == "Bearer sk-local"
    assert req["body"] == {
        "model": "local-model",
        "max_tokens": 20,
        "temperature": 0.3,
        "stop": ["\n\n"],
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hello"},
        ],
    }
    assert (llm.usage.calls, llm.usage.input_tokens, llm.usage.output_tokens) == (1, 30, 5)
    await llm.aclose()


async def test_openai_key_is_optional_for_local_servers_and_model_comes_from_the_environment(
    server,
):
    llm = factory.make_llm(
        "openai",
        environment=Environment(
            {"TOT_OPENAI_MODEL": "env-model", "OPENAI_BASE_URL": f"{server}/v1"}
        ),
    )
    assert await llm.complete("hi") == Faulty.reply_text
    assert "authorization" not in Faulty.requests[0]["headers"]
    assert Faulty.requests[0]["body"]["model"] == "env-model"
    await llm.aclose()


def test_openai_needs_a_model_and_a_key_for_api_openai_com():
    with pytest.raises(LLMError, match="TOT_OPENAI_MODEL"):
        OpenAICompatibleLLM(base_url="http://127.0.0.1:1/v1")
    with pytest.raises(LLMError, match="OPENAI_API_KEY is not set"):
        OpenAICompatibleLLM("gpt-x")


async def test_anthropic_ok_reply_counts_tokens_and_uses_the_default_model(server):
    llm = anthropic(server)
    assert await llm.complete("hello") == Faulty.reply_text
    assert Faulty.requests[0]["path"] == "/v1/messages"
    assert (llm.usage.calls, llm.usage.input_tokens, llm.usage.output_tokens) == (1, 40, 7)
    await llm.aclose()
    assert AnthropicLLM(api_key="k").model == DEFAULT_MODEL


def test_the_default_anthropic_model_is_known_to_the_sdk_and_not_deprecated():
    from anthropic.resources.messages.messages import DEPRECATED_MODELS
    from anthropic.types import ModelParam

    known = {a for arg in typing.get_args(ModelParam) for a in typing.get_args(arg)}
    assert DEFAULT_MODEL in known and DEFAULT_MODEL not in DEPRECATED_MODELS


def test_factory_builds_both_http_backends_with_their_options(server, monkeypatch):
    from tot_mcp.strategies.search_cli import build_parser

    llm = factory.make_llm(
        "openai", model="m", options={"base_url": f"{server}/v1", "timeout": "3", "max_retries": 1}
    )
    assert (
        isinstance(llm, OpenAICompatibleLLM) and llm.timeout == 3.0 and llm.retry.max_retries == 1
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("TOT_ANTHROPIC_MODEL", "claude-env")
    assert (
        factory.make_llm("anthropic").model == "claude-env"
    )  # this process's environment, unless given one
    assert factory.make_llm("anthropic", model="claude-flag").model == "claude-flag"
    assert (
        factory.make_llm("anthropic", options={"model": "claude-config"}).model == "claude-config"
    )
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY is not set"):
        factory.make_llm(
            "anthropic", environment=Environment({"ANTHROPIC_API_KEY": ""})
        )  # empty is unset
    assert "openai" in factory.policy_kinds()
    assert build_parser().parse_args(["--llm", "openai", "q"]).llm == "openai"


# -- malformed bodies ------------------------------------------------------------------------------
@pytest.mark.parametrize("ctype", ["application/json", "text/html"])
@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_non_json_body_is_retried_then_one_clear_error(server, kind, ctype):
    Faulty.default, Faulty.not_json_type = "not_json", ctype
    llm = BACKENDS[kind](server, max_retries=1)
    with pytest.raises(LLMError) as err:
        await llm.complete("hello")
    assert "malformed response" in one_line(err.value) and "2 attempts" in str(err.value)
    assert len(Faulty.requests) == 2 and llm.usage.calls == 0
    await llm.aclose()


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_non_json_body_once_then_ok_recovers(server, kind):
    Faulty.plan = ["not_json"]
    llm = BACKENDS[kind](server)
    assert await llm.complete("hello") == Faulty.reply_text
    assert len(Faulty.requests) == 2
    await llm.aclose()


# -- connection closed mid-body --------------------------------------------------------------------
@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_connection_closed_mid_body_is_retried_then_one_clear_error(server, kind):
    Faulty.default = "cut"
    llm = BACKENDS[kind](server, max_retries=1)
    with pytest.raises(LLMError) as err:
        await llm.complete("hello")
    assert "unreachable" in one_line(err.value)
    assert len(Faulty.requests) == 2
    await llm.aclose()


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_connection_closed_mid_body_once_then_ok_recovers(server, kind):
    Faulty.plan = ["cut"]
    llm = BACKENDS[kind](server)
    assert await llm.complete("hello") == Faulty.reply_text
    assert len(Faulty.requests) == 2
    await llm.aclose()


# -- 429 / 529 with Retry-After --------------------------------------------------------------------
def _rate_limited(kind: str, retry_after: str) -> tuple:
    if kind == "anthropic":
        payload = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    else:
        payload = {
            "error": {
                "message": "Rate limit reached",
                "type": "requests",
                "code": "rate_limit_exceeded",
            }
        }
    return (429, {"retry-after": retry_after}, payload)


@pytest.mark.parametrize("kind", BACKENDS)
async def test_429_waits_at_least_retry_after_then_succeeds(server, kind):
    Faulty.plan = [_rate_limited(kind, "1")]
    llm = BACKENDS[kind](server)
    assert await llm.complete("hello") == Faulty.reply_text
    first, second = Faulty.requests
    assert second["t"] - first["t"] >= 1.0
    await llm.aclose()


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_huge_retry_after_is_capped(server, kind):
    Faulty.plan = [_rate_limited(kind, "3600")]
    llm = BACKENDS[kind](server, max_retry_wait=0.2)
    started = time.monotonic()
    assert await llm.complete("hello") == Faulty.reply_text
    assert 0.2 <= time.monotonic() - started < 2.0
    await llm.aclose()


@pytest.mark.parametrize("kind", BACKENDS)
async def test_429_forever_ends_in_one_error_after_bounded_retries(server, kind):
    Faulty.default = _rate_limited(kind, "0")
    llm = BACKENDS[kind](server, max_retries=2)
    with pytest.raises(LLMError) as err:
        await llm.complete("hello")
    assert "429" in one_line(err.value) and "3 attempts" in str(err.value)
    assert len(Faulty.requests) == 3
    await llm.aclose()


async def test_anthropic_529_overloaded_then_ok(server):
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    Faulty.plan = [(529, {"retry-after": "0.3"}, overloaded)]
    llm = anthropic(server)
    assert await llm.complete("hello") == Faulty.reply_text
    first, second = Faulty.requests
    assert second["t"] - first["t"] >= 0.3
    assert llm.usage.calls == 1
    await llm.aclose()


def test_retry_after_parsing_and_the_cap():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert 0 <= parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) <= 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None and parse_retry_after({}) is None
    policy = RetryPolicy(max_retries=3, backoff=0.5, max_backoff=1.5, max_retry_wait=10)
    assert [policy.delay(i, None) for i in range(4)] == [0.5, 1.0, 1.5, 1.5]
    assert policy.delay(0, 60) == 10 and policy.delay(0, 2) == 2


# -- timeouts --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_server_slower_than_the_timeout_is_retried_then_one_clear_error(server, kind):
    Faulty.default = ("sleep", 1.0)
    llm = BACKENDS[kind](server, timeout=0.2, max_retries=1)
    started = time.monotonic()
    with pytest.raises(LLMError) as err:
        await llm.complete("hello")
    assert "timed out after 0.2s" in one_line(err.value)
    assert time.monotonic() - started < 1.5 and len(Faulty.requests) == 2
    await llm.aclose()


# -- unknown model ---------------------------------------------------------------------------------
async def test_anthropic_404_unknown_model_names_the_model_and_is_not_retried(server):
    Faulty.default = (
        404,
        {},
        {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-nope"}},
    )
    llm = AnthropicLLM("claude-nope", api_key="k", base_url=server, **FAST)
    with pytest.raises(LLMError) as err:
        await llm.complete("hello")
    msg = one_line(err.value)
    assert "404" in msg and "'claude-nope' not found" in msg and "--model" in msg
    assert len(Faulty.requests) == 1
    await llm.aclose()


async def test_openai_404_unknown_model_names_the_model_and_is_not_retried(server):
    Faulty.default = (
        404,
        {},
        {
            "error": {
                "message": "The model `gpt-nope` does not exist",
                "type": "invalid_request_error",
                "param": None,
                "code": "model_not_found",
            }
        },
    )
    llm = OpenAICompatibleLLM("gpt-nope", base_url=f"{server}/v1", **FAST)
    with pytest.raises(LLMError) as err:
        await llm.complete("hello")
    msg = one_line(err.value)
    assert "404 for model 'gpt-nope'" in msg and "does not exist" in msg
    assert len(Faulty.requests) == 1
    await llm.aclose()


# -- tot-search end to end (in-process: an exception escaping ``main`` would fail the test, so "no
# traceback"
# means main returned its exit code and wrote exactly one stderr line) -----------------------------
@pytest.fixture
def tot_search(monkeypatch, embedded_kg, capsys):
    import tot_mcp.strategies.search_cli as cli
    from tot_mcp.strategies.system import assemble

    # the embedded movie KG, loaded once
    monkeypatch.setattr(
        cli, "open_system", lambda ns, config: assemble({"movies": embedded_kg}, config)
    )
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    def run(*argv: str, model: str = "local-model") -> tuple[int, str, str]:
        if model:
            monkeypatch.setenv("TOT_OPENAI_MODEL", model)
        else:
            monkeypatch.delenv("TOT_OPENAI_MODEL", raising=False)
        code = cli.main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_tot_search_single_question_with_a_garbage_server_exits_1_with_one_line(server, tot_search):
    Faulty.default = "not_json"
    code, _, err = tot_search(
        "--llm", "openai", "--base-url", f"{server}/v1", "what movies did [Tom Hanks] star in"
    )
    assert code == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tot-search: error: "), err
    assert "malformed response" in lines[0] and "3 attempts" in lines[0] and "Traceback" not in err
    assert Faulty.requests and all(r["path"] == "/v1/chat/completions" for r in Faulty.requests)
    assert Faulty.requests[0]["body"]["model"] == "local-model"


def test_tot_search_benchmark_with_a_garbage_server_records_every_error_and_goes_on(
    server, tot_search, tmp_path
):
    Faulty.default = "not_json"
    questions = tmp_path / "q.txt"
    questions.write_text(
        "what movies did [Tom Hanks] star in\tForrest Gump\n"
        "who directed [The Last Mimzy]\tBob Shaye\n",
        encoding="utf-8",
    )
    out_file = tmp_path / "x.jsonl"
    code, out, err = tot_search(
        "--llm",
        "openai",
        "--base-url",
        f"{server}/v1",
        "--llm-retries",
        "1",
        "--quiet",
        "--questions",
        str(questions),
        "--out",
        str(out_file),
    )
    assert code == 0, err
    assert "Traceback" not in err
    rows = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 2
    assert all(r["error"] and "malformed response" in r["error"] for r in rows), rows
    assert re.search(r"^errors\s+2$", out, re.MULTILINE), out


def test_tot_search_without_a_model_is_one_usage_error(server, tot_search):
    code, _, err = tot_search(
        "--llm",
        "openai",
        "--base-url",
        f"{server}/v1",
        "what movies did [Tom Hanks] star in",
        model="",
    )
    assert code == 2
    assert err.strip().splitlines() == [
        "tot-search: error: no model for --llm openai: pass --model NAME or set TOT_OPENAI_MODEL"
    ]


def test_tot_search_offline_rejects_llm_flags(tot_search):
    code, _, err = tot_search(
        "--base-url", "http://127.0.0.1:1/v1", "what movies did [Tom Hanks] star in"
    )
    assert code == 2 and "need --llm anthropic or --llm openai" in err
