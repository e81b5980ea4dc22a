"""ARK: adaptive BFS/DFS retrieval with a per-depth judge (after arXiv 2601.13969, "ARK").

Start with a *global* lexical search (BM25 over every entity's label + description + verbalised
neighbourhood), then at each depth ask a judge whether the results are ``sufficient``, need
``expand`` (one hop out of the current frontier, optionally restricted to some relation types or to
entity/literal nodes) or should ``stop``. Variants (all in :class:`ArkConfig`): relevance filtering
of the frontier (only nodes within ``relevance_margin`` of the best are expanded), early stopping
(the judge is skipped below ``min_results`` — expand — and above ``max_results`` — stop), a
neighbour cache, a minimum depth, and an unusable judge answer treated as ``stop`` and recorded.

Also here: the fixed-depth baselines ``bfs`` (breadth-first, depth 2) and ``dfs`` (depth-first,
depth 5) over the same roots and the same path scorer, so the side-by-side benchmark isolates the
control strategy.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from tot_mcp import prompts
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.models import Direction, backward
from tot_mcp.kg_adapters.text import bracketed_mentions
from tot_mcp.strategies.indexes import GraphResources
from tot_mcp.strategies.llm.base import LLM, LLMError
from tot_mcp.strategies.llm.replies import extract_json
from tot_mcp.kg_adapters.local_graph import LocalGraph
from tot_mcp.strategies.path_sets import path_sets, render_path_sets
from tot_mcp.strategies.registry import Call, Progress, Strategy
from tot_mcp.strategies.relevance import QueryRelevance
from tot_mcp.strategies.results import (
    RetrievedEntity,
    StrategyResult,
    check_query,
    render_ranked,
)
from tot_mcp.strategies.traversal import (
    NeighbourCache,
    Reached,
    expand_frontier,
    rank_answers,
    to_retrieved,
)

# -- the per-depth judge (LLM or offline) ----------------------------------------------------------
Decision = Literal["sufficient", "expand", "stop"]


class ArkDecision(BaseModel):
    decision: Decision
    relations: list[str] | None = Field(
        default=None, description="Relation labels/IDs to follow when expanding"
    )
    reason: str = ""
    valid: bool = Field(
        default=True, description="False when the judge's answer was unusable and 'stop' was forced"
    )
    raw: str | None = Field(
        default=None, description="The judge's raw answer when it was not usable"
    )


def parse_ark_decision(text: str) -> ArkDecision:
    """JSON ``{"decision": ...}`` or a bare keyword; anything else → ``stop`` marked invalid."""
    data = extract_json(text)
    if isinstance(data, dict):
        decision = str(data.get("decision", "")).strip().lower()
        if decision in ("sufficient", "expand", "stop"):
            rels = data.get("relations")
            rels = [str(r) for r in rels if str(r).strip()] if isinstance(rels, list) else None
            return ArkDecision(
                decision=decision, relations=rels or None, reason=str(data.get("reason", ""))[:500]
            )
    elif isinstance(text, str):
        words = re.findall(r"[a-z]+", text.strip().lower())
        if len(words) <= 3:
            hits = [w for w in words if w in ("sufficient", "expand", "stop")]
            if len(set(hits)) == 1:
                return ArkDecision(decision=hits[0])  # type: ignore[arg-type]
    shown = text if isinstance(text, str) else repr(text)
    return ArkDecision(
        decision="stop", valid=False, reason="judge answer unusable; stopped", raw=shown[:500]
    )


class LLMArkJudge:
    """Asks the LLM with ``prompts/ark_judge.txt``."""

    name = "llm"

    def __init__(self, llm: LLM, max_results_shown: int = 15) -> None:
        self.llm = llm
        self.max_results_shown = max_results_shown

    async def judge(
        self, query: str, depth: int, results: Sequence[RetrievedEntity], relations: Sequence[str]
    ) -> ArkDecision:
        lines = []
        for k, r in enumerate(results[: self.max_results_shown], 1):
            via = " → ".join(
                s.label if s.direction.value == "forward" else backward(s.label) for s in r.path
            )
            lines.append(f"{k}. {r.label}" + (f"  (via {via})" if via else ""))
        prompt = prompts.render(
            "ark_judge",
            query=query,
            depth=depth,
            relations=", ".join(relations[:40]) or "(none)",
            results="\n".join(lines) or "(no results)",
        )
        try:
            text = await self.llm.complete(prompt, max_tokens=200, temperature=0.0)
        except LLMError as e:
            return ArkDecision(
                decision="stop", valid=False, reason=f"judge LLM failed: {e}", raw=None
            )
        return parse_ark_decision(text)


class OfflineArkJudge:
    """No LLM: estimates how many relations the question mentions (span ↔ relation-phrase
    similarity, see :meth:`QueryRelevance.estimate_hops`) and expands until the traversal is that
    deep; ``stop`` when nothing is left to expand. ``sufficient`` once depth ≥ the estimate and
    there are results."""

    name = "offline"

    def __init__(
        self, relevance: QueryRelevance, topic_labels: Sequence[str] = (), max_hops: int = 3
    ) -> None:
        self.relevance = relevance
        self.topic_labels = list(topic_labels)
        self.max_hops = max_hops
        self._hops: dict[str, int] = {}

    def hops(self, query: str) -> int:
        if query not in self._hops:
            self._hops[query] = max(
                1, min(self.max_hops, self.relevance.estimate_hops(query, self.topic_labels))
            )
        return self._hops[query]

    async def judge(
        self, query: str, depth: int, results: Sequence[RetrievedEntity], relations: Sequence[str]
    ) -> ArkDecision:
        need = self.hops(query)
        if depth >= need and results:
            return ArkDecision(
                decision="sufficient", reason=f"query mentions ~{need} relation(s); depth {depth}"
            )
        if not relations:
            return ArkDecision(decision="stop", reason="nothing left to expand")
        return ArkDecision(
            decision="expand", reason=f"query mentions ~{need} relation(s); depth {depth}"
        )


class ArkConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    initial_k: int = Field(default=20, ge=1, le=500, description="BM25 results at depth 0")
    max_depth: int = Field(default=3, ge=0, le=6)
    min_depth: int = Field(
        default=0, ge=0, le=6, description="Expand at least this deep before asking the judge"
    )
    relevance_margin: float = Field(
        default=0.15,
        ge=0.0,
        description="Expand only frontier nodes scoring within this of the frontier's best",
    )
    max_frontier: int = Field(
        default=30, ge=1, le=1000, description="At most this many nodes expanded per depth"
    )
    min_results: int = Field(
        default=1, ge=0, description="Below this many results: expand without asking the judge"
    )
    max_results: int = Field(
        default=5000, ge=1, description="Above this many results: stop without asking the judge"
    )
    cache_neighbours: bool = True
    node_kind: str | None = Field(
        default=None, description="'entity' or 'literal': only reach nodes of that kind"
    )
    top_k: int = Field(default=20, ge=1, le=1000, description="Results returned")
    context_tokens: int = Field(
        default=1500, ge=100, le=20000, description="Budget of the context returned"
    )
    context_hops: int = Field(
        default=2,
        ge=0,
        le=3,
        description="Relations the context's paths reach past the judged depth (up to max_depth)",
    )
    context_margin: float = Field(
        default=0.5,
        ge=0.0,
        description="The context lists relation paths scoring within this of the best one",
    )


class ArkStep(BaseModel):
    depth: int
    decision: str
    result_count: int
    judged: bool = Field(
        description="False when a rule decided (min depth, early stopping, max depth)"
    )
    valid: bool = True
    reason: str = ""
    relations: list[str] | None = None
    raw: str | None = Field(default=None, description="The judge's answer when it was unusable")
    frontier: int = 0


class ArkResult(StrategyResult):
    judge: str
    history: list[ArkStep]
    seeds: list[str] = Field(description="Depth-0 roots the traversal started from")
    depth_reached: int
    neighbour_cache: dict[str, int] = Field(default_factory=dict)


def _root_score(bm25_norm: float) -> float:
    """Roots enter below a relevant one-hop path; weaker lexical hits enter lower still."""
    return 0.3 * (bm25_norm - 1.0)


def lexical_roots(res: GraphResources, query: str, k: int) -> tuple[list[Reached], list[str]]:
    """Depth-0 results from BM25, and the labels of the question's topic (excluded from the relation
    spans).

    The topic is what the question names: its ``[bracketed]`` mentions when it marks any, else every
    root whose label occurs in it and not inside a longer one's occurrence ("Kansas" inside "Kansas
    City Confidential"). The topic enters at the top, other hits below it."""
    graph = res.graph
    hits = res.bm25().search(query, k)
    low = _norm(query)
    marked = {_norm(m) for m in bracketed_mentions(query)}
    labels = {i: _norm(graph.label(i)) for i, _ in hits}
    if marked:
        topic_nodes = {i for i, lab in labels.items() if lab in marked}
    else:
        named = {i: lab for i, lab in labels.items() if len(lab) > 2 and lab in low}
        spans = {
            i: [(m.start(), m.end()) for m in re.finditer(re.escape(lab), low)]
            for i, lab in named.items()
        }
        topic_nodes = {
            i
            for i, lab in named.items()
            if any(
                not any(
                    len(named[j]) > len(lab) and a <= s0 and e0 <= b
                    for j in named
                    for a, b in spans[j]
                )
                for s0, e0 in spans[i]
            )
        }
    roots = [
        Reached(i, 0.0 if i in topic_nodes else _root_score(s) - 0.2, 0, (), frozenset(), "bm25")
        for i, s in hits
    ]
    roots.sort(key=lambda r: -r.score)
    return roots, [graph.label(r.node) for r in roots if r.node in topic_nodes]


