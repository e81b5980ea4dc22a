"""Build a Tree-of-Traversals policy by kind: ``offline`` (no LLM), ``anthropic`` (Claude API),
``openai`` (any OpenAI-compatible Chat Completions server: OpenAI, vLLM, llama.cpp, Ollama),
``sampling`` (the MCP client's own model), ``scripted`` (tests and demos)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.environment import Environment
from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.plugins import LazyRegistry, parse_options

from .base import LLM, LLMBackend, LLMError

#: LLM backends by kind; a new one is a module defining an ``LLMBackend`` plus one line here (or an
#: entry point in the group ``tot_mcp.llm_backends``)
LLMS: LazyRegistry[LLMBackend] = LazyRegistry(
    "LLM backend",
    {
        "anthropic": "tot_mcp.strategies.llm.anthropic_llm:BACKEND",
        "openai": "tot_mcp.strategies.llm.openai_llm:BACKEND",
        "sampling": "tot_mcp.strategies.llm.sampling:BACKEND",
        "scripted": "tot_mcp.strategies.llm.scripted:BACKEND",
    },
    "tot_mcp.llm_backends",
    name_of=lambda backend: backend.kind,
)


def policy_kinds() -> list[str]:
    """``offline`` (no LLM) and every LLM backend."""
    return ["offline", *LLMS.names()]


def make_llm(
    kind: str,
    *,
    ctx: Any = None,
    model: str | None = None,
    options: dict | None = None,
    environment: Environment | None = None,
) -> LLM:
    """An LLM backend; raises :class:`LLMError` with a fix-it message when it cannot be built here
    (an unknown kind, a misspelt or ill-typed option, a missing key). ``model`` (a flag) >
    ``options`` (flags, the ``[llm]`` table) > the backend's environment variables (of
    ``environment``; None: this process's)."""
    if kind not in LLMS:
        raise LLMError(f"unknown LLM kind {kind!r}; choose one of {', '.join(LLMS.names())}")
    backend = LLMS.get(kind)
    given = (environment or Environment.read()).options(backend.variables)
    given.update({k: v for k, v in (options or {}).items() if v is not None and k != "backend"})
    if model:
        given["model"] = model
    try:
        opts = parse_options(backend.options, given, f"LLM {kind}")
    except InvalidInput as e:
        raise LLMError(str(e)) from None
    return backend.create(opts, ctx)


def make_policy(
    kind: str,
    kg: Graph | Sequence[Graph],
    *,
    ctx: Any = None,
    model: str | None = None,
    embedder: Any = None,
    llm: LLM | None = None,
    options: dict | None = None,
    shared: dict | None = None,
):
    """A fresh :class:`strategies.tot.policy.Policy` (one per question, so its ``usage`` is that
    question's).

    ``offline`` uses ``strategies.offline.OfflinePolicy``; it is given the KGs and, if its
    constructor takes them, the shared ``embedder``, ``options`` and ``shared`` (the caller's dict
    for state kept between questions, e.g. the offline reasoner's per-KG statistics). ``llm``
    overrides the backend of the LLM kinds (tests)."""
    from tot_mcp.strategies.tot.prompted import PromptedPolicy

    from tot_mcp.kg_adapters.routing import LinkedKG

    graph = kg if isinstance(kg, Graph) else LinkedKG.of(list(kg))
    if kind == "offline":
        from tot_mcp.strategies.offline import OfflinePolicy

        params = inspect.signature(
            OfflinePolicy
        ).parameters  # passed only what its constructor takes
        extras = {"embedder": embedder, "options": options, "shared": shared}
        return OfflinePolicy(
            graph, **{k: v for k, v in extras.items() if k in params and v is not None}
        )
    if kind not in LLMS:
        raise LLMError(f"unknown policy kind {kind!r}; choose one of {', '.join(policy_kinds())}")
    backend = llm or make_llm(kind, ctx=ctx, model=model)
    chosen = {k: bool(v) for k, v in (options or {}).items() if k in PROMPTED_OPTIONS}
    return PromptedPolicy(backend, kg=graph, **chosen)


#: the LLM policy's own settings in ``options`` (``tot-search --option policy='{"fused": true}'``)
PROMPTED_OPTIONS = ("fused", "batch")


def needs_embedder(kind: str) -> bool:
    """Whether :func:`make_policy` of this kind wants the (slow to load) sentence embedder."""
    if kind != "offline":
        return False
    from tot_mcp.strategies.offline import OfflinePolicy

    return "embedder" in inspect.signature(OfflinePolicy).parameters
