"""Server-side retrieval strategies as MCP tools: ARK, the query router (+ its statistics), Deep GraphRAG beam
search, adaptive rerank, and ``build_index`` to build their indexes ahead of time.

The tools only map MCP to :mod:`strategies` (ark, router, deep_graphrag, rerank). Their per-runtime state — the
indexes of each KG and the route statistics — lives in one ``RetrievalService`` created here, in ``register``,
and sharing the runtime's embedder; on-disk caches go to ``[retrieval] cache_dir`` of the config (default
``$TOT_MCP_CACHE_DIR`` or ``$XDG_CACHE_HOME/tot-mcp``).
"""

from __future__ import annotations

from typing import Annotated, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from kg_adapters.base import KnowledgeGraph
from strategies.ark import ArkConfig, ArkResult, ark_search
from strategies.deep_graphrag import BeamResult, HierarchyParams, hierarchy_for, topic_anchors
from strategies.deep_graphrag import beam_search as _beam
from strategies.judges import LLMArkJudge, LLMQueryAnalyser, RuleQueryAnalyser
from strategies.rerank import RerankConfig, RerankResult, adaptive_rerank
from strategies.retrieval_common import IndexNotBuilt, RetrievalService, RetrievedEntity
from strategies.router import RouterResult, RouteStatsSnapshot
from strategies.router import route_query as _route_query

from ..results import tool_result
from ..runtime import Runtime

# Below this many entities an index missing from the cache is built on the spot (seconds); above, the tool
# says to call build_index first (minutes), so a request never hangs unannounced.
AUTO_BUILD_MAX_ENTITIES = 5000

KgArg = Annotated[str | None, Field(description="Name of the KG to search; default: the first configured KG.")]
Query = Annotated[str, Field(description="The question, natural language; [brackets] mark entity mentions.")]


class IndexStatus(BaseModel):
    kg: str
    index: str
    entities: int
    levels: dict[str, int] = Field(default_factory=dict)
    seconds: float
    cache_dir: str


def _lines(title: str, results: list[RetrievedEntity], extra: list[str] | None = None) -> str:
    out = [title, *(extra or [])]
    for k, r in enumerate(results, 1):
        via = ""
        if r.path:
            via = "  via " + " → ".join(s.label + ("" if s.direction.value == "forward" else "⁻¹") for s in r.path)
        out.append(f"{k}. {r.label} [{r.id}] {r.score:.3f}{via}")
    if not results:
        out.append("(no results)")
    return "\n".join(out)


def _settings(runtime: Runtime) -> dict:
    """``[retrieval]`` of the config when the config schema has it (``cache_dir``, ``cross_encoder_path``), with
    the environment (``TOT_MCP_CACHE_DIR``, ``TOT_MCP_CROSS_ENCODER``) as the fallback."""
    import os

    raw = runtime.config.get("retrieval") if hasattr(runtime.config, "get") else None
    cfg = dict(raw.model_dump() if hasattr(raw, "model_dump") else raw or {})
    if not cfg.get("cross_encoder_path") and os.environ.get("TOT_MCP_CROSS_ENCODER"):
        cfg["cross_encoder_path"] = os.environ["TOT_MCP_CROSS_ENCODER"]
    return cfg