def _norm(text: str) -> str:
    return " ".join(text.replace("_", " ").casefold().split())


#: the context when no entity of the KG matched the question at all: what the client can do next
NOTHING_MATCHED = (
    "(no entity of this KG matched the question; look its names up with search_entities and ask "
    "again with the exact name in [brackets])"
)


def _frontier(cands: Sequence[Reached], margin: float, cap: int) -> list[Reached]:
    best = max((c.score for c in cands), default=0.0)  # (no candidates: nothing passes, [] below)
    return sorted((c for c in cands if c.score >= best - margin), key=lambda c: -c.score)[:cap]


def _relations_at(
    graph: LocalGraph, frontier: Sequence[Reached], cache: NeighbourCache
) -> list[str]:
    names = (
        graph.rel_labels[r] if d is Direction.forward else backward(graph.rel_labels[r])
        for f in frontier
        for r, d, targets in cache.groups(graph, f.node)
        if targets
    )
    return list(dict.fromkeys(names))


def _relation_filter(graph: LocalGraph, names: list[str] | None) -> set[int] | None:
    """Judge-named relations → indices, by ID, label or local name; unknown names are ignored (no
    filter if none is known, so a sloppy judge cannot starve the search)."""
    if not names:
        return None
    wanted = {n.strip().casefold().removesuffix(backward("").casefold()) for n in names}
    idx = {
        r
        for r in range(len(graph.rel_labels))
        if graph.rel_labels[r].casefold() in wanted
        or graph.rel_ids[r].casefold() in wanted
        or graph.rel_ids[r].split(":", 1)[1].casefold() in wanted
    }
    return idx or None


