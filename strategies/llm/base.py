"""The one interface every text-generating LLM backend implements.

Strategies that need judgement (the Tree-of-Traversals policy, ARK's judge, the router's analysis) take an ``LLM``
and render their prompts from ``prompts/``; the offline policy replaces the LLM-driven parts entirely and so does
not implement this interface. Every backend counts its calls and tokens in ``usage``.
"""

from __future__ import annotations

import abc

from pydantic import BaseModel


class LLMError(RuntimeError):
    """The model could not be reached or refused; callers fall back or record the failure."""


class LLMUsage(BaseModel):
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: "LLMUsage") -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens

    def snapshot(self) -> "LLMUsage":
        return self.model_copy()

    def since(self, before: "LLMUsage") -> "LLMUsage":
        return LLMUsage(
            calls=self.calls - before.calls,
            input_tokens=self.input_tokens - before.input_tokens,
            output_tokens=self.output_tokens - before.output_tokens,
        )


class LLM(abc.ABC):
    name: str = "llm"

    def __init__(self) -> None:
        self.usage = LLMUsage()

    @abc.abstractmethod
    async def complete(
        self,
        prompt: str,
        *,
        system: str | None = None,
        max_tokens: int = 512,
        temperature: float = 0.7,
        stop: list[str] | None = None,
    ) -> str:
        """One completion for ``prompt``. Implementations add to ``self.usage`` and raise :class:`LLMError`."""
