"""The composite strategies as MCP tools, generated from :mod:`strategies.registry`: every
registered strategy that names a ``tool`` gets one, whose arguments are ``query``, ``kg``, ``build``
and the strategy's own typed options, whose description is the strategy's summary and whose result
is the compact answer of :mod:`server.compact` (the strategy's whole result with ``detail="full"``).
Plus ``router_stats`` and ``build_index``.

The tools only map MCP to the strategies; indexes, the load-or-build policy and route statistics
live in the runtime's one :class:`strategies.services.Services`.
"""

from __future__ import annotations

import inspect
import time
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.strategies.grounding import run_checked
from tot_mcp.strategies.registry import REGISTRY, Call, Strategy
from tot_mcp.strategies.results import render_ranked
from tot_mcp.strategies.route_stats import RouteStatsSnapshot
from tot_mcp.strategies.indexes import INDEXES

from ..compact import CompactAnswer, Detail, Extras, compact_result
from ..tool_results import progress_to, tool_result
from ..runtime import Runtime

Query = Annotated[str, Field(description="The question; mark entity mentions in [brackets].")]
BuildArg = Annotated[
    bool | None,
    Field(
        description="Build a missing index within this call and wait (true), "
        "never (false), or as the server decides (default: small KGs "
        "within the call, large ones in the background)."
    ),
]
_RESERVED = {"query", "kg", "build", "detail", "ctx"}


class IndexStatus(BaseModel):
    kg: str
    index: str
    entities: int
    levels: dict[str, int] = Field(
        default_factory=dict, description="Communities per level, when built"
    )
    seconds: float
    cache_dir: str


def kg_for(strategy: Strategy, runtime: Runtime, name: str | None) -> Any:
    """The KG a strategy tool runs on: the one named; by default every KG, linked, or, for a
    strategy that reads every triple of one KG, the one KG held locally (asked for by name when
    there are several)."""
    if name and name.strip():
        return runtime.kg(name.strip())
    if len(runtime.kgs) == 1:
        return next(iter(runtime.kgs.values()))
    if not strategy.local_only:
        return runtime.graph
    local = [k for k in runtime.kgs.values() if k.capabilities.local_index]
    if len(local) == 1:
        return local[0]
    raise InvalidInput(
        f"{strategy.tool or strategy.name} reads every triple of one KG: pass kg (one of: "
        f"{', '.join(k.name for k in local) or 'none held locally'})"
    )


def strategy_tool(strategy: Strategy, runtime: Runtime, exposed: tuple[str, ...] | None = None):
    """The tool function of ``strategy``: a signature built from its options model, so the SDK
    derives the input schema (with every option's type, bounds and description) as for a
    hand-written tool. ``exposed``: the options a caller may set (None: all); every default is this
    server's (``[strategy.NAME]``, else the strategy's)."""
    fields = {
        k: v for k, v in strategy.options.model_fields.items() if exposed is None or k in exposed
    }
    clash = _RESERVED & set(fields)
    if clash:
        raise ValueError(
            f"strategy {strategy.name!r} has options named like the tool's own arguments: {clash}"
        )
    services = runtime.services
    defaults = services.options(strategy)
    names = ", ".join(runtime.kgs)
    kg_arg = Annotated[
        str | None,
        Field(
            description=f"One of {names}; default "
            + ("all" if not strategy.local_only else "the one held locally")
            + "."
        ),
    ]

    async def tool(**kwargs: Any) -> CallToolResult:
        ctx: Context | None = kwargs.pop("ctx", None)
        query, kg_name, build = (
            kwargs.pop("query"),
            kwargs.pop("kg", None),
            kwargs.pop("build", None),
        )
        detail: Detail = kwargs.pop("detail", "answer")
        kg = kg_for(strategy, runtime, kg_name)
        options = services.options(strategy, kwargs)
        wants_llm = (
            strategy.llm_option is not None and getattr(options, strategy.llm_option) == "llm"
        )
        call = Call.of(
            strategy,
            services,
            kg,
            query,
            options,
            llm_kind=runtime.config.llm.backend or "offline" if wants_llm else "offline",
            llm_factory=(lambda: runtime.llm(ctx)) if wants_llm else None,
            progress=progress_to(ctx),
            build=build,
        )
        out = await run_checked(strategy, call)
        if out.usage is None and not call.offline:
            out.usage = call.usage()
        extras = Extras(strategy=_what_ran(strategy, out), context=out.context)
        if getattr(getattr(out, "_ran", None), "_search", None) is not None:  # a route ran tot
            extras.more = "the whole result, the search tree and subgraph"
        if detail == "full":
            whole = (
                strategy.render(out)
                if strategy.render
                else render_ranked(f"{strategy.name} results", out.results)
            )
            extras.full_text = ["Whole result:", whole]
            extras.full = out.model_dump(mode="json", exclude={"query", "context"})
        return compact_result(
            out,
            extras,
            detail,
            lambda ids: runtime.handles.remember(
                strategy.tool or strategy.name, ids, query=query, kg=kg_name, **kwargs
            ),
        )

    params = [
        inspect.Parameter("query", inspect.Parameter.KEYWORD_ONLY, annotation=Query),
        inspect.Parameter("kg", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=kg_arg),
        *(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=getattr(defaults, name),
                annotation=Annotated[info.annotation, info],
            )
            for name, info in fields.items()
        ),
    ]
    if not all(
        INDEXES.get(n).cheap for n in strategy.needs
    ):  # an index that may take minutes: the caller may say when
        params.append(
            inspect.Parameter(
                "build", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=BuildArg
            )
        )
    # no description (the default tool list is a budget): each answer's text says what "full" adds
    params.append(
        inspect.Parameter(
            "detail", inspect.Parameter.KEYWORD_ONLY, default="answer", annotation=Detail
        )
    )
    params.append(
        inspect.Parameter(
            "ctx", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Context | None
        )
    )
    ret = Annotated[CallToolResult, CompactAnswer]
    tool.__signature__ = inspect.Signature(params, return_annotation=ret)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in params} | {"return": ret}
    tool.__name__ = strategy.tool or strategy.name
    tool.__doc__ = strategy.summary
    return tool