async def ark_search(
    kg: Graph,
    query: str,
    res: GraphResources,
    judge: LLMArkJudge | OfflineArkJudge | None = None,
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
        ranked = [
            to_retrieved(graph, r)
            for r in sorted(reached.values(), key=lambda x: -x.score)[: cfg.top_k]
        ]
        frontier = _frontier(last, cfg.relevance_margin, cfg.max_frontier)
        relations = _relations_at(graph, frontier, cache)
        n = len(reached)
        if depth < cfg.min_depth:
            dec, judged = (
                ArkDecision(decision="expand", reason=f"below min depth {cfg.min_depth}"),
                False,
            )
        elif n < cfg.min_results:
            dec, judged = (
                ArkDecision(decision="expand", reason=f"{n} < min_results {cfg.min_results}"),
                False,
            )
        elif n > cfg.max_results:
            dec, judged = (
                ArkDecision(decision="stop", reason=f"{n} > max_results {cfg.max_results}"),
                False,
            )
        elif depth >= cfg.max_depth:
            dec, judged = ArkDecision(decision="stop", reason=f"max depth {cfg.max_depth}"), False
        else:
            dec, judged = await judge.judge(query, depth, ranked, relations), True
        if dec.decision == "expand" and (not frontier or depth >= cfg.max_depth):
            dec = ArkDecision(
                decision="stop",
                reason="nothing to expand" if not frontier else "max depth reached",
                valid=dec.valid,
            )
            judged = False
        history.append(
            ArkStep(
                depth=depth,
                result_count=n,
                judged=judged,
                frontier=len(frontier),
                **dec.model_dump(),
            )
        )
        if progress is not None:
            await progress(
                depth + 1, cfg.max_depth + 1, f"depth {depth}: {dec.decision} ({n} results)"
            )
        if dec.decision != "expand":
            break
        if depth == 0:
            seeds = {f.node for f in frontier}
        last = expand_frontier(
            graph,
            frontier,
            scorer,
            reached,
            cache=cache,
            avoid=seeds,
            relation_filter=_relation_filter(graph, dec.relations),
            node_kind=cfg.node_kind,
        )
        depth += 1
    final = [to_retrieved(graph, r) for r in sorted(reached.values(), key=lambda x: -x.score)]
    seed_ids = {graph.entity_id(s) for s in seeds}
    # the context hedges the judged depth: relation paths up to ``context_hops`` longer, ranked by
    # the same path score, listed while they score within ``context_margin`` of the best (a judge
    # that stopped one relation short costs the client a few lines, not the answer)
    ctx_roots = [
        (r.node, r.score) for r in _frontier(roots, cfg.relevance_margin, cfg.max_frontier)
    ]
    paths = path_sets(
        graph, ctx_roots, scorer, max(1, min(cfg.max_depth, depth + cfg.context_hops))
    )
    paths = [p for p in paths if p.score >= paths[0].score - cfg.context_margin] if paths else []
    return ArkResult(
        query=query,
        kg=kg.name,
        judge=judge.name,
        results=rank_answers(final, seed_ids)[: cfg.top_k],
        history=history,
        seeds=[graph.entity_id(r.node) for r in roots],
        depth_reached=depth,
        neighbour_cache={"hits": cache.hits - hits0, "misses": cache.misses - miss0},
        context=render_path_sets(graph, paths, cfg.context_tokens)
        if ctx_roots
        else NOTHING_MATCHED,
        seconds=round(time.perf_counter() - t0, 4),
    )


# -- fixed-depth baselines -------------------------------------------------------------------------
class FixedTraversalResult(StrategyResult):
    method: str
    seeds: list[str]
    visited: int


#: a fixed traversal's default depth
FIXED_DEPTH = {"bfs": 2, "dfs": 5}


async def fixed_traversal(
    kg: Graph,
    query: str,
    res: GraphResources,
    method: Literal["bfs", "dfs"],
    depth: int | None = None,
    initial_k: int = 20,
    relevance_margin: float = 0.15,
    max_frontier: int = 30,
    budget: int = 2000,
    top_k: int = 20,
) -> FixedTraversalResult:
    """Breadth- or depth-first to a fixed depth (default :data:`FIXED_DEPTH`) from the same roots
    as ARK, no judge. Depth-first follows the best-scoring relation first from each root, visiting
    at most ``budget`` nodes overall."""
    t0 = time.perf_counter()
    query = check_query(query, kg.limits.max_query_chars)
    graph = res.graph
    roots, topic = lexical_roots(res, query, initial_k)
    scorer = res.relevance().scorer(query, topic)
    reached = {r.node: r for r in roots}
    frontier = _frontier(roots, relevance_margin, max_frontier)
    seeds = {f.node for f in frontier}
    depth = FIXED_DEPTH[method] if depth is None else depth
    if method == "dfs":
        visited = _depth_first(
            graph, frontier, scorer, reached, seeds, res.neighbour_cache, depth, budget
        )
    else:
        for _ in range(depth):
            if not frontier:
                break
            frontier = expand_frontier(
                graph, frontier, scorer, reached, cache=res.neighbour_cache, avoid=seeds
            )[: max_frontier * 20]
        visited = len(reached)
    final = [to_retrieved(graph, r) for r in reached.values()]
    return FixedTraversalResult(
        query=query,
        kg=kg.name,
        method=f"{method}-{depth}",
        results=rank_answers(final, {graph.entity_id(s) for s in seeds})[:top_k],
        seeds=[graph.entity_id(r.node) for r in roots],
        visited=visited,
        seconds=round(time.perf_counter() - t0, 4),
    )


def _depth_first(
    graph: LocalGraph,
    starts: list[Reached],
    scorer,
    reached: dict[int, Reached],
    seeds: set[int],
    cache: NeighbourCache,
    depth: int,
    budget: int,
) -> int:
    """Depth-first from ``starts`` (filling ``reached``), best-scoring relation first: the number
    of nodes visited."""
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
            score = cur.score + gain
            for j in targets:
                if j in seeds or (j in reached and reached[j].score >= score):
                    continue
                rec = Reached(j, score, cur.depth + 1, cur.path + ((r, d, j),), used)
                reached[j] = rec
                children.append(rec)
        children.sort(key=lambda c: c.score)  # best popped first
        stack.extend(children)
    return visited


# -- as registered strategies ----------------------------------------------------------------------
class ArkOptions(ArkConfig):
    judge: Literal["offline", "llm"] = Field(
        default="offline",
        description="Who decides sufficient/expand/stop per depth: the offline judge or the LLM",
    )


async def _run_ark(call: Call) -> ArkResult:
    o: ArkOptions = call.options  # type: ignore[assignment]
    res = await call.resources()
    judge = LLMArkJudge(call.llm()) if o.judge == "llm" else None
    return await ark_search(call.kg, call.query, res, judge=judge, config=o, progress=call.progress)


def _render_ark(out: ArkResult) -> str:
    """The context first (ARK's job: what the client reads to answer), then the ranked entities."""
    hist = "decisions: " + "; ".join(
        f"d{h.depth} {h.decision} ({h.result_count})"
        + ("" if h.valid else " [invalid judge answer]")
        for h in out.history
    )
    context = [
        "Context — relation paths from the question's entity, each with every entity it reaches:",
        out.context or "(none)",
        "",
        "Ranked entities:",
    ]
    return render_ranked(
        f"ARK results for {out.query!r} (judge: {out.judge})", out.results, [hist, *context]
    )


ARK = Strategy(
    name="ark",
    job="context",
    options=ArkOptions,
    run=_run_ark,
    render=_render_ark,
    result=ArkResult,
    tool="ark_retrieve",
    title="ARK adaptive retrieval (lexical search, then judged expansion)",
    llm_option="judge",
    needs=("bm25", "relevance"),
    summary="A context for answering a question, bounded in tokens: from the question's entity, "
    "the best-scoring relation paths, each with every entity it reaches (read it to answer). Found "
    "with ARK: BM25 over entity descriptors, then per depth a judge decides whether the results "
    "suffice, need one more hop, or should stop. Also returns the ranked entities (with the path "
    "that reached each) and the decision history.",
    reference="arXiv 2601.13969 (ARK)",
)


class FixedOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    depth: int | None = Field(
        default=None, ge=0, le=8, description="Hops (default: 2 for bfs, 5 for dfs)"
    )
    top_k: int = Field(default=20, ge=1, le=1000)


async def _run_fixed(call: Call) -> FixedTraversalResult:
    o: FixedOptions = call.options  # type: ignore[assignment]
    method = cast(Literal["bfs", "dfs"], call.method)  # only BFS and DFS (_baseline) run this
    return await fixed_traversal(
        call.kg, call.query, await call.resources(), method, depth=o.depth, top_k=o.top_k
    )


def _baseline(name: str, order: str) -> Strategy:
    return Strategy(
        name=name,
        job="ranking",
        options=FixedOptions,
        run=_run_fixed,
        result=FixedTraversalResult,
        needs=("bm25", "relevance"),
        summary=f"{order}-first to a fixed depth from ARK's roots, no judge (ARK's baseline).",
        reference="arXiv 2601.13969 (ARK), fixed-depth baseline",
    )


BFS, DFS = _baseline("bfs", "Breadth"), _baseline("dfs", "Depth")
