"""The Tree-of-Traversals KG interface as MCP tools: initialize, get_relations, get_edges, plus
helpers.

Each tool hands its call to ``runtime.graph`` (:class:`kg_adapters.routing.LinkedKG`), which routes
namespaced IDs (``movies:E12``) to their KG and follows links across KGs, and returns both the typed
result and the compact text of :mod:`server.render`. Every result is bounded by the runtime's
``Limits`` and says when it was cut.
"""

import asyncio
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, BeforeValidator, Field

from tot_mcp.kg_adapters.models import labels_only
from tot_mcp.kg_adapters.batched import edges_over, relations_over, why_empty
from tot_mcp.kg_adapters.errors import InvalidInput, NotFound
from tot_mcp.kg_adapters.follow import MAX_HOPS, Hop, PathResult
from tot_mcp.kg_adapters.follow import follow_path as follow_path_in
from tot_mcp.kg_adapters.link_grade import grade
from tot_mcp.kg_adapters.models import (
    Direction,
    EdgePage,
    EntityMatch,
    KGInfo,
    Relation,
)
from tot_mcp.kg_adapters.sparql.relsearch import RelationHit
from tot_mcp.kg_adapters.sparql.values import EntityDetails

from .. import render
from ..tool_results import progress_to, tool_result
from ..runtime import Runtime


def _one_or_many(value: Any) -> Any:
    """Accept a bare ID where a list is expected: models often pass ``"movies:E1"`` for
    ``["movies:E1"]``."""
    return [value] if isinstance(value, str) else value


FromResult = Annotated[
    str | None,
    Field(
        description=(
            "Instead of entity_ids: a result handle ('r…'), every entity that result reached."
        )
    ),
]


# -- result models ---------------------------------------------------------------------------------
class EntityMatches(BaseModel):
    query: str
    kgs: list[str] = Field(description="The KGs that were searched.")
    entities: list[EntityMatch]
    result_id: str | None = Field(
        default=None, description="Handle of these entities, for from_result."
    )
    omitted: int = Field(
        default=0, description="Fuzzy look-alikes of mentions matched exactly, left out."
    )
    partial: bool = Field(default=False, description="True when some KG failed; see warnings.")
    warnings: list[str] = Field(default_factory=list)
    relations: str = Field(
        default="",
        description="initialize: the KGs' relations by the names "
        "get_edges and follow_path accept, each with an example edge, subject → "
        "object (empty when there are too many to list).",
    )


class RelationsResult(BaseModel):
    entity_ids: list[str]
    relations: list[Relation]
    search: str | None = Field(
        default=None, description="The text relations were searched by, if any."
    )
    matches: list[RelationHit] = Field(
        default_factory=list, description="search: relations by meaning, best first."
    )
    hint: str | None = Field(default=None, description="Where the KGs' other relations are.")
    truncated: bool = False
    partial: bool = False
    warnings: list[str] = Field(default_factory=list)


class EdgesResult(EdgePage):
    targets: int = Field(
        default=0, description="Distinct entities and values reached on this page."
    )
    # what a page lacks is left out of its JSON (absent means none)
    result_id: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="Handle of the entities reached, for from_result.",
    )
    sources_without_edges: list[str] = Field(
        default_factory=list, exclude_if=lambda v: not v, description="Sources with no such edge."
    )
    hint: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="What to try when the page is empty.",
    )


class PathsResult(PathResult):
    result_id: str | None = Field(
        default=None, description="Handle of every final target entity, for from_result."
    )
    linked: str | None = Field(
        default=None, description="start: the entity it was linked to, and what else matched."
    )
    start_relations: list[str] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        description="When nothing was reached: the relations the start does have, as "
        "'id (direction)'.",
    )


class KGList(BaseModel):
    kgs: list[KGInfo]
    examples: dict[str, str] = Field(
        default_factory=dict,
        description="One edge per relation, subject → object "
        "(small vocabularies only): the relation's forward direction.",
    )
    links: list[str] = Field(
        default_factory=list, description="How entities are linked across the KGs."
    )
    warnings: list[str] = Field(default_factory=list)


