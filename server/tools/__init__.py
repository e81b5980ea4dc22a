"""Tool modules, each contributing tools through one registrar function.

The pattern (follow it to add tools):

* write ``server/tools/<area>.py`` with ``def register(server: MCPServer, runtime: Runtime) -> None`` that defines
  its tools as closures over ``runtime`` and adds them with ``@server.tool(...)``;
* have each tool take typed arguments (pydantic ``Field`` descriptions become the input schema), declare
  ``-> Annotated[CallToolResult, ResultModel]`` and return ``server.results.tool_result(model, text)`` so clients
  get both structured content and a compact text rendering;
* raise ``KGError`` subclasses (or ``ToolError``) for bad input; ``server.app.TotServer`` turns them into one-line
  ``is_error`` results, and logs anything unexpected;
* append its ``register`` to ``REGISTRARS`` below. ``server.app.build_server`` calls them in order.

Shared services (the embedder, the LLM backend, the KGs) come from ``runtime``; never create them at import time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from . import kg, sparql, strategies, tot

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ..runtime import Runtime

Registrar = Callable[["MCPServer", "Runtime"], None]

REGISTRARS: list[Registrar] = [
    kg.register,
    tot.register,
    strategies.register,
    sparql.register,
]
