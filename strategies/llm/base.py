"""The one interface every text-generating LLM backend implements.

Strategies that need judgement (the Tree-of-Traversals policy, ARK's judge, the router's analysis)
take an ``LLM`` and render their prompts from ``prompts/``; the offline policy replaces the
LLM-driven parts entirely and so does not implement this interface. Every backend counts its calls
and tokens in ``usage``.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class LLMError(RuntimeError):
    """The model could not be reached or refused; callers fall back or record the failure."""


#: the counting fields of :class:`LLMUsage` (every field but ``model``)
COUNTS = ("calls", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


class LLMUsage(BaseModel):
    """Calls and tokens. ``input_tokens`` counts every prompt token, cached or not;
    ``cache_read_tokens`` and ``cache_write_tokens`` are the parts of it read from / written to the
    provider's prompt cache (so the uncached remainder is ``input_tokens - cache_read_tokens -
    cache_write_tokens``). ``model`` is the model ID the backend called ("" when no model was
    called, "mixed" when usages of different models were added up); the cost estimate
    (:mod:`strategies.llm.prices`) looks it up."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    model: str = ""

    def add(self, other: "LLMUsage") -> None:
        for name in COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if other.model and other.model != self.model:
            self.model = other.model if not self.model else "mixed"

    def snapshot(self) -> "LLMUsage":
        return self.model_copy()

    def since(self, before: "LLMUsage") -> "LLMUsage":
        return LLMUsage(
            **{name: getattr(self, name) - getattr(before, name) for name in COUNTS},
            model=self.model,
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
        """One completion for ``prompt``. Implementations add to ``self.usage`` and raise
        :class:`LLMError`."""


class LLMOptions(BaseModel):
    """What every LLM backend accepts (the ``[llm]`` table, ``tot-search``'s flags); a misspelt key
    is an error."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None


class HttpLLMOptions(LLMOptions):
    """An LLM behind an HTTP API."""

    base_url: str | None = Field(None, description="The API's base URL.")
    api_key: str | None = Field(
        None,
        repr=False,
        description="From the backend's environment variable; the [llm] "
        "table has no key (a config file holds no secret).",
    )
    timeout: float = Field(60.0, gt=0, description="Seconds per request.")
    max_retries: int = Field(2, ge=0, description="Retries after a transient failure.")
    retry_backoff: float = Field(0.5, ge=0)
    max_retry_wait: float = Field(30.0, ge=0)


@dataclass(frozen=True)
class LLMBackend:
    """One LLM backend as the registry (:data:`strategies.llm.factory.LLMS`) knows it: a new one is
    a module defining this plus one line there, or an entry point in the group
    ``tot_mcp.llm_backends``."""

    kind: str
    summary: str
    options: type[LLMOptions]
    create: Callable[
        [Any, Any], LLM
    ]  # (validated options, the MCP request context or None) → the LLM
    #: option → environment variable supplying it when neither a flag nor the config does (read by
    #: the factory through :class:`kg_adapters.environment.Environment`; the backend itself takes
    #: explicit values)
    variables: Mapping[str, str] = field(default_factory=dict)
