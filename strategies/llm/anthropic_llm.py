"""Claude through the official ``anthropic`` SDK (async client); needs ``ANTHROPIC_API_KEY``.

Retries are ours, not the SDK's (the SDK client is built with ``max_retries=0``): the same bounded
policy as the OpenAI-compatible backend (:mod:`strategies.llm.retry`), so a 429/529 with
``Retry-After``, a timeout, a connection closed mid-body or a body that is not JSON is retried a
bounded number of times and then becomes one :class:`LLMError` line — never a traceback. (The SDK
lets ``json.JSONDecodeError`` escape for a malformed JSON body and returns a bare ``str`` for a
non-JSON content type; both are caught here.)
"""

from __future__ import annotations

from typing import Unpack

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

#: A current model ID: one of the installed SDK's known models (``anthropic.types.ModelParam``) and
#: not in its ``DEPRECATED_MODELS`` (which lists claude-sonnet-4-5, end of life 2026-11-30;
#: tests/test_llm_faults.py checks both). Override with ``--model`` or ``TOT_ANTHROPIC_MODEL``.
DEFAULT_MODEL = "claude-sonnet-5-5"

#: A system prompt at least this long is marked for prompt caching when ``cache_system`` is left at
#: auto. The API caches nothing below a model-dependent minimum (1,024 tokens or more, roughly 4
#: characters a token), so shorter prompts go out as a plain string; the threshold is deliberately
#: low because an ignored mark costs nothing.
CACHE_MIN_CHARS = 1024


class AnthropicLLM(HttpLLM):
    """One Messages API call per completion; usage comes from the response's token counts.

    ``base_url`` exists for proxies and for tests (a fake server on loopback); ``retry``: the
    timeout and retry options of :class:`~strategies.llm.retry.HttpLLM`. Every failure — connection,
    timeout, rate limit, malformed body, 4xx/5xx — ends as :class:`LLMError` with the status and
    message.
    """

    name = "anthropic"

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        cache_system: bool | None = None,
        **retry: Unpack[RetryOptions],
    ) -> None:
        super().__init__(**retry)
        self.cache_system = cache_system
        try:
            import anthropic
        except ImportError as e:  # pragma: no cover - anthropic is a declared dependency
            raise LLMError(f"the anthropic package is not installed: {e}") from e
        if not api_key:
            raise LLMError(
                "ANTHROPIC_API_KEY is not set; export it or choose another LLM (e.g. --llm offline)"
            )
        self.model = model or DEFAULT_MODEL
        self._anthropic = anthropic
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=self.timeout, max_retries=0
        )

    async def complete(
        self, prompt, *, system=None, max_tokens=512, temperature=0.7, stop=None
    ) -> str:
        # The Messages API of the installed SDK (anthropic 2.x) has no temperature parameter:
        # sampled diversity comes from the model's own default sampling, so ``temperature`` is
        # accepted for the interface only.
        kwargs: dict = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": prompt}],
        }
        if system:
            # The system prompt is the stable prefix of every call (the same for a whole run): mark
            # it for prompt caching, so repeated calls read it from the cache (billed at the
            # cache-read rate) instead of paying full input price. ``cache_system``: True always,
            # False never, None when it is long enough to matter.
            cache = (
                self.cache_system
                if self.cache_system is not None
                else len(system) >= CACHE_MIN_CHARS
            )
            marked = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
            kwargs["system"] = marked if cache else system
        if stop:
            kwargs["stop_sequences"] = stop
        response = await with_retries(self.retry, lambda: self._attempt(kwargs))
        self.usage.calls += 1
        usage = getattr(response, "usage", None)
        self.usage.model = self.model
        if usage is not None:
            # The Messages API's ``input_tokens`` are the uncached ones; cache writes and reads come
            # separately. ``LLMUsage.input_tokens`` counts all three.
            write = token_count(getattr(usage, "cache_creation_input_tokens", 0))
            read = token_count(getattr(usage, "cache_read_input_tokens", 0))
            self.usage.input_tokens += token_count(getattr(usage, "input_tokens", 0)) + write + read
            self.usage.cache_write_tokens += write
            self.usage.cache_read_tokens += read
            self.usage.output_tokens += token_count(getattr(usage, "output_tokens", 0))
        return "".join(
            getattr(block, "text", "")
            for block in response.content
            if getattr(block, "type", "") == "text"
        )

    async def _attempt(self, kwargs: dict):
        a = self._anthropic
        try:
            response = await self._client.messages.create(**kwargs)
        except a.APIStatusError as e:
            status = e.status_code
            msg = one_line(_message(e))
            if status == 404:
                raise LLMError(
                    f"Anthropic API error 404: model {self.model!r} not found or not available to "
                    f"this key ({msg}); "
                    "choose another with --model or TOT_ANTHROPIC_MODEL"
                ) from None
            text = f"Anthropic API error {status}: {msg}"
            raise status_failure(status, text, e.response.headers) from None
        except a.APITimeoutError:
            raise Retryable(
                f"Anthropic API timed out after {self.timeout:g}s (model {self.model!r})"
            ) from None
        except a.APIConnectionError as e:
            cause = (
                f": {one_line(str(e.__cause__))}"
                if e.__cause__ is not None and str(e.__cause__)
                else ""
            )
            raise Retryable(f"Anthropic API unreachable: {one_line(str(e))}{cause}") from None
        except a.APIResponseValidationError as e:
            raise Retryable(
                f"Anthropic API returned a malformed response: {one_line(str(e))}"
            ) from None
        except a.APIError as e:
            raise Retryable(f"Anthropic API error: {one_line(str(e))}") from None
        except (
            ValueError,
            TypeError,
            KeyError,
            AttributeError,
        ) as e:  # json.JSONDecodeError is a ValueError
            raise Retryable(
                "Anthropic API returned a malformed response (not a Messages API JSON body: "
                f"{one_line(str(e))})"
            ) from None
        content = getattr(response, "content", None)
        if not isinstance(content, list):
            snippet = one_line(str(response))[:80]
            raise Retryable(
                "Anthropic API returned a malformed response (not a Messages API body: "
                f"{snippet!r})"
            )
        return response

    async def aclose(self) -> None:
        await self._client.close()


def _message(e: Exception) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(e)


class AnthropicOptions(HttpLLMOptions):
    cache_system: bool | None = None


BACKEND = LLMBackend(
    kind="anthropic",
    summary="Claude through the Anthropic API (ANTHROPIC_API_KEY)",
    options=AnthropicOptions,
    create=lambda o, ctx: AnthropicLLM(**o.model_dump()),
    variables={"api_key": "ANTHROPIC_API_KEY", "model": "TOT_ANTHROPIC_MODEL"},
)
