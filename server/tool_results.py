"""Build tool results that carry both a typed structured result (for programs) and compact text (for
models).

Every tool in ``server/tools/`` returns ``tool_result(model, text)`` and declares
``-> Annotated[CallToolResult, ThatModel]`` so the SDK publishes ``ThatModel``'s JSON schema as the
tool's ``outputSchema`` while the content block holds the token-efficient rendering instead of a
JSON dump. Tools that report progress hand the layers below ``progress_to(ctx)``.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel


def tool_result(model: BaseModel, text: str, exclude_none: bool = False) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=model.model_dump(mode="json", by_alias=True, exclude_none=exclude_none),
    )


def progress_to(ctx: Context | None, suffix: str = "") -> Any:
    """A progress callback ``(done, total, message)`` that reports ``message + suffix`` to the
    client; None without a request context."""
    if ctx is None:
        return None

    async def report(done: float, total: float | None, message: str) -> None:
        await ctx.report_progress(done, total, message + suffix)

    return report


def _request(context: Context | None) -> Any:
    """The HTTP request a call came in (None over stdio or in-process)."""
    try:
        return context.request_context.request if context is not None else None
    except ValueError:  # no request context: called in-process
        return None


def payer_of(context: Context | None) -> str:
    """Who pays for a call on the operator's LLM key: the peer's address (its IPv6 /64), not its
    session — a client opens as many sessions as it likes, and each would bring a fresh share.
    Behind a proxy every client is one, and shares one budget."""
    from .sessions import client_key

    host = getattr(getattr(_request(context), "client", None), "host", None)
    return f"peer:{client_key(host)}" if host else "local"


def client_of(context: Context | None) -> str:
    """Who a call is for, for fair shares: the MCP session (2025-era HTTP), else the peer address
    (stateless HTTP: a shared bearer token would make every client one), else the one local client
    (stdio, in-process)."""
    request = _request(context)
    headers = getattr(request, "headers", None)
    if headers is None:
        return "local"
    session = headers.get("mcp-session-id")
    if session:
        return f"session:{session[:100]}"
    return f"peer:{getattr(request.client, 'host', None) or '?'}"
