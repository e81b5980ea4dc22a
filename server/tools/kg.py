"""The Tree-of-Traversals KG interface as MCP tools: initialize, get_relations, get_edges, plus helpers.

Each tool hands its call to ``runtime.graph`` (:class:`kg_adapters.linked.LinkedKG`), which routes namespaced IDs
(``movies:E12``) to their KG and follows links across KGs, and returns both the typed result and the compact text
of :mod:`server.render`. Every result is bounded by the runtime's ``Limits`` and says when it was cut.
"""


import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, BeforeValidator, Field

from kg_adapters.base import KnowledgeGraph
from kg_adapters.errors import KGError
from kg_adapters.models import (
    Direction,
    EdgePage,
    EntityDescription,
    EntityMatch,
    KGInfo,
    Relation,
)

from .. import render
from ..results import tool_result
from ..runtime import Runtime

T = TypeVar("T")

def _one_or_many(value: Any) -> Any:
    """Accept a bare ID where a list is expected: models often pass ``"movies:E1"`` for ``["movies:E1"]``."""
    return [value] if isinstance(value, str) else value


EntityIds = Annotated[
    list[str],
    BeforeValidator(_one_or_many),
    Field(description="Namespaced entity IDs, e.g. ['movies:E1407']. IDs of several KGs may be mixed."),
]


# -- result models ----------------------------------------------------------------------------------------------
class EntityMatches(BaseModel):
    query: str
    kgs: list[str] = Field(description="The KGs that were searched.")
    entities: list[EntityMatch]
    partial: bool = Field(default=False, description="True when some KG failed; see warnings.")
    warnings: list[str] = Field(default_factory=list)


class RelationsResult(BaseModel):
    entity_ids: list[str]
    relations: list[Relation]
    truncated: bool = False
    partial: bool = False
    warnings: list[str] = Field(default_factory=list)


class KGList(BaseModel):
    kgs: list[KGInfo]
    links: list[str] = Field(default_factory=list, description="How entities are linked across the KGs.")
    warnings: list[str] = Field(default_factory=list)


# -- helpers ----------------------------------------------------------------------------------------------------
async def _fan_out(
    kgs: Sequence[KnowledgeGraph], call: Callable[[KnowledgeGraph], Awaitable[T]], ctx: Context | None = None
) -> tuple[list[tuple[KnowledgeGraph, T]], list[str]]:
    """Run ``call`` on every KG concurrently. Failures of some KGs become warnings; if all fail, the first error
    is raised (so a bad query reads as a bad query, not as an empty result)."""
    done = 0

    async def one(kg: KnowledgeGraph) -> T:
        nonlocal done
        try:
            return await call(kg)
        finally:
            done += 1
            if ctx is not None:
                await ctx.report_progress(done, len(kgs), f"{kg.name} answered")

    if len(kgs) == 1:  # the common case: no task to spawn (a measurable share of a ~2 ms call over HTTP)
        try:
            outcomes: list = [await one(kgs[0])]
        except Exception as e:  # noqa: BLE001 - same handling as gather(return_exceptions=True) below
            outcomes = [e]
    else:
        outcomes = await asyncio.gather(*(one(kg) for kg in kgs), return_exceptions=True)
    ok: list[tuple[KnowledgeGraph, T]] = []
    errors: list[tuple[KnowledgeGraph, BaseException]] = []
    for kg, out in zip(kgs, outcomes):
        if isinstance(out, BaseException):
            if not isinstance(out, KGError):
                raise out
            errors.append((kg, out))
        else:
            ok.append((kg, out))
    if not ok and errors:
        raise errors[0][1]
    return ok, [f"KG {kg.name!r} failed: {err}" for kg, err in errors]


