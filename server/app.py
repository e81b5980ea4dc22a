"""Assemble the MCP server from a :class:`~server.runtime.Runtime`: tools, one resource per KG, the
ToT prompt.

``build_server(runtime)`` is the only entry point; the CLI and the tests call it, and it holds no
state of its own. Errors are mapped here once for every tool (including tools other modules
register): a ``KGError`` or bad arguments become a one-line ``is_error`` result the model can act
on; anything else is logged with its traceback on stderr and reported as a generic failure, and the
server keeps serving.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.apps import Apps
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import ValidationError

from tot_mcp.kg_adapters.clients import CLIENT
from tot_mcp.kg_adapters.cpu import POOLS, Pools
from tot_mcp.kg_adapters.errors import (
    BackendError,
    BackendRefused,
    Busy,
    EndpointFailed,
    InvalidInput,
    KGError,
    NotFound,
    ServiceUnavailable,
    UnknownKG,
)
from tot_mcp.strategies.settings import SERVER_DEFAULTS

from . import __version__
from .tree_view import register_apps
from .prompts import register_prompts
from .render import one_line
from .resources import register_resources
from .tool_results import client_of
from .runtime import Runtime
from .schema import lean_schema, model_schema, model_text
from .tools import PROFILES, REGISTRARS

log = logging.getLogger("tot_mcp.server")
#: a tool function, given back as it came
F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = (
    "Knowledge-graph access in the Tree-of-Traversals style. Start with initialize(query) to link "
    "the entities of a question, then alternate get_relations(entity_ids) and "
    "get_edges(entity_ids, relation_id, direction) to grow a subgraph; IDs are namespaced by KG "
    "(movies:E12). A relation runs forward from subject to object; list_kgs shows each relation of "
    "a small schema with an example edge, so you know which way to walk it. When you know the "
    "relations a question follows, follow_path(start=name, hops=[...]) answers it in one call. "
    "With several KGs, an entity's equivalents in the others are linked (same_as): its "
    "get_relations lists their relations too, and get_edges and follow_path follow another KG's "
    "relation from it directly. A result that reaches several entities names them with a handle: "
    "pass from_result instead of copying IDs. The prompt 'tree_of_traversals' explains the "
    "procedure."
)


#: what a KGError is, by the first class it is an instance of (subclasses before their bases)
_KINDS: tuple[tuple[type[KGError], str], ...] = (
    (UnknownKG, "unknown KG"),
    (InvalidInput, "invalid input"),
    (NotFound, "not found"),
    (ServiceUnavailable, "unavailable"),
    (Busy, "busy"),
    (BackendRefused, "backend refused (change the request; retrying will not help)"),
    (
        EndpointFailed,
        "backend error (if the endpoint's message names the request, change it; else retry later)",
    ),
    (BackendError, "backend error (may be transient, retry later)"),
)


def describe_kg_error(exc: KGError) -> str:
    """``not found: no entity movies:E99 in KG 'movies'`` — the kind first, so a model can tell
    retry from fix."""
    kind = next((kind for cls, kind in _KINDS if isinstance(exc, cls)), "error")
    return one_line(f"{kind}: {exc}")


def describe_validation_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "tArguments") or "arguments"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    more = f" (+{exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
    return one_line("invalid arguments: " + "; ".join(parts) + more)


def _named(tool: str, message: str) -> str:
    """``TOOL: message``, the tool named once: a tool's own error may already start with its
    name, and the SDK's wrapper says ``Error executing tool TOOL:``."""
    message = message.removeprefix(f"Error executing tool {tool}: ")
    return (
        message
        if message.startswith(f"{tool}: ") or message.startswith(f"{tool} ")
        else f"{tool}: {message}"
    )


