"""Build a Tree-of-Traversals policy by kind: ``offline`` (no LLM), ``anthropic`` (Claude API), ``openai`` (any
OpenAI-compatible Chat Completions server: OpenAI, vLLM, llama.cpp, Ollama), ``sampling`` (the MCP client's own
model), ``scripted`` (tests and demos)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Literal

from kg_adapters.base import KnowledgeGraph

from .base import LLM, LLMError

PolicyKind = Literal["offline", "anthropic", "openai", "sampling", "scripted"]
POLICY_KINDS: tuple[str, ...] = ("offline", "anthropic", "openai", "sampling", "scripted")
LLM_KINDS: tuple[str, ...] = ("anthropic", "openai", "sampling", "scripted")

# Options of the HTTP backends passed through from ``options`` (the ``[llm]`` table, or tot-search's flags).
_HTTP_OPTIONS = ("base_url", "timeout", "max_retries", "retry_backoff", "max_retry_wait")


def _http_options(options: dict) -> dict:
    out: dict = {}
    for name in _HTTP_OPTIONS:
        value = options.get(name)
        if value is None:
            continue
        out[name] = str(value) if name == "base_url" else (int(value) if name == "max_retries" else float(value))
    return out


def make_llm(kind: str, *, ctx: Any = None, model: str | None = None, options: dict | None = None) -> LLM:
    """An LLM backend; raises :class:`LLMError` with a fix-it message when it cannot be built here."""
    options = dict(options or {})
    if kind == "anthropic":
        from .anthropic_llm import AnthropicLLM

        return AnthropicLLM(model or options.get("model"), **_http_options(options))
    if kind == "openai":
        from .openai_llm import OpenAICompatibleLLM

        extra = {"max_tokens_param": str(options["max_tokens_param"])} if options.get("max_tokens_param") else {}
        return OpenAICompatibleLLM(model or options.get("model"), **_http_options(options), **extra)
    if kind == "sampling":
        from .sampling import SamplingLLM

        return SamplingLLM(ctx)
    if kind == "scripted":
        from .scripted import ScriptedLLM

        return ScriptedLLM(options.get("responses", []))
    raise LLMError(f"unknown LLM kind {kind!r}; choose one of {', '.join(LLM_KINDS)}")


def make_policy(
    kind: str,
    kg: KnowledgeGraph | Sequence[KnowledgeGraph],
    *,
    ctx: Any = None,
    model: str | None = None,
    embedder: Any = None,
    llm: LLM | None = None,
    options: dict | None = None,
    shared: dict | None = None,
):
    """A fresh :class:`strategies.tot.policy.Policy` (one per question, so its ``usage`` is that question's).

    ``offline`` uses ``strategies.offline.OfflinePolicy``; it is given the KGs and, if its constructor takes them,
    the shared ``embedder``, ``options`` and ``shared`` (the caller's dict for state kept between questions, e.g.
    the offline reasoner's per-KG statistics). ``llm`` overrides the backend of the LLM kinds (tests)."""
    from strategies.tot.prompted import PromptedPolicy

    from kg_adapters.linked import LinkedKG

    graph = kg if isinstance(kg, KnowledgeGraph) else LinkedKG.of(list(kg))
    if kind == "offline":
        try:
            from strategies.offline import OfflinePolicy  # type: ignore[attr-defined]
        except ImportError as e:
            raise LLMError(
                "the offline policy (strategies.offline.OfflinePolicy) is not available in this build; "
                "use --llm anthropic (with ANTHROPIC_API_KEY) instead"
            ) from e
        return _construct(OfflinePolicy, graph, embedder=embedder, options=options, shared=shared)
    if kind not in POLICY_KINDS:
        raise LLMError(f"unknown policy kind {kind!r}; choose one of {', '.join(POLICY_KINDS)}")
    backend = llm or make_llm(kind, ctx=ctx, model=model, options=options)
    chosen = {k: bool(v) for k, v in (options or {}).items() if k in PROMPTED_OPTIONS}
    return PromptedPolicy(backend, kg=graph, **chosen)


#: the LLM policy's own settings in ``options`` (``tot-search --option policy='{"fused": true}'``)
PROMPTED_OPTIONS = ("fused", "batch")


def needs_embedder(kind: str) -> bool:
    """Whether :func:`make_policy` of this kind wants the (slow to load) sentence embedder."""
    if kind != "offline":
        return False
    try:
        from strategies.offline import OfflinePolicy  # type: ignore[attr-defined]
    except ImportError:
        return False
    return "embedder" in inspect.signature(OfflinePolicy).parameters


def _construct(cls: type, graph: KnowledgeGraph, **extras: Any):
    params = inspect.signature(cls).parameters
    kwargs = {k: v for k, v in extras.items() if k in params and v is not None}
    return cls(graph, **kwargs)