def register(server: MCPServer, runtime: Runtime) -> None:
    """Add the KG tools to ``server``; they read KGs and limits from ``runtime``."""
    graph = runtime.graph
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=graph.capabilities.remote)
    limits = runtime.limits
    kg_names = ", ".join(runtime.kgs)

    async def _link(
        query: str, kg: str | None, limit: int, ctx: Context | None, how: str
    ) -> EntityMatches:
        query = limits.check_query(query)
        limit = limits.clamp(limit, limits.max_search)
        async def progress(done: int, total: int, name: str) -> None:
            if ctx is not None:
                await ctx.report_progress(done, total, f"{name} answered")

        found = await runtime.select(kg).find_matches(query, limit, how, progress)  # each real-world entity once
        return EntityMatches(query=query, kgs=found.kgs, entities=found.entities, partial=bool(found.warnings),
                             warnings=found.warnings)

    @server.tool(title="Link the entities of a question", annotations=read_only)
    async def initialize(
        query: Annotated[str, Field(description="The question or text whose entities to find. "
                                                "Put explicit entity mentions in [brackets].")],
        kg: Annotated[str | None, Field(description=f"KG name to search (one of: {kg_names}); default all.")] = None,
        limit: Annotated[int, Field(ge=1, description="Maximum entities returned.")] = 10,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, EntityMatches]:
        """Tree-of-Traversals step 1: link the entities mentioned in a query to KG entities (entity linking).

        Returns `id: label - description` per entity with how it matched. Continue with get_relations on the IDs
        that fit the question."""
        result = await _link(query, kg, limit, ctx, "link")
        return tool_result(result, render.render_matches(f"Entities linked from {query!r}", result.entities,
                                                         result.warnings))

    @server.tool(title="Search entities by label", annotations=read_only)
    async def search_entities(
        text: Annotated[str, Field(description="A name or label to look up (exact, case-insensitive, fuzzy, BM25).")],
        kg: Annotated[str | None, Field(description=f"KG name to search (one of: {kg_names}); default all.")] = None,
        limit: Annotated[int, Field(ge=1, description="Maximum entities returned.")] = 10,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, EntityMatches]:
        """Find entities whose label matches a text, best first. Use when initialize missed an entity."""
        result = await _link(text, kg, limit, ctx, "search")
        return tool_result(result, render.render_matches(f"Entities matching {text!r}", result.entities,
                                                         result.warnings))

    @server.tool(title="List the relations of entities", annotations=read_only)
    async def get_relations(
        entity_ids: EntityIds, ctx: Context | None = None
    ) -> Annotated[CallToolResult, RelationsResult]:
        """Tree-of-Traversals step 2: the relation types the entities have, in both directions, with edge counts.

        `forward` means entity -relation-> x; `backward` means x -relation-> entity (read as the inverse). Pick
        one relation and direction, then call get_edges."""
        ids = list(dict.fromkeys(entity_ids))
        rl = await graph.get_relations(ids)
        result = RelationsResult(
            entity_ids=ids, relations=rl.relations, truncated=rl.truncated, partial=rl.partial, warnings=rl.warnings
        )
        return tool_result(result, render.render_relations(result.entity_ids, result))  # type: ignore[arg-type]

    @server.tool(title="Follow one relation from entities", annotations=read_only)
    async def get_edges(
        entity_ids: EntityIds,
        relation_id: Annotated[str, Field(description="A relation ID from get_relations, e.g. 'movies:starred_actors'.")],
        direction: Annotated[Direction, Field(description="forward: entity is the subject; backward: the object.")]
        = Direction.forward,
        limit: Annotated[int | None, Field(ge=1, description=f"Edges per page (at most {limits.max_edges}).")] = None,
        offset: Annotated[int, Field(ge=0, description="Skip this many edges (use next_offset to page).")] = 0,
    ) -> Annotated[CallToolResult, EdgePage]:
        """Tree-of-Traversals step 3: the edges from the entities along one relation, and the entities reached.

        Text groups targets by source and relation: `source: relation label (inverse) [count]: id label, ...`
        (the label is left out when the relation ID already reads as it). When truncated, call again with
        offset=next_offset."""
        limit = limits.clamp(limit, limits.max_edges)  # the server's cap holds whatever the adapter's is
        page = await graph.get_edges(list(dict.fromkeys(entity_ids)), relation_id, direction, limit, offset)
        return tool_result(page, render.render_edges(page))

    @server.tool(title="Describe one entity", annotations=read_only)
    async def describe_entity(
        entity_id: Annotated[str, Field(description="One namespaced entity ID, e.g. 'movies:E1407'.")],
    ) -> Annotated[CallToolResult, EntityDescription]:
        """Label, description, aliases, IDs in linked KGs and the relation summary of one entity."""
        desc = await graph.describe_entity(entity_id)
        return tool_result(desc, render.render_description(desc))

    @server.tool(title="List the configured KGs", annotations=read_only)
    async def list_kgs(ctx: Context | None = None) -> Annotated[CallToolResult, KGList]:
        """Name, backend, size and a sample of the relation vocabulary of every configured KG."""
        answered, warnings = await _fan_out(list(runtime.kgs.values()), lambda k: k.info(), ctx)
        links = [r.describe() for r in graph.linker.rules]
        result = KGList(kgs=[info for _, info in answered], links=links, warnings=warnings)
        linked = [f"links: {'; '.join(links)} (get_relations and get_edges follow them)"] if links else []
        text = "\n".join([render.render_kg_infos(result.kgs), *linked, *(f"warning: {w}" for w in warnings)])
        return tool_result(result, text)
