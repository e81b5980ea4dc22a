"""Query router: analyse a query, then send it to the retrieval family that suits it.

The analysis (complexity 0–1, relationship intensity 0–1, reasoning need, entity count, query type) comes from the
LLM as JSON (``prompts/router_analyse.txt``) or, when there is no LLM or its JSON is bad, from
:class:`strategies.judges.RuleQueryAnalyser`. Routing rule (the adaptive-RAG routers' thresholds):

* complexity < 0.4 → ``traditional``: "dual-level" lexical retrieval (entity level: the KG's own entity linker;
  topic level: BM25 over entity descriptors) plus dense retrieval (MiniLM + faiss over the same descriptors),
  merged round-robin with de-duplication;
* complexity > 0.7 or relationship intensity > 0.7 → ``graph``: by query type, multi-hop traversal from the linked
  entities, path finding between them, or subgraph extraction around them, ranked by graph relevance (the path
  scorer of :mod:`strategies.retrieval_common`);
* otherwise → ``combined``: half of each, merged round-robin.

Route statistics live in a :class:`RouteStats` owned by the runtime's retrieval service (not module state).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from kg_adapters.base import KnowledgeGraph
from strategies.judges import LLMQueryAnalyser, QueryAnalysis, RuleQueryAnalyser
from strategies.retrieval_common import (
    GraphResources,
    LocalGraph,
    Reached,
    RetrievedEntity,
    check_query,
    expand_frontier,
    linked_seeds,
    rank_answers,
    to_retrieved,
)

Route = Literal["traditional", "graph", "combined"]
LOW_COMPLEXITY = 0.4
HIGH = 0.7


def choose_route(a: QueryAnalysis) -> Route:
    if a.complexity > HIGH or a.relationship_intensity > HIGH:
        return "graph"
    if a.complexity < LOW_COMPLEXITY:
        return "traditional"
    return "combined"


class RouteStatsSnapshot(BaseModel):
    total: int
    routes: dict[str, int]
    query_types: dict[str, int]
    analysis_sources: dict[str, int]
    fallbacks: int = Field(description="Analyses where the LLM failed or returned bad JSON and the rules were used")
    median_seconds: dict[str, float]


class RouteStats:
    """Counts and latencies per route for one runtime. Thread-safe."""

    def __init__(self, window: int = 1000) -> None:
        self._lock = threading.Lock()
        self._routes: dict[str, int] = {}
        self._types: dict[str, int] = {}
        self._sources: dict[str, int] = {}
        self._fallbacks = 0
        self._seconds: dict[str, deque[float]] = {}
        self._window = window

    def record(self, route: str, analysis: QueryAnalysis, seconds: float) -> None:
        with self._lock:
            self._routes[route] = self._routes.get(route, 0) + 1
            self._types[analysis.query_type] = self._types.get(analysis.query_type, 0) + 1
            self._sources[analysis.source] = self._sources.get(analysis.source, 0) + 1
            self._fallbacks += analysis.fallback_reason is not None
            self._seconds.setdefault(route, deque(maxlen=self._window)).append(seconds)

    def snapshot(self) -> RouteStatsSnapshot:
        with self._lock:
            return RouteStatsSnapshot(
                total=sum(self._routes.values()),
                routes=dict(self._routes),
                query_types=dict(self._types),
                analysis_sources=dict(self._sources),
                fallbacks=self._fallbacks,
                median_seconds={k: round(statistics.median(v), 4) for k, v in self._seconds.items() if v},
            )


class RouterResult(BaseModel):
    query: str
    kg: str
    analysis: QueryAnalysis
    route: Route
    results: list[RetrievedEntity]
    parts: dict[str, int] = Field(description="How many results each retriever contributed before merging")
    seeds: list[str]
    seconds: float


def round_robin(lists: Sequence[Iterable[RetrievedEntity]], k: int) -> list[RetrievedEntity]:
    """Interleave ranked lists (first of each, then second of each, ...) dropping IDs already taken."""
    iters = [iter(x) for x in lists]
    out: list[RetrievedEntity] = []
    seen: set[str] = set()
    while iters and len(out) < k:
        alive = []
        for it in iters:
            for item in it:
                if item.id not in seen:
                    seen.add(item.id)
                    out.append(item)
                    alive.append(it)
                    break
            if len(out) >= k:
                break
        iters = alive
    return out


def _entity(graph: LocalGraph, i: int, score: float, source: str) -> RetrievedEntity:
    return RetrievedEntity(id=graph.entity_id(i), label=graph.label(i), score=round(float(score), 6), source=source)


# -- traditional -------------------------------------------------------------------------------------------------
async def traditional_retrieval(
    kg: KnowledgeGraph, res: GraphResources, query: str, k: int, seeds: list[tuple[int, float]] | None = None,
    dense: bool = True,
) -> tuple[list[RetrievedEntity], dict[str, int]]:
    graph = res.graph
    seeds = seeds if seeds is not None else await linked_seeds(kg, graph, query)
    entity_level = [_entity(graph, i, s, "entity") for i, s in seeds]
    topic_level = [_entity(graph, i, s, "bm25") for i, s in res.bm25().search(query, k)]
    lists = [entity_level, topic_level]
    parts = {"entity": len(entity_level), "bm25": len(topic_level)}
    if dense:
        q = res.service.embedder().encode_one(query)
        dense_hits = [_entity(graph, i, s, "dense") for i, s in res.dense().search(q, k)]
        lists.append(dense_hits)
        parts["dense"] = len(dense_hits)
    return round_robin(lists, k), parts


# -- graph -------------------------------------------------------------------------------------------------------
def _shortest_path(graph: LocalGraph, a: int, b: int, max_depth: int = 4, budget: int = 50_000) -> list[int] | None:
    """Undirected BFS from ``a`` to ``b`` (parent pointers), bounded in depth and visited nodes."""
    if a == b:
        return [a]
    parent = {a: -1}
    layer = [a]
    for _ in range(max_depth):
        nxt = []
        for u in layer:
            for _, _, v in graph.neighbours(u):
                if v in parent:
                    continue
                parent[v] = u
                if v == b:
                    path = [v]
                    while parent[path[-1]] != -1:
                        path.append(parent[path[-1]])
                    return path[::-1]
                nxt.append(v)
                if len(parent) > budget:
                    return None
        layer = nxt
    return None


async def graph_retrieval(
    kg: KnowledgeGraph, res: GraphResources, query: str, analysis: QueryAnalysis, k: int,
    seeds: list[tuple[int, float]] | None = None,
) -> tuple[list[RetrievedEntity], dict[str, int]]:
    graph = res.graph
    seeds = seeds if seeds is not None else await linked_seeds(kg, graph, query)
    if not seeds:  # nothing links: start from the lexical search, as ARK does
        seeds = res.bm25().search(query, 3)
    labels = [graph.label(i) for i, _ in seeds]
    relevance = res.relevance()
    scorer = relevance.scorer(query, labels)
    seed_set = {i for i, _ in seeds}
    reached = {i: Reached(i, 0.0, 0, (), frozenset(), "graph") for i, _ in seeds}
    parts: dict[str, int] = {}
    lists: list[list[RetrievedEntity]] = []
    if analysis.query_type == "path" and len(seeds) >= 2:
        path_nodes: dict[int, None] = {}
        for x in range(len(seeds)):
            for y in range(x + 1, min(len(seeds), 4)):
                p = _shortest_path(graph, seeds[x][0], seeds[y][0])
                for i in p or []:
                    path_nodes.setdefault(i, None)
        on_path = [_entity(graph, i, 1.0, "path") for i in path_nodes if i not in seed_set]
        parts["path"] = len(on_path)
        lists.append(on_path)
    hops = 1 if analysis.query_type == "subgraph" else max(1, min(3, relevance.estimate_hops(query, labels)))
    frontier = list(reached.values())
    for _ in range(hops):
        frontier = expand_frontier(graph, frontier, scorer, reached, cache=res.neighbour_cache, avoid=seed_set)[:300]
        if not frontier:
            break
    if analysis.query_type == "subgraph":  # the whole neighbourhood, most relevant relations first
        ranked = sorted((r for r in reached.values() if r.node not in seed_set), key=lambda r: -r.score)
    else:  # multi-hop: answers sit at the estimated depth; shallower nodes rank after them
        ranked = sorted((r for r in reached.values() if r.node not in seed_set),
                        key=lambda r: (r.depth != hops, -r.score))
    traversal = [to_retrieved(graph, r, "graph") for r in ranked[: k * 2]]
    parts["traversal"] = len(traversal)
    lists.append(traversal)
    merged = round_robin(lists, k) if len(lists) > 1 else traversal[:k]
    return merged, parts


# -- the router --------------------------------------------------------------------------------------------------
async def route_query(
    kg: KnowledgeGraph,
    query: str,
    res: GraphResources,
    analyser: LLMQueryAnalyser | RuleQueryAnalyser | None = None,
    top_k: int = 20,
    stats: RouteStats | None = None,
    force_route: Route | None = None,
) -> RouterResult:
    """Analyse, route, retrieve. ``stats`` (default: the service's) records the route taken."""
    t0 = time.perf_counter()
    query = check_query(query, kg.limits.max_query_chars)
    graph = res.graph
    seeds = await linked_seeds(kg, graph, query)
    labels = [graph.label(i) for i, _ in seeds]
    analyser = analyser or RuleQueryAnalyser(res.relevance())
    if isinstance(analyser, LLMQueryAnalyser):
        analysis = await analyser.analyse(query, labels, len(seeds))
    else:
        analysis = analyser.analyse(query, labels, len(seeds))
    route = force_route or choose_route(analysis)
    if route == "traditional":
        results, parts = await traditional_retrieval(kg, res, query, top_k, seeds)
    elif route == "graph":
        results, parts = await graph_retrieval(kg, res, query, analysis, top_k, seeds)
    else:
        half = max(1, (top_k + 1) // 2)
        trad, p1 = await traditional_retrieval(kg, res, query, half, seeds)
        grp, p2 = await graph_retrieval(kg, res, query, analysis, top_k, seeds)
        results = round_robin([grp, trad], top_k)
        parts = {**{f"traditional.{k}": v for k, v in p1.items()}, **{f"graph.{k}": v for k, v in p2.items()}}
    seed_ids = {graph.entity_id(i) for i, _ in seeds}
    results = sorted(results, key=lambda e: e.id in seed_ids)  # stable: keeps the merge order, seeds last
    seconds = time.perf_counter() - t0
    (stats if stats is not None else res.service.route_stats).record(route, analysis, seconds)
    return RouterResult(
        query=query, kg=kg.name, analysis=analysis, route=route, results=results[:top_k], parts=parts,
        seeds=sorted(seed_ids), seconds=round(seconds, 4),
    )


__all__ = [
    "RouteStats", "RouteStatsSnapshot", "RouterResult", "choose_route", "graph_retrieval", "rank_answers",
    "round_robin", "route_query", "traditional_retrieval",
]