#: follow_path that reached nothing: the start's relations listed (the rest: get_relations)
START_RELATIONS = 20
RELATIONS_FOUND = (
    10  # get_relations(search=...): the best few (search_relations' default before it merged here)
)


def register(server: MCPServer, runtime: Runtime) -> None:
    """Add the KG tools to ``server``; they read KGs, limits and result handles from ``runtime``."""
    graph = runtime.graph
    handles = runtime.handles
    read_only = ToolAnnotations(
        read_only_hint=True, idempotent_hint=True, open_world_hint=graph.capabilities.remote
    )
    limits = runtime.limits
    kg_names = ", ".join(runtime.kgs)
    KgArg = Annotated[str | None, Field(description=f"One of {kg_names}; default all.")]
    # entity_ids: optional where from_result may stand for them. The cap is stated in the schema
    # (maxItems) and enforced by sources() with a message that names the way around it
    EntityIds = Annotated[
        list[str] | None,
        BeforeValidator(_one_or_many),
        Field(
            description=(
                f"IDs such as 'movies:E1407' (at most {limits.max_ids}; more: from_result)."
            ),
            json_schema_extra={"maxItems": limits.max_ids},
        ),
    ]
    Limit = Annotated[int | None, Field(ge=1, json_schema_extra={"maximum": limits.max_edges})]
    Offset = Annotated[int, Field(ge=0, description="next_offset of the previous page.")]
    SearchLimit = Annotated[int, Field(ge=1, json_schema_extra={"maximum": limits.max_search})]
    Query = Annotated[str, Field(json_schema_extra={"maxLength": limits.max_query_chars})]

    def sources(entity_ids: list[str] | None, from_result: str | None) -> list[str]:
        """The entities a call is about: ``entity_ids`` (capped), or every entity of a result
        handle."""
        if from_result is not None and entity_ids:
            raise InvalidInput("give entity_ids or from_result, not both")
        if from_result is not None:
            ids = list(handles.get(from_result).entity_ids)
            if not ids:
                raise InvalidInput(
                    f"result {from_result.strip()} reached no entities; nothing to expand"
                )
            return ids
        if not entity_ids:
            raise InvalidInput(
                "no entity IDs given: pass entity_ids, or from_result with a result handle"
            )
        ids = list(dict.fromkeys(entity_ids))
        if len(ids) > limits.max_ids:
            raise InvalidInput(
                f"{len(ids)} IDs given; at most {limits.max_ids} per call (pass from_result to "
                "use a whole earlier result)"
            )
        return ids

    async def _link(
        query: str, kg: str | None, limit: int, ctx: Context | None, how: str
    ) -> EntityMatches:
        query = limits.check_query(query)
        limit = limits.clamp(limit, limits.max_search)
        # each entity once
        found = await runtime.select(kg).find_matches(
            query, limit, how, progress_to(ctx, " answered")
        )
        handle = handles.remember(
            how, [m.entity.id for m in found.entities], query=query, kg=kg, limit=limit
        )
        return EntityMatches(
            query=query,
            kgs=found.kgs,
            entities=found.entities,
            result_id=handle,
            omitted=found.omitted,
            partial=bool(found.warnings),
            warnings=found.warnings,
        )

    @server.tool(title="Link the entities of a question", annotations=read_only)
    async def initialize(
        query: Annotated[
            Query, Field(description="The question; mark entity mentions in [brackets].")
        ],
        kg: KgArg = None,
        limit: SearchLimit = 10,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, EntityMatches]:
        """Step 1: link the entities a question mentions to KG entities: id, label and description
        each. On KGs with a small schema it also lists every relation by name, so follow_path can
        answer next; else call get_relations."""
        result = await _link(query, kg, limit, ctx, "link")
        if result.entities:  # each with an example edge: which way to walk it, in words
            examples = await runtime.relation_examples()
            result.relations = (await runtime.relation_names()).listing(examples)
        text = render.render_matches(
            f"Entities linked from {query!r}",
            result.entities,
            result.warnings,
            result.result_id,
            result.omitted,
        )
        if result.relations:
            text += f"\nRelations, by name (subject → object, e.g.): {result.relations}"
        return tool_result(result, text)

    @server.tool(title="Search entities by label", annotations=read_only)
    async def search_entities(
        text: Annotated[
            Query, Field(description="A name to look up, or with relation an identifier value.")
        ],
        kg: KgArg = None,
        limit: SearchLimit = 10,
        relation: Annotated[
            str | None,
            Field(
                description="An identifier relation, e.g. 'wd:P345' (IMDb ID): "
                "the entities whose value of it is exactly text."
            ),
        ] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, EntityMatches]:
        """Entities whose name matches text (fuzzy, best first), when initialize missed one; with
        relation, the entity an external identifier (IMDb, ISBN, DOI...) belongs to."""
        if relation is not None and relation.strip():
            return await by_identifier(relation.strip(), text, limit)
        result = await _link(text, kg, limit, ctx, "search")
        return tool_result(
            result,
            render.render_matches(
                f"Entities matching {text!r}", result.entities, result.warnings, result.result_id
            ),
        )

    async def by_identifier(relation: str, value: str, limit: int) -> CallToolResult:
        """``search_entities(relation=...)``: the entities holding an identifier value, any
        backend."""
        value = value.strip()
        if not value or len(value) > 400:
            raise InvalidInput("text must be 1 to 400 characters")
        relation = await runtime.relation_id(relation)
        owner = graph.owner(relation)
        vocabulary = (
            owner.relation_vocabulary()
        )  # local KGs know theirs without I/O; SPARQL KGs check when empty
        if vocabulary is not None and relation not in vocabulary:
            raise NotFound(
                f"no relation {relation!r} in KG {owner.name!r}; get_relations(search=...) finds "
                "one"
            )
        limit = limits.clamp(limit, limits.max_search)
        ids = await owner.find_by_value(relation, value, limit=limit)
        described = await asyncio.gather(*(graph.describe_entity(i) for i in ids[:limit]))
        found = [EntityMatch(entity=d.entity, score=1.0, match="identifier") for d in described]
        handle = handles.remember(
            "search", [m.entity.id for m in found], relation=relation, text=value
        )
        result = EntityMatches(query=value, kgs=[owner.name], entities=found, result_id=handle)
        if not found:
            return tool_result(result, f"no entity in KG {owner.name!r} has {relation} = {value!r}")
        return tool_result(
            result,
            render.render_matches(f"Entities with {relation} = {value!r}", found, [], handle),
        )

    async def search_relations(text: str, kg: str | None) -> CallToolResult:
        text = text.strip()
        if not text or len(text) > 200:
            raise InvalidInput("search must be 1 to 200 characters")
        hits, warnings = await runtime.select(kg).find_relations(text, RELATIONS_FOUND)
        result = RelationsResult(
            entity_ids=[],
            relations=[],
            matches=hits,
            search=text,
            partial=bool(warnings),
            warnings=warnings,
        )
        return tool_result(result, render.render_relation_search(text, hits, warnings))

    @server.tool(title="List the relations of entities", annotations=read_only)
    async def get_relations(
        entity_ids: EntityIds = None,
        from_result: FromResult = None,
        search: Annotated[
            str | None,
            Field(
                description="Instead of entities: find relations of the KGs by "
                "meaning, e.g. 'place of birth'.",
                json_schema_extra={"maxLength": 200},
            ),
        ] = None,
        kg: Annotated[
            str | None, Field(description="With search: one of " + kg_names + "; default all.")
        ] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, RelationsResult]:
        """Step 2: the relations the entities have, with edge counts: forward is entity -r-> x,
        backward is x -r-> entity. Pick one, then get_edges or follow_path. With search, relations
        by meaning across the KG (large schemas such as Wikidata's)."""
        if search is not None and search.strip():
            if entity_ids or from_result:
                raise InvalidInput("give entity_ids/from_result or search, not both")
            return await search_relations(search, kg)
        used, rl = await relations_over(graph, sources(entity_ids, from_result))
        hint = (
            "other relations of the KGs: list_kgs, or get_relations(search=...)"
            if len(used) == 1
            else None
        )
        result = RelationsResult(
            entity_ids=used,
            relations=rl.relations,
            hint=hint,
            truncated=rl.truncated,
            partial=rl.partial,
            warnings=rl.warnings,
        )
        return tool_result(result, render.render_relations(used, rl, hint))

    @server.tool(title="Follow one relation from entities", annotations=read_only)
    async def get_edges(
        relation_id: Annotated[
            str, Field(description="A relation ID from get_relations, or a name initialize lists.")
        ],
        entity_ids: EntityIds = None,
        direction: Annotated[
            Direction, Field(description="backward: the entities are the objects.")
        ] = Direction.forward,
        limit: Limit = None,
        offset: Offset = 0,
        from_result: FromResult = None,
    ) -> Annotated[CallToolResult, EdgesResult]:
        """Step 3: follow one relation from the entities: the targets grouped by source, then a
        handle for all of them (from_result). A cut page says next_offset."""
        ids = sources(entity_ids, from_result)
        relation_id = await runtime.relation_id(relation_id)
        limit = limits.clamp(
            limit, limits.max_edges
        )  # the server's cap holds whatever the adapter's is
        page = await edges_over(graph, ids, relation_id, direction, limit, offset)
        reached = list(dict.fromkeys(e.target for e in page.edges if e.target))
        values = {e.value.value for e in page.edges if e.target is None and e.value is not None}
        had = {e.via or e.source for e in page.edges}
        quiet = [i for i in ids if i not in had] if offset == 0 and not page.truncated else []
        hint = (
            await why_empty(graph, ids, relation_id, direction)
            if not page.edges and offset == 0
            else None
        )
        handle = handles.remember(
            "get_edges",
            reached,
            entity_ids=None if from_result else ids,
            from_result=from_result,
            relation_id=relation_id,
            direction=direction,
            limit=limit,
            offset=offset,
        )
        result = EdgesResult.model_construct(
            **dict(page),
            targets=len(reached) + len(values),
            result_id=handle,
            sources_without_edges=quiet if page.edges else [],
            hint=hint,
        )
        return tool_result(result, render.render_edges_result(result))

    @server.tool(title="Follow a path of relations in one call", annotations=read_only)
    async def follow_path(
        hops: Annotated[
            list[Hop],
            Field(
                min_length=1,
                max_length=MAX_HOPS,
                description="The relations in order, e.g. [{relation_id: 'starred_actors', "
                "direction: 'backward'}].",
            ),
        ],
        entity_ids: EntityIds = None,
        from_result: FromResult = None,
        start: Annotated[
            str | None,
            Field(
                description="Instead of IDs: a name, linked as initialize would.",
                json_schema_extra={"maxLength": limits.max_query_chars},
            ),
        ] = None,
        exclude_start: Annotated[
            bool, Field(description="Leave the start out of the final targets.")
        ] = True,
        through_start: Annotated[
            bool,
            Field(
                description="false: no walk passes back through the start ('the other "
                "films of X's writers' skips X)."
            ),
        ] = True,
        limit: Annotated[
            int | None,
            Field(
                ge=0,
                description="0: only the count and the handle.",
                json_schema_extra={"maximum": limits.max_edges},
            ),
        ] = None,
        offset: Offset = 0,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, PathsResult]:
        """Follow a chain of relations in one call, from entities or from a name (start): the
        distinct final targets, most paths first, each with one example path."""
        linked = None
        if start is not None and start.strip():
            if entity_ids or from_result:
                raise InvalidInput("give one of entity_ids, from_result or start")
            ids, linked = await link_start(start, ctx)
        else:
            ids = sources(entity_ids, from_result)
        hops = [
            Hop(relation_id=await runtime.relation_id(h.relation_id), direction=h.direction)
            for h in hops
        ]
        limit = (
            0 if limit == 0 else limits.clamp(limit, limits.max_edges)
        )  # 0: a handle for the next step only
        res = await follow_path_in(
            graph,
            ids,
            hops,
            exclude_start=exclude_start,
            through_start=through_start,
            limit=limit,
            offset=offset,
        )
        handle = handles.remember(
            "follow_path",
            res.target_ids,
            entity_ids=None if from_result else ids,
            from_result=from_result,
            hops=[h.model_dump(mode="json") for h in hops],
            exclude_start=exclude_start,
            through_start=None if through_start else False,
        )
        result = PathsResult(**res.model_dump(), result_id=handle, linked=linked)
        result.entities = labels_only(result.entities)
        if not res.total and res.reached and not res.reached[0]:  # the first hop found nothing
            found = await graph.get_relations(ids[: limits.max_ids])  # what is there instead
            result.start_relations = [
                f"{r.id} ({r.direction.value})" for r in found.relations[:START_RELATIONS]
            ]
        return tool_result(result, render.render_paths(result, start_counted=not exclude_start))

    async def link_start(mention: str, ctx: Context | None) -> tuple[list[str], str]:
        """``follow_path(start=...)``: the best entity for a name, and a line saying what else
        matched, so a wrong pick is visible and a model can pass entity_ids instead."""
        mention = limits.check_query(mention).strip()
        query = mention if "[" in mention else f"[{mention}]"
        found = await graph.find_matches(query, 5, "link", progress_to(ctx, " answered"))
        if not found.entities:
            raise NotFound(
                f"no entity matches {mention!r}; try search_entities with another spelling"
            )
        best, rest = found.entities[0], found.entities[1:]

        def ref(
            m: EntityMatch,
        ) -> str:  # what kind of thing it is, so a wrong pick shows without a call
            desc = render.first_parts(m.entity.description or "", 70)
            return f"{m.entity.id} {m.entity.label}" + (f" ({desc})" if desc else "")

        if not grade(best.mention or mention, best.entity.label, best.match).confident:
            # a walk from a look-alike answers about another thing than the one named
            raise NotFound(
                f"no entity is named {mention!r}; the closest is {ref(best)} "
                f"[{best.match}{render.loose_note(best)}]: pass its ID as entity_ids to walk from "
                "it, or try search_entities with another spelling"
            )
        note = f"start {mention!r} = {ref(best)} [{best.match}{render.loose_note(best)}]"
        if rest:
            note += "; also matched: " + "; ".join(ref(m) for m in rest[:4])
        return [best.entity.id], note

    @server.tool(title="Describe one entity", annotations=read_only)
    async def describe_entity(
        entity_id: Annotated[str | None, Field(description="e.g. 'movies:E1407'.")] = None,
        from_result: FromResult = None,
        position: Annotated[
            int, Field(ge=0, description="With from_result: which entity (0 = first).")
        ] = 0,
    ) -> Annotated[CallToolResult, EntityDetails]:
        """One entity: label, description, aliases, its IDs in linked KGs, its relations."""
        if from_result is not None:
            if entity_id:
                raise InvalidInput("give entity_id or from_result, not both")
            ids = handles.get(from_result).entity_ids
            if position >= len(ids):
                raise InvalidInput(
                    f"result {from_result.strip()} holds {len(ids)} entities; position is 0 to "
                    f"{len(ids) - 1}"
                )
            entity_id = ids[position]
        if not entity_id:
            raise InvalidInput("no entity given: pass entity_id, or from_result (and position)")
        desc = await graph.describe_entity(entity_id)
        details = EntityDetails.model_validate(
            desc, from_attributes=True
        )  # + statement count and types, if known
        return tool_result(details, render.render_description(details))

    @server.tool(title="List the configured KGs", annotations=read_only)
    async def list_kgs(ctx: Context | None = None) -> Annotated[CallToolResult, KGList]:
        """The KGs: name, backend, size, how they are linked, and their relations, each with an
        example edge that shows its direction when there are few (a sample when there are many:
        get_relations(search=...) finds more)."""
        infos, warnings = await graph.member_infos(progress_to(ctx, " answered"))
        links = [r.describe() for r in graph.linker.rules]
        result = KGList(
            kgs=infos, links=links, warnings=warnings, examples=await runtime.relation_examples()
        )
        followed = "get_relations, get_edges and follow_path follow them"
        linked = [f"links: {'; '.join(links)} ({followed})"] if links else []
        kgs = [render.render_kg_info(k, result.examples) for k in infos] or ["no KGs configured"]
        return tool_result(result, "\n".join([*kgs, *linked, *(f"warning: {w}" for w in warnings)]))
