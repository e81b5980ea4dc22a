"""Claude through the official ``anthropic`` SDK (async client); needs ``ANTHROPIC_API_KEY``."""

from __future__ import annotations

import os

from .base import LLM, LLMError

DEFAULT_MODEL = "claude-sonnet-5-5"


class AnthropicLLM(LLM):
    """One Messages API call per completion; usage comes from the response's token counts.

    ``base_url`` exists for proxies and for tests (a fake server on loopback). Every SDK error — connection,
    timeout, rate limit, 4xx/5xx — becomes :class:`LLMError` with the status and message.
    """

    name = "anthropic"

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        super().__init__()
        try:
            import anthropic
        except ImportError as e:  # pragma: no cover - anthropic is a declared dependency
            raise LLMError(f"the anthropic package is not installed: {e}") from e
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise LLMError("ANTHROPIC_API_KEY is not set; export it or choose another LLM (e.g. --llm offline)")
        self.model = model or os.environ.get("TOT_ANTHROPIC_MODEL") or DEFAULT_MODEL
        self._anthropic = anthropic
        self._client = anthropic.AsyncAnthropic(
            api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )

    async def complete(self, prompt, *, system=None, max_tokens=512, temperature=0.7, stop=None) -> str:
        # The Messages API of the installed SDK (anthropic 2.x) has no temperature parameter: sampled diversity
        # comes from the model's own default sampling, so ``temperature`` is accepted for the interface only.
        kwargs: dict = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": prompt}],
        }
        if system:
            kwargs["system"] = system
        if stop:
            kwargs["stop_sequences"] = stop
        try:
            response = await self._client.messages.create(**kwargs)
        except self._anthropic.APIStatusError as e:
            raise LLMError(f"Anthropic API error {e.status_code}: {_message(e)}") from e
        except self._anthropic.APIError as e:
            raise LLMError(f"Anthropic API unreachable: {e}") from e
        self.usage.calls += 1
        usage = getattr(response, "usage", None)
        if usage is not None:
            self.usage.input_tokens += int(getattr(usage, "input_tokens", 0) or 0)
            self.usage.output_tokens += int(getattr(usage, "output_tokens", 0) or 0)
        return "".join(getattr(block, "text", "") for block in response.content if getattr(block, "type", "") == "text")

    async def aclose(self) -> None:
        await self._client.close()


def _message(e: Exception) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(e)


def create(options: dict, ctx=None) -> AnthropicLLM:
    """``[llm] backend = "anthropic_llm"`` with optional ``model``, ``base_url``, ``timeout``, ``max_retries``."""
    return AnthropicLLM(
        options.get("model"),
        base_url=options.get("base_url"),
        timeout=float(options.get("timeout", 60.0)),
        max_retries=int(options.get("max_retries", 2)),
    )
