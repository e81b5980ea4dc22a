"""The MCP client's own model, asked through sampling (``sampling/createMessage``) from inside a
tool call.

Why the deprecated ``session.create_message`` and not ``mcp.server.mcpserver.resolve.Sample``:
``Resolve``/``Sample`` fill tool parameters *before* the tool body runs, once per question — a tree
search needs dozens of completions whose prompts depend on earlier answers, so it must ask mid-call.
That works on handshake-era connections (protocol ≤ 2025-11-25, what current MCP clients speak); on
2026-07-28 connections the server has no back-channel for mid-call requests, and
:func:`sampling_unavailable_reason` says so up front so the caller can fall back.
"""

from __future__ import annotations

import warnings
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPDeprecationWarning

from .base import LLM, LLMBackend, LLMError, LLMOptions


def sampling_unavailable_reason(ctx: Any) -> str | None:
    """``None`` when ``ctx``'s client can be sampled mid-call, else a sentence saying why not."""
    if ctx is None:
        return "no MCP request context (sampling only works inside a tool call)"
    try:
        session = ctx.session
        caps = ctx.client_capabilities
    except Exception as e:  # noqa: BLE001 - any failure here means "cannot sample"
        return f"no MCP session available ({e})"
    if caps is None or caps.sampling is None:
        return (
            "the MCP client did not declare the sampling capability (or the server runs "
            "--stateless, where no session remembers what the client declared)"
        )
    version = getattr(ctx, "protocol_version", None)
    if version is not None and version >= "2026-07-28":
        return (
            f"this connection uses MCP protocol {version}, which has no mid-call sampling "
            "back-channel (connect with a handshake-era protocol, ≤ 2025-11-25, to use "
            "llm='sampling')"
        )
    if session is None:
        return "no MCP session available"
    return None


class SamplingLLM(LLM):
    """Completions from the connected client's model. Token counts are unknown to the server, so
    usage counts calls only (plus a word-count estimate of output)."""

    name = "sampling"

    def __init__(self, ctx: Any) -> None:
        super().__init__()
        reason = sampling_unavailable_reason(ctx)
        if reason:
            raise LLMError(f"cannot sample the client's model: {reason}")
        self.ctx = ctx
        self.model_seen: str | None = None

    async def complete(
        self, prompt, *, system=None, max_tokens=512, temperature=0.7, stop=None
    ) -> str:
        message = types.SamplingMessage(
            role="user", content=types.TextContent(type="text", text=prompt)
        )
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                result = await self.ctx.session.create_message(
                    [message],
                    max_tokens=max_tokens,
                    system_prompt=system,
                    temperature=temperature,
                    stop_sequences=stop,
                    related_request_id=_request_id(self.ctx),
                )
        except (
            Exception
        ) as e:  # MCPError, NoBackChannelError, transport errors: all mean "no completion"
            raise LLMError(f"sampling request failed: {e}") from e
        self.usage.calls += 1
        self.model_seen = getattr(result, "model", None)
        content = result.content
        blocks = content if isinstance(content, list) else [content]
        text = "".join(getattr(b, "text", "") for b in blocks if getattr(b, "type", "") == "text")
        self.usage.output_tokens += len(text.split())
        return text


def _request_id(ctx: Any) -> Any:
    try:
        return ctx.request_id
    except Exception:  # noqa: BLE001
        return None


BACKEND = LLMBackend(
    kind="sampling",
    summary="the MCP client's own model (sampling; needs the request context)",
    options=LLMOptions,
    create=lambda o, ctx: SamplingLLM(ctx),
)