def _what_ran(strategy: Strategy, out: Any) -> str:
    """The strategy, and for a route what it chose and ran, with the route's analysis in brief."""
    route, ran = getattr(out, "route", None), getattr(out, "ran", None)
    if route is None or ran is None:
        return strategy.name
    analysis = getattr(out, "analysis", None)
    how = f", {analysis.hops} hop(s), {analysis.query_type}" if analysis is not None else ""
    return f"route {route} → ran {' then '.join(ran)}{how}"


def register(server: MCPServer, runtime: Runtime) -> None:
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    every_option = (runtime.config.server.tools or "default") == "all"
    for strategy in REGISTRY.all():
        if strategy.tool:
            exposed = None if every_option else strategy.model_options
            server.tool(
                name=strategy.tool,
                title=strategy.title or None,
                description=strategy.summary,
                annotations=read_only,
            )(strategy_tool(strategy, runtime, exposed))
    services = runtime.services

    @server.tool(title="Router statistics of this server", annotations=read_only)
    async def router_stats() -> Annotated[CallToolResult, RouteStatsSnapshot]:
        """How many questions took each route since the server started, analysis sources, fallbacks,
        latencies."""
        snap = services.route_stats.snapshot()
        text = (
            f"{snap.total} routed: "
            + ", ".join(f"{r} {n}" for r, n in snap.routes.items())
            + f"; rule fallbacks {snap.fallbacks}"
        )
        return tool_result(snap, text)

    @server.tool(
        title="Build the retrieval indexes of a KG",
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )
    async def build_index(
        kg: Annotated[str | None, Field(description="default: the first configured KG.")] = None,
        index: Annotated[
            Literal["dense", "hierarchy", "all"],
            Field(
                description="dense: MiniLM + static entity "
                "vectors (rerank); hierarchy: Louvain communities (beam_search); all: both."
            ),
        ] = "all",
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, IndexStatus]:
        """Build (or load from the on-disk cache) the indexes the strategy tools need, waiting for
        it with progress. Minutes on a 100k-triple KG; cached on disk, so later servers start at
        once."""
        k = runtime.kg(kg.strip() if kg and kg.strip() else next(iter(runtime.kgs)))
        needs = {
            "dense": ("dense", "static"),
            "hierarchy": ("hierarchy",),
            "all": ("dense", "static", "hierarchy"),
        }[index]
        t0 = time.perf_counter()
        res = await services.resources(k, needs, progress=progress_to(ctx), build=True)
        levels: dict[str, int] = {}
        if "hierarchy" in needs:
            from tot_mcp.strategies.deep_graphrag import hierarchy_for

            levels = hierarchy_for(res, build=False).levels
        status = IndexStatus(
            kg=k.name,
            index=index,
            entities=res.graph.n,
            levels=levels,
            seconds=round(time.perf_counter() - t0, 2),
            cache_dir=str(services.cache_dir),
        )
        return tool_result(
            status,
            f"{index} index of {k.name} ready ({status.entities} entities, {status.seconds}s)",
        )
