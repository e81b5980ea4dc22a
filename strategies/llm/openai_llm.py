"""Any OpenAI-compatible Chat Completions server: OpenAI itself, or local servers — vLLM,
llama.cpp's ``llama-server``, Ollama (``http://localhost:11434/v1``) — and providers that speak the
same API.

Plain ``httpx`` rather than the ``openai`` SDK, on purpose: httpx is already a dependency (no extra
package to install for one ``POST /chat/completions``), and owning the request gives full control of
timeouts and retries — the same bounded policy as the Anthropic backend
(:mod:`strategies.llm.retry`), honouring ``Retry-After`` up to a cap — and of how every failure (a
404 for an unknown model, a non-JSON body, a connection closed mid-body, a timeout) becomes one
:class:`LLMError` line instead of a traceback.

Configuration: ``--base-url`` / ``base_url`` (else ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``);
``--model`` / ``model`` (else ``TOT_OPENAI_MODEL``; required — there is no sensible default across
servers); the key from ``OPENAI_API_KEY``, sent as ``Authorization: Bearer`` when set (optional for
local servers).
"""

from __future__ import annotations

import json
from typing import Unpack
from urllib.parse import urlsplit

import httpx

from pydantic import Field

from .base import HttpLLMOptions, LLMBackend, LLMError
from .retry import (
    HttpLLM,
    Retryable,
    RetryOptions,
    one_line,
    status_failure,
    token_count,
    with_retries,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAICompatibleLLM(HttpLLM):
    """One ``POST {base_url}/chat/completions`` per completion; usage from the response's ``usage``
    block.

    ``max_tokens_param`` names the length limit in the request: ``max_tokens`` (what local servers
    and most providers accept) or ``max_completion_tokens`` (what OpenAI's reasoning models
    require).
    """

    name = "openai"

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens_param: str = "max_tokens",
        **retry: Unpack[RetryOptions],
    ) -> None:
        super().__init__(**retry)
        if not model:
            raise LLMError("no model for --llm openai: pass --model NAME or set TOT_OPENAI_MODEL")
        self.model = model
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise LLMError(
                f"--base-url {self.base_url!r} is not an http(s) URL (e.g. http://localhost:8000/v1)"
            )
        if not api_key and parts.hostname == "api.openai.com":
            raise LLMError(
                "OPENAI_API_KEY is not set; export it, or point --base-url at a local server"
            )
        if max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise LLMError(
                "max_tokens_param must be max_tokens or max_completion_tokens, not "
                f"{max_tokens_param!r}"
            )
        self.max_tokens_param = max_tokens_param
        headers = {"content-type": "application/json", "accept": "application/json"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        self._client = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(self.timeout))

    async def complete(
        self, prompt, *, system=None, max_tokens=512, temperature=0.7, stop=None
    ) -> str:
        system_message = [{"role": "system", "content": system}] if system else []
        body: dict = {
            "model": self.model,
            "messages": [*system_message, {"role": "user", "content": prompt}],
            self.max_tokens_param: max_tokens,
            "temperature": temperature,
        }
        if stop:
            body["stop"] = list(stop)[:4]  # the API accepts at most four stop sequences
        text, usage = await with_retries(self.retry, lambda: self._attempt(body))
        self.usage.calls += 1
        self.usage.model = self.model
        self.usage.input_tokens += usage[0]
        self.usage.output_tokens += usage[1]
        self.usage.cache_read_tokens += min(usage[2], usage[0]) if usage[0] else usage[2]
        return text

    async def _attempt(self, body: dict) -> tuple[str, tuple[int, int, int]]:
        where = f"OpenAI-compatible server {self.base_url}"
        try:
            response = await self._client.post(f"{self.base_url}/chat/completions", json=body)
        except httpx.TimeoutException:
            raise Retryable(
                f"{where} timed out after {self.timeout:g}s (model {self.model!r})"
            ) from None
        except (
            httpx.HTTPError
        ) as e:  # connect errors, resets, a body cut off mid-way (RemoteProtocolError)
            detail = one_line(str(e)) or type(e).__name__
            raise Retryable(f"{where} unreachable or dropped the connection: {detail}") from None
        status = response.status_code
        if status != 200:
            msg = _error_message(response)
            if status == 404:
                raise LLMError(
                    f"{where} answered 404 for model {self.model!r}: the model is unknown there "
                    f"(or --base-url is wrong; it usually ends in /v1): {msg}"
                )
            if status in (401, 403):
                raise LLMError(
                    f"{where} rejected the request ({status}, check OPENAI_API_KEY): {msg}"
                )
            raise status_failure(status, f"{where} error {status}: {msg}", response.headers)
        try:
            payload = response.json()
        except (ValueError, UnicodeDecodeError):
            snippet = one_line(response.text)[:80]
            raise Retryable(
                f"{where} returned a malformed response (not JSON: {snippet!r})"
            ) from None
        try:
            choice = payload["choices"][0]
            message = choice.get("message") or {}
            content = message.get("content")
            if content is None:
                content = message.get("refusal") or ""
            if isinstance(content, list):  # content parts (some providers)
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            if not isinstance(content, str):
                raise TypeError(f"message content is {type(content).__name__}")
        except (KeyError, IndexError, TypeError, AttributeError) as e:
            snippet = one_line(json.dumps(payload))[:120]
            raise Retryable(
                f"{where} returned a malformed response (no choices[0].message.content: {e}; body "
                f"{snippet})"
            ) from None
        usage = payload.get("usage") if isinstance(payload, dict) else None
        counts = (0, 0, 0)
        if isinstance(usage, dict):
            # ``prompt_tokens`` includes the cached ones (``prompt_tokens_details.cached_tokens``,
            # when the server reports them); OpenAI-style caching is automatic and has no separate
            # write count.
            details = usage.get("prompt_tokens_details")
            cached = token_count(details.get("cached_tokens")) if isinstance(details, dict) else 0
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
            counts = (token_count(prompt), token_count(completion), cached)
        return content, counts

    async def aclose(self) -> None:
        await self._client.aclose()


def _error_message(response: httpx.Response) -> str:
    """The ``error.message`` of an OpenAI-style error body (or ``error`` as a string, as Ollama
    sends), else text."""
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        return one_line(response.text)[:200] or response.reason_phrase
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return one_line(str(err["message"]))
        if isinstance(err, str):
            return one_line(err)
        if body.get("message"):
            return one_line(str(body["message"]))
    return one_line(json.dumps(body))[:200]


class OpenAIOptions(HttpLLMOptions):
    max_tokens_param: str = Field(
        "max_tokens", description="'max_completion_tokens' for newer OpenAI models."
    )


BACKEND = LLMBackend(
    kind="openai",
    summary="any OpenAI-compatible Chat Completions server (OpenAI, vLLM, llama.cpp, Ollama)",
    options=OpenAIOptions,
    create=lambda o, ctx: OpenAICompatibleLLM(**o.model_dump()),
    variables={
        "api_key": "OPENAI_API_KEY",
        "base_url": "OPENAI_BASE_URL",
        "model": "TOT_OPENAI_MODEL",
    },
)