class TotServer(MCPServer):
    """MCPServer with the project's error mapping applied to every tool call, and output schemas
    that are cheap for clients to validate (see :mod:`server.schema`). Each call runs with its
    client in :data:`kg_adapters.clients.CLIENT` (endpoint slots are shared fairly among clients),
    and one client has at most ``max_calls_per_client`` calls in flight: one more is refused at once
    with one line, so a client cannot park unbounded work in the server. CPU-bound work (local KGs'
    pages, the SPARQL guard's parse) runs in the server's worker pools (:mod:`kg_adapters.cpu`, set
    in :data:`~kg_adapters.cpu.POOLS` for each call), so the event loop keeps serving every client,
    calls overlap and are counted, and a cancelled call stops."""

    _arguments: dict[str, set[str]] | None = None
    max_calls_per_client: int = SERVER_DEFAULTS.max_calls_per_client
    shown: frozenset[str] | None = None  # the tools clients see (--tools); None: every one

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # tool name → (its description and schemas as registered, their lean forms): a client may
        # list the tools before every turn, and rewriting every schema costs more than the SDK's own
        # listing
        self._lean_tools: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        self._in_flight: Counter[str] = Counter()  # calls running, per client
        self.pools = Pools()  # worker threads for CPU-bound work, shared fairly among clients

    def tool(self, name: str | None = None, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        """Register a tool only if the profile shows it (its ``name=`` or its function's name): the
        rest stays reachable with --tools all."""
        register = super().tool(name, *args, **kwargs)
        shown = self.shown

        def add(fn: F) -> F:
            return register(fn) if shown is None or (name or fn.__name__) in shown else fn

        return add

    async def list_tools(self) -> list[Any]:
        return [t.model_copy(update=self._lean_fields(t)) for t in await super().list_tools()]

    def _lean_fields(self, tool: Any) -> dict[str, Any]:
        """The tool's description and schemas as clients get them, computed once per tool (again
        only if a tool of that name is registered anew with other ones)."""
        registered = (tool.description, tool.input_schema, tool.output_schema)
        known = self._lean_tools.get(tool.name)
        if known is None or known[0] != registered:
            lean = {
                "description": model_text(tool.description),
                "input_schema": model_schema(tool.input_schema),
                **(
                    {"output_schema": lean_schema(tool.output_schema)} if tool.output_schema else {}
                ),
            }
            known = self._lean_tools[tool.name] = (registered, lean)
        return known[1]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> Any:
        if (
            self._arguments is None
        ):  # every tool's argument names, once (the list does not change after build)
            self._arguments = {
                t.name: set(t.input_schema.get("properties", {})) for t in await self.list_tools()
            }
        known = self._arguments.get(name)
        if (
            known is not None and arguments
        ):  # the SDK drops unknown arguments: a misspelt one would go unnoticed
            unknown = sorted(set(arguments) - known)
            if unknown:
                raise ToolError(
                    one_line(
                        f"{name}: invalid arguments: unknown {', '.join(map(repr, unknown))} "
                        f"(valid: {', '.join(sorted(known)) or 'none'})"
                    )
                )
        client = client_of(context)
        if self._in_flight[client] >= self.max_calls_per_client:
            raise ToolError(
                f"{name}: too many calls in flight: this client already has "
                f"{self._in_flight[client]} "
                "running (the server's per-client limit); wait for some to finish, then retry"
            )
        self._in_flight[client] += 1
        token, pools = CLIENT.set(client), POOLS.set(self.pools)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, KGError):
                raise ToolError(f"{name}: {describe_kg_error(cause)}") from cause
            if isinstance(exc, UnexpectedToolError):
                # logged with its traceback by the SDK; the client sees only a generic message
                raise
            if isinstance(cause, ValidationError):
                raise ToolError(f"{name}: {describe_validation_error(cause)}") from cause
            text = _named(name, str(exc)) if isinstance(cause, ToolError) else str(exc)
            raise ToolError(one_line(text)) from cause
        finally:
            POOLS.reset(pools)
            CLIENT.reset(token)
            self._in_flight[client] -= 1
            if not self._in_flight[client]:
                del self._in_flight[client]


def build_server(runtime: Runtime) -> MCPServer:
    """A ready-to-run server over ``runtime``'s KGs. Tools come from every registrar in
    ``server.tools.REGISTRARS``."""
    server = TotServer(
        name="tot-mcp",
        title="Tree-of-Traversals KG server",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level=logging.getLevelName(logging.getLogger().level)
        if logging.getLogger().level
        else "WARNING",
        extensions=[Apps()],  # MCP Apps in the capabilities; register_apps serves them
    )
    server.max_calls_per_client = runtime.config.server.max_calls_per_client
    server.shown = PROFILES[runtime.config.server.tools]
    for register in REGISTRARS:
        register(server, runtime)
    register_resources(server, runtime)
    register_prompts(server, runtime)
    register_apps(
        server, runtime
    )  # MCP Apps: tree_of_traversals' search tree, drawn where the user is
    return server
