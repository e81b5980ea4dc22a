"""Build tool results that carry both a typed structured result (for programs) and compact text (for models).

Every tool in ``server/tools/`` returns ``tool_result(model, text)`` and declares
``-> Annotated[CallToolResult, ThatModel]`` so the SDK publishes ``ThatModel``'s JSON schema as the tool's
``outputSchema`` while the content block holds the token-efficient rendering instead of a JSON dump.
"""

from __future__ import annotations

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel


def tool_result(model: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=model.model_dump(mode="json", by_alias=True),
    )
