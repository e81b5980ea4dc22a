"""AnthropicLLM against a fake Messages API on loopback: request shape, usage accounting, errors →
LLMError."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest
from llm_wire import anthropic_message, send_json, serve

from tot_mcp.strategies.llm.anthropic_llm import AnthropicLLM
from tot_mcp.strategies.llm.base import LLMError


class FakeAnthropic(BaseHTTPRequestHandler):
    requests: list[dict] = []
    status = 200

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        headers = {k.lower(): v for k, v in self.headers.items()}
        FakeAnthropic.requests.append({"path": self.path, "headers": headers, "body": body})
        if FakeAnthropic.status != 200:
            payload = {
                "type": "error",
                "error": {"type": "overloaded_error", "message": "try later"},
            }
        else:
            payload = anthropic_message(
                body["model"], "EXPAND_KG", {"input_tokens": 42, "output_tokens": 3}
            )
        send_json(self, FakeAnthropic.status, payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_api():
    FakeAnthropic.requests = []
    FakeAnthropic.status = 200
    with serve(FakeAnthropic) as url:
        yield url


async def test_completion_sends_a_messages_request_and_counts_tokens(fake_api):
    llm = AnthropicLLM("claude-test", api_key="sk-test", base_url=fake_api, max_retries=0)
    text = await llm.complete(
        "hello", system="be brief", max_tokens=20, temperature=0.3, stop=["\n\n"]
    )
    assert text == "EXPAND_KG"
    req = FakeAnthropic.requests[0]
    assert req["path"] == "/v1/messages"
    assert (
        req["headers"].get("x-api-key") == "sk-test"
        or req["headers"].get("authorization") == "Bearer sk-test"
    )
    assert req["body"] == {
        "model": "claude-test",
        "max_tokens": 20,
        "system": "be brief",
        "messages": [{"role": "user", "content": "hello"}],
        "stop_sequences": ["\n\n"],
    }
    assert (llm.usage.calls, llm.usage.input_tokens, llm.usage.output_tokens) == (1, 42, 3)
    await llm.aclose()


async def test_api_errors_become_llm_errors_with_the_message(fake_api):
    FakeAnthropic.status = 529
    llm = AnthropicLLM(api_key="sk-test", base_url=fake_api, max_retries=0)
    with pytest.raises(LLMError, match="529.*try later"):
        await llm.complete("hello")
    assert llm.usage.calls == 0


async def test_unreachable_server_is_an_llm_error():
    llm = AnthropicLLM(api_key="sk-test", base_url="http://127.0.0.1:9", max_retries=0, timeout=2)
    with pytest.raises(LLMError, match="unreachable"):
        await llm.complete("hello")


def test_missing_api_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY is not set"):
        AnthropicLLM()
