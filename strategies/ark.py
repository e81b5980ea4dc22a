"""ARK: adaptive BFS/DFS retrieval with a per-depth judge (after arXiv 2601.13969, "ARK").

Start with a *global* lexical search (BM25 over every entity's label + description + verbalised neighbourhood),
then at each depth ask a judge whether the results are ``sufficient``, need ``expand`` (one hop out of the current
frontier, optionally restricted to some relation types or to entity/literal nodes) or should ``stop``. Variants
(all in :class:`ArkConfig`): relevance filtering of the frontier (only nodes within ``relevance_margin`` of the best
are expanded), early stopping (the judge is skipped below ``min_results`` — expand — and above ``max_results`` —
stop), a neighbour cache, a minimum depth, and an unusable judge answer treated as ``stop`` and recorded.

Also here: the fixed-depth baselines ``bfs`` (breadth-first, depth 2) and ``dfs`` (depth-first, depth 5) over the
same roots and the same path scorer, so the side-by-side benchmark isolates the control strategy.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

from pydantic import BaseModel, Field

from kg_adapters.base import KnowledgeGraph
from kg_adapters.models import Direction
from strategies.judges import ArkDecision, ArkJudge, OfflineArkJudge
from strategies.retrieval_common import (
    GraphResources,
    LocalGraph,
    NeighbourCache,
    Reached,
    RetrievedEntity,
    check_query,
    expand_frontier,
    rank_answers,
    to_retrieved,
)

Progress = Callable[[float, float | None, str], Awaitable[None]]


class ArkConfig(BaseModel):
    initial_k: int = Field(default=20, ge=1, le=500, description="BM25 results at depth 0")
    max_depth: int = Field(default=3, ge=0, le=6)
    min_depth: int = Field(default=0, ge=0, le=6, description="Expand at least this deep before asking the judge")
    relevance_margin: float = Field(
        default=0.15, ge=0.0, description="Expand only frontier nodes scoring within this of the frontier's best"
    )
    max_frontier: int = Field(default=30, ge=1, le=1000, description="At most this many nodes expanded per depth")
    min_results: int = Field(default=1, ge=0, description="Below this many results: expand without asking the judge")
    max_results: int = Field(default=5000, ge=1, description="Above this many results: stop without asking the judge")
    cache_neighbours: bool = True
    node_kind: str | None = Field(default=None, description="'entity' or 'literal': only reach nodes of that kind")
    top_k: int = Field(default=20, ge=1, le=1000, description="Results returned")


class ArkStep(BaseModel):
    depth: int
    decision: str
    result_count: int
    judged: bool = Field(description="False when a rule decided (min depth, early stopping, max depth)")
    valid: bool = True
    reason: str = ""
    relations: list[str] | None = None
    raw: str | None = Field(default=None, description="The judge's answer when it was unusable")
    frontier: int = 0


class ArkResult(BaseModel):
    query: str
    kg: str
    judge: str
    results: list[RetrievedEntity]
    history: list[ArkStep]
    seeds: list[str] = Field(description="Depth-0 roots the traversal started from")
    depth_reached: int
    neighbour_cache: dict[str, int] = Field(default_factory=dict)
    seconds: float


def _root_score(bm25_norm: float) -> float:
    """Roots enter below a relevant one-hop path; weaker lexical hits enter lower still."""
    return 0.3 * (bm25_norm - 1.0)


def lexical_roots(res: GraphResources, query: str, k: int) -> tuple[list[Reached], list[str]]:
    """Depth-0 results from BM25, and the root labels that occur in the query (the topic, excluded from spans)."""
    graph = res.graph
    hits = res.bm25().search(query, k)
    low = query.replace("_", " ").casefold()
    def named(i: int) -> bool:
        lab = graph.label(i).replace("_", " ").casefold()
        return len(lab) > 2 and lab in low

    # a root whose whole label occurs in the query is the topic: it enters at the top, other hits below it
    roots = [Reached(i, 0.0 if named(i) else _root_score(s) - 0.2, 0, (), frozenset(), "bm25") for i, s in hits]
    roots.sort(key=lambda r: -r.score)
    topic = [graph.label(r.node) for r in roots if named(r.node)]
    return roots, topic


def _frontier(cands: Sequence[Reached], margin: float, cap: int) -> list[Reached]:
    if not cands:
        return []
    best = max(c.score for c in cands)
    return sorted((c for c in cands if c.score >= best - margin), key=lambda c: -c.score)[:cap]


def _relations_at(graph: LocalGraph, frontier: Sequence[Reached], cache: NeighbourCache) -> list[str]:
    seen: dict[str, None] = {}
    for f in frontier:
        for r, d, targets in cache.groups(graph, f.node):
            if targets:
                seen[graph.rel_labels[r] + ("" if d is Direction.forward else " (inverse)")] = None
    return list(seen)


def _relation_filter(graph: LocalGraph, names: list[str] | None) -> set[int] | None:
    """Judge-named relations → indices, by ID, label or local name; unknown names are ignored (no filter if none
    is known, so a sloppy judge cannot starve the search)."""
    if not names:
        return None
    wanted = {n.strip().casefold().removesuffix(" (inverse)") for n in names}
    idx = {
        r for r in range(len(graph.rel_labels))
        if graph.rel_labels[r].casefold() in wanted or graph.rel_ids[r].casefold() in wanted
        or graph.rel_ids[r].split(":", 1)[1].casefold() in wanted
    }
    return idx or None


async def ark_search(
    kg: KnowledgeGraph,
    query: str,
    res: GraphResources,
    judge: ArkJudge | None = None,
    config: ArkConfig | None = None,
    progress: Progress | None = None,
) -> ArkResult:
    """Run ARK on one query. ``judge`` defaults to the offline judge."""
    t0 = time.perf_counter()
    query = check_query(query, kg.limits.max_query_chars)
    cfg = config or ArkConfig()
    graph = res.graph
    roots, topic = lexical_roots(res, query, cfg.initial_k)
    relevance = res.relevance()
    scorer = relevance.scorer(query, topic)
    judge = judge or OfflineArkJudge(relevance, topic)
    cache = res.neighbour_cache if cfg.cache_neighbours else NeighbourCache(enabled=False)
    hits0, miss0 = cache.hits, cache.misses
    reached: dict[int, Reached] = {r.node: r for r in roots}
    seeds: set[int] = set()  # roots actually expanded: never walked back through
    last = roots
    history: list[ArkStep] = []
    depth = 0
    while True:
        ranked = [to_retrieved(graph, r) for r in sorted(reached.values(), key=lambda x: -x.score)[: cfg.top_k]]
        frontier = _frontier(last, cfg.relevance_margin, cfg.max_frontier)
        relations = _relations_at(graph, frontier, cache)
        n = len(reached)
        if depth < cfg.min_depth:
            dec, judged = ArkDecision(decision="expand", reason=f"below min depth {cfg.min_depth}"), False
        elif n < cfg.min_results:
            dec, judged = ArkDecision(decision="expand", reason=f"{n} < min_results {cfg.min_results}"), False
        elif n > cfg.max_results:
            dec, judged = ArkDecision(decision="stop", reason=f"{n} > max_results {cfg.max_results}"), False
        elif depth >= cfg.max_depth:
            dec, judged = ArkDecision(decision="stop", reason=f"max depth {cfg.max_depth}"), False
        else:
            dec, judged = await judge.judge(query, depth, ranked, relations), True
        if dec.decision == "expand" and (not frontier or depth >= cfg.max_depth):
            dec = ArkDecision(decision="stop", reason="nothing to expand" if not frontier else "max depth reached",
                              valid=dec.valid)
            judged = False
        history.append(ArkStep(depth=depth, decision=dec.decision, result_count=n, judged=judged, valid=dec.valid,
                               reason=dec.reason, relations=dec.relations, raw=dec.raw, frontier=len(frontier)))
        if progress is not None:
            await progress(depth + 1, cfg.max_depth + 1, f"depth {depth}: {dec.decision} ({n} results)")
        if dec.decision != "expand":
            break
        if depth == 0:
            seeds = {f.node for f in frontier}
        last = expand_frontier(
            graph, frontier, scorer, reached, cache=cache, avoid=seeds,
            relation_filter=_relation_filter(graph, dec.relations), node_kind=cfg.node_kind,
        )
        depth += 1
    final = [to_retrieved(graph, r) for r in sorted(reached.values(), key=lambda x: -x.score)]
    seed_ids = {graph.entity_id(s) for s in seeds}
    return ArkResult(
        query=query,
        kg=kg.name,
        judge=getattr(judge, "name", type(judge).__name__),
        results=rank_answers(final, seed_ids)[: cfg.top_k],
        history=history,
        seeds=[graph.entity_id(r.node) for r in roots],
        depth_reached=depth,
        neighbour_cache={"hits": cache.hits - hits0, "misses": cache.misses - miss0},
        seconds=round(time.perf_counter() - t0, 4),
    )


# -- fixed-depth baselines ---------------------------------------------------------------------------------------
class FixedTraversalResult(BaseModel):
    query: str
    kg: str
    method: str
    results: list[RetrievedEntity]
    seeds: list[str]
    visited: int
    seconds: float


async def fixed_bfs(
    kg: KnowledgeGraph, query: str, res: GraphResources, depth: int = 2, initial_k: int = 20,
    relevance_margin: float = 0.15, max_frontier: int = 30, top_k: int = 20,
) -> FixedTraversalResult:
    """Breadth-first to a fixed depth from the same roots as ARK, no judge."""
    t0 = time.perf_counter()
    query = check_query(query, kg.limits.max_query_chars)
    graph = res.graph
    roots, topic = lexical_roots(res, query, initial_k)
    scorer = res.relevance().scorer(query, topic)
    reached = {r.node: r for r in roots}
    frontier = _frontier(roots, relevance_margin, max_frontier)
    seeds = {f.node for f in frontier}
    for _ in range(depth):
        if not frontier:
            break
        nxt = expand_frontier(graph, frontier, scorer, reached, cache=res.neighbour_cache, avoid=seeds)
        frontier = nxt[: max_frontier * 20]
    final = [to_retrieved(graph, r) for r in reached.values()]
    return FixedTraversalResult(
        query=query, kg=kg.name, method=f"bfs-{depth}",
        results=rank_answers(final, {graph.entity_id(s) for s in seeds})[:top_k],
        seeds=[graph.entity_id(r.node) for r in roots], visited=len(reached),
        seconds=round(time.perf_counter() - t0, 4),
    )


async def fixed_dfs(
    kg: KnowledgeGraph, query: str, res: GraphResources, depth: int = 5, initial_k: int = 20,
    relevance_margin: float = 0.15, max_frontier: int = 30, budget: int = 2000, top_k: int = 20,
) -> FixedTraversalResult:
    """Depth-first to a fixed depth: from each root, follow the best-scoring relation first, down to ``depth``,
    visiting at most ``budget`` nodes overall."""
    t0 = time.perf_counter()
    query = check_query(query, kg.limits.max_query_chars)
    graph = res.graph
    roots, topic = lexical_roots(res, query, initial_k)
    scorer = res.relevance().scorer(query, topic)
    cache = res.neighbour_cache
    reached = {r.node: r for r in roots}
    starts = _frontier(roots, relevance_margin, max_frontier)
    seeds = {f.node for f in starts}
    visited = 0
    stack: list[Reached] = list(reversed(starts))
    while stack and visited < budget:
        cur = stack.pop()
        visited += 1
        if cur.depth >= depth:
            continue
        children: list[Reached] = []
        for r, d, targets in cache.groups(graph, cur.node):
            gain, used = scorer.hop(r, cur.used)
            for j in targets:
                if j in seeds:
                    continue
                old = reached.get(j)
                score = cur.score + gain
                if old is not None and old.score >= score:
                    continue
                rec = Reached(j, score, cur.depth + 1, cur.path + ((r, d, j),), used)
                reached[j] = rec
                children.append(rec)
        children.sort(key=lambda c: c.score)  # best popped first
        stack.extend(children)
    final = [to_retrieved(graph, r) for r in reached.values()]
    return FixedTraversalResult(
        query=query, kg=kg.name, method=f"dfs-{depth}",
        results=rank_answers(final, {graph.entity_id(s) for s in seeds})[:top_k],
        seeds=[graph.entity_id(r.node) for r in roots], visited=visited,
        seconds=round(time.perf_counter() - t0, 4),
    )
