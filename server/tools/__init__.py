"""Tool modules, each contributing tools through one registrar function.

The pattern (follow it to add tools):

* write ``server/tools/<area>.py`` with ``def register(server: MCPServer, runtime: Runtime) ->
  None`` that defines its tools as closures over ``runtime`` and adds them with
  ``@server.tool(...)``;
* have each tool take typed arguments (pydantic ``Field`` descriptions become the input schema),
  declare ``-> Annotated[CallToolResult, ResultModel]`` and return
  ``server.tool_results.tool_result(model, text)`` so clients get both structured content and a
  compact text rendering;
* raise ``KGError`` subclasses (or ``ToolError``) for bad input; ``server.app.TotServer`` turns them
  into one-line ``is_error`` results, and logs anything unexpected;
* append its ``register`` to ``REGISTRARS`` below. ``server.app.build_server`` calls them in order;
* name the tool in ``PROFILES["default"]`` only if a client model needs it on every turn: the tool
  list is resent with every request and paid for in tokens (docs/tools.md has the budget).
  Everything else is in ``all``.

Shared services (the embedder, the LLM backend, the KGs) come from ``runtime``; never create them at
import time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from . import kg, sparql, strategies, tot

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ..runtime import Runtime

Registrar = Callable[["MCPServer", "Runtime"], None]

#: ``--tools`` / ``[server] tools``: which registered tools a client sees. ``default`` is the
#: model's budget (at most 10 tools); ``all`` adds each composite strategy as its own tool with its
#: algorithm knobs, and the operator tools (``build_index``, ``router_stats``). ``None``: every
#: registered tool.
PROFILES: dict[str, frozenset[str] | None] = {
    "default": frozenset(
        {
            "list_kgs",
            "initialize",
            "search_entities",
            "get_relations",
            "get_edges",
            "follow_path",
            "describe_entity",
            "route_query",
            "tree_of_traversals",
            "sparql_query",
        }
    ),
    "all": None,
}

REGISTRARS: list[Registrar] = [
    kg.register,
    tot.register,
    strategies.register,
    sparql.register,
]