def register(server: MCPServer, runtime: Runtime) -> None:
    retrieval_cfg = _settings(runtime)
    service = RetrievalService(embedder_provider=runtime.embedder, cache_dir=retrieval_cfg.get("cache_dir"))
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    default_kg = next(iter(runtime.kgs))

    def pick(kg: str | None) -> KnowledgeGraph:
        return runtime.kg(kg.strip()) if kg and kg.strip() else runtime.kg(default_kg)

    async def resources(kg: KnowledgeGraph):
        await runtime.aembedder()
        return await anyio.to_thread.run_sync(lambda: service.resources(kg))

    def progress_cb(ctx: Context | None):
        if ctx is None:
            return None

        async def report(done: float, total: float | None, message: str) -> None:
            await ctx.report_progress(done, total, message)

        return report

    async def ensure_dense(res, ctx: Context | None, build: bool | None) -> None:
        small = res.graph.n <= AUTO_BUILD_MAX_ENTITIES
        if res.dense_ready():
            await anyio.to_thread.run_sync(lambda: res.dense(build=False))
            return
        if build is False or (build is None and not small):
            raise IndexNotBuilt(f"the dense entity index of KG {res.graph.name!r} ({res.graph.n} entities) is not "
                                "built yet; call build_index first (or pass build=true and wait)")
        if ctx is not None:
            await ctx.report_progress(0, 1, f"embedding {res.graph.n} entity descriptors")
        await anyio.to_thread.run_sync(lambda: res.dense(build=True))

    # -- ARK ------------------------------------------------------------------------------------------------

    @server.tool(title="ARK adaptive retrieval (lexical search, then judged BFS expansion)", annotations=read_only)
    async def ark_retrieve(
        query: Query,
        kg: KgArg = None,
        judge: Annotated[Literal["offline", "llm"], Field(description="Who decides sufficient/expand/stop per "
                                                                       "depth: the offline judge or the LLM.")] = "offline",
        max_depth: Annotated[int, Field(ge=0, le=6)] = 3,
        min_depth: Annotated[int, Field(ge=0, le=6, description="Expand at least this deep first.")] = 0,
        relevance_margin: Annotated[float, Field(ge=0, description="Expand only frontier nodes within this of the "
                                                                   "best path score.")] = 0.15,
        min_results: Annotated[int, Field(ge=0, description="Below this many results, expand without judging.")] = 1,
        max_results: Annotated[int, Field(ge=1, description="Above this many results, stop without judging.")] = 5000,
        node_kind: Annotated[Literal["entity", "literal"] | None, Field(description="Only reach nodes of this "
                                                                                    "kind.")] = None,
        top_k: Annotated[int, Field(ge=1, le=200)] = 20,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ArkResult]:
        """Retrieve entities for a question with ARK: BM25 over entity descriptors, then per depth a judge
        decides whether the results suffice, need one more hop, or should stop. Returns the ranked results
        (with the relation path that reached each) and the decision history."""
        k = pick(kg)
        res = await resources(k)
        judge_impl = LLMArkJudge(runtime.llm(ctx)) if judge == "llm" else None
        cfg = ArkConfig(max_depth=max_depth, min_depth=min_depth, relevance_margin=relevance_margin,
                        min_results=min_results, max_results=max_results, node_kind=node_kind, top_k=top_k)
        out = await ark_search(k, query, res, judge=judge_impl, config=cfg, progress=progress_cb(ctx))
        hist = "decisions: " + "; ".join(f"d{h.depth} {h.decision} ({h.result_count})" + ("" if h.valid else
                                                                                          " [invalid judge answer]")
                                         for h in out.history)
        return tool_result(out, _lines(f"ARK results for {out.query!r} (judge: {out.judge})", out.results, [hist]))

    # -- router ---------------------------------------------------------------------------------------------

    @server.tool(title="Route a query to traditional, graph or combined retrieval", annotations=read_only)
    async def route_query(
        query: Query,
        kg: KgArg = None,
        analyser: Annotated[Literal["rules", "llm"], Field(description="Query analysis by rules or by the LLM (falls "
                                                                       "back to rules on bad JSON).")] = "rules",
        route: Annotated[Literal["traditional", "graph", "combined"] | None,
                         Field(description="Force a route instead of choosing one from the analysis.")] = None,
        top_k: Annotated[int, Field(ge=1, le=200)] = 20,
        build: Annotated[bool | None, Field(description="Build the dense index if missing (default: only for small "
                                                        "KGs).")] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, RouterResult]:
        """Analyse the query (complexity, relationship intensity, reasoning need, entity count) and retrieve
        with the route it calls for: complexity < 0.4 → traditional (lexical + dense); > 0.7 or relationship
        intensity > 0.7 → graph (multi-hop / path / subgraph); else both, merged."""
        k = pick(kg)
        res = await resources(k)
        rules = RuleQueryAnalyser(await anyio.to_thread.run_sync(res.relevance))
        impl = LLMQueryAnalyser(runtime.llm(ctx), rules) if analyser == "llm" else rules
        if route != "graph":
            try:
                await ensure_dense(res, ctx, build)
            except IndexNotBuilt:
                if route is not None:
                    raise
                route = "graph"  # documented fallback: without the dense index only graph retrieval can run
        out = await _route_query(k, query, res, analyser=impl, top_k=top_k, stats=service.route_stats,
                                 force_route=route)
        a = out.analysis
        head = (f"route: {out.route} (complexity {a.complexity:.2f}, relationship intensity "
                f"{a.relationship_intensity:.2f}, {a.query_type}, analysis by {a.source}"
                + (f"; fallback: {a.fallback_reason}" if a.fallback_reason else "") + ")")
        return tool_result(out, _lines(f"Routed results for {out.query!r}", out.results, [head]))

    @server.tool(title="Router statistics of this server", annotations=read_only)
    async def router_stats() -> Annotated[CallToolResult, RouteStatsSnapshot]:
        """How many queries took each route since the server started, analysis sources, fallbacks, latencies."""
        snap = service.route_stats.snapshot()
        text = f"{snap.total} routed: " + ", ".join(f"{r} {n}" for r, n in snap.routes.items()) + \
            f"; rule fallbacks {snap.fallbacks}"
        return tool_result(snap, text)

    # -- Deep GraphRAG --------------------------------------------------------------------------------------

    async def hierarchy(res, ctx: Context | None, build: bool | None):
        small = res.graph.n <= AUTO_BUILD_MAX_ENTITIES
        try:
            return await anyio.to_thread.run_sync(lambda: hierarchy_for(res, build=False))
        except IndexNotBuilt:
            if build is False or (build is None and not small):
                raise
        if ctx is not None:
            await ctx.report_progress(0, 1, "building the community hierarchy")
        return await anyio.to_thread.run_sync(lambda: hierarchy_for(res, build=True))

    @server.tool(title="Deep GraphRAG hierarchical beam search", annotations=read_only)
    async def beam_search(
        query: Query,
        kg: KgArg = None,
        beam: Annotated[int, Field(ge=1, le=20, description="Communities kept per level.")] = 3,
        top_k: Annotated[int, Field(ge=1, le=100, description="Entities returned.")] = 10,
        anchor: Annotated[bool, Field(description="Enter the communities of the entities the query names first "
                                                  "(false: descend by cosine only).")] = True,
        build: Annotated[bool | None, Field(description="Build the hierarchy if missing (default: only for small "
                                                        "KGs; else call build_index).")] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, BeamResult]:
        """Find entities for a query by descending the KG's Louvain community hierarchy: the best L0
        communities, then their best sub-communities, then the best entities inside them."""
        k = pick(kg)
        res = await resources(k)
        h = await hierarchy(res, ctx, build)
        anchors = await topic_anchors(k, res, query) if anchor else []
        out = await anyio.to_thread.run_sync(lambda: _beam(k, query, res, h, beam=beam, top_k=top_k,
                                                           anchors=anchors))
        comm = "communities: " + " | ".join(f"L0#{c.id} {c.score:.2f}{'*' if c.anchored else ''}" for c in out.l0) \
            + " → " + " | ".join(f"L1#{c.id} {c.score:.2f}{'*' if c.anchored else ''}" for c in out.l1) \
            + (" (* anchored on a named entity)" if anchors else "")
        return tool_result(out, _lines(f"Beam search for {out.query!r}", list(out.results), [comm]))

    # -- rerank ---------------------------------------------------------------------------------------------

    @server.tool(title="Adaptive multi-model dense retrieval with broaden/deepen rerank", annotations=read_only)
    async def rerank_retrieve(
        query: Query,
        kg: KgArg = None,
        top_k: Annotated[int, Field(ge=1, le=200)] = 10,
        max_iterations: Annotated[int, Field(ge=0, le=20)] = 4,
        quality_threshold: Annotated[float, Field(description="Stop when the top-3 mean score reaches this.")] = 0.6,
        exploration: Annotated[float, Field(ge=0, le=1, description="Initial probability of broadening.")] = 0.6,
        sigma: Annotated[float, Field(ge=0, le=1, description="Noise added to the query embedding.")] = 0.05,
        deepen: Annotated[Literal["auto", "llm", "bi-encoder"], Field(description="auto: cross-encoder if "
                          "[retrieval] cross_encoder_path is set, else bi-encoder; llm: the configured LLM.")] = "auto",
        build: Annotated[bool | None, Field(description="Build missing indexes (default: only for small KGs).")] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, RerankResult]:
        """Dense retrieval fused over two embedding models, refined while quality is low by broadening (noisy
        query re-search) or deepening (rescoring the top candidates)."""
        k = pick(kg)
        res = await resources(k)
        await ensure_dense(res, ctx, build)
        await anyio.to_thread.run_sync(res.static_dense)
        cfg = RerankConfig(top_k=top_k, max_iterations=max_iterations, quality_threshold=quality_threshold,
                           exploration=exploration, sigma=sigma,
                           cross_encoder_path=retrieval_cfg.get("cross_encoder_path") if deepen == "auto" else None)
        llm = runtime.llm(ctx) if deepen == "llm" else None
        out = await adaptive_rerank(k, query, res, cfg, llm=llm, progress=progress_cb(ctx))
        head = (f"stopped: {out.stopped} after {len(out.iterations)} iteration(s) "
                f"({', '.join(i.action for i in out.iterations) or 'none'}); deepened with {out.deepen_backend}")
        return tool_result(out, _lines(f"Reranked results for {out.query!r}", out.results, [head]))

    # -- index building -------------------------------------------------------------------------------------
    @server.tool(title="Build the retrieval indexes of a KG", annotations=ToolAnnotations(
        read_only_hint=False, idempotent_hint=True, open_world_hint=False))
    async def build_index(
        kg: KgArg = None,
        index: Annotated[Literal["dense", "hierarchy", "all"], Field(description="dense: MiniLM + static entity "
                         "vectors (router, rerank); hierarchy: Louvain communities (beam_search); all: both.")] = "all",
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, IndexStatus]:
        """Build (or load from the on-disk cache) the indexes the retrieval tools need. Minutes on a 100k-triple
        KG; cached, so later servers start instantly."""
        import time

        k = pick(kg)
        res = await resources(k)
        t0 = time.perf_counter()
        if ctx is not None:
            await ctx.report_progress(0, 3, "dense entity vectors")
        await anyio.to_thread.run_sync(lambda: res.dense(build=True))
        await anyio.to_thread.run_sync(res.static_dense)
        levels: dict[str, int] = {}
        if index in ("hierarchy", "all"):
            if ctx is not None:
                await ctx.report_progress(2, 3, "community hierarchy")
            h = await anyio.to_thread.run_sync(lambda: hierarchy_for(res, HierarchyParams(), build=True))
            levels = h.levels
        if ctx is not None:
            await ctx.report_progress(3, 3, "done")
        status = IndexStatus(kg=k.name, index=index, entities=res.graph.n, levels=levels,
                             seconds=round(time.perf_counter() - t0, 2), cache_dir=str(service.cache_dir))
        return tool_result(status, f"{index} index of {k.name} ready ({status.entities} entities, "
                                   f"{status.seconds}s){' levels ' + str(levels) if levels else ''}")

