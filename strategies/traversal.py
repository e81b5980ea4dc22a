"""Relevance-ranked graph traversal shared by ARK, the router's graph route and the fixed BFS/DFS
baselines: one hop out of a frontier, keeping the best-scoring path to every node reached."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.models import Direction
from tot_mcp.kg_adapters.local_graph import LocalGraph
from tot_mcp.strategies.relevance import PathScorer
from tot_mcp.strategies.results import PathStep, RetrievedEntity


@dataclass
class Reached:
    """A node reached by traversal: best path score so far and the path that gave it."""

    node: int
    score: float
    depth: int
    path: tuple[tuple[int, Direction, int], ...]  # (relation, direction, target)
    used: frozenset[int] = frozenset()
    source: str = "expand"


@dataclass
class NeighbourCache:
    """Per-node neighbour lists grouped by (relation, direction); bounded so a hub cannot blow
    memory up."""

    max_per_relation: int = 200
    enabled: bool = True
    hits: int = 0
    misses: int = 0
    _store: dict[int, list[tuple[int, Direction, list[int]]]] = field(default_factory=dict)

    def groups(self, graph: LocalGraph, i: int) -> list[tuple[int, Direction, list[int]]]:
        if self.enabled and i in self._store:
            self.hits += 1
            return self._store[i]
        self.misses += 1
        out = [
            (r, Direction.forward, objs[: self.max_per_relation])
            for r, objs in graph.out[i].items()
        ]
        out += [
            (r, Direction.backward, subs[: self.max_per_relation])
            for r, subs in graph.inc[i].items()
        ]
        if self.enabled:
            self._store[i] = out
        return out


def expand_frontier(
    graph: LocalGraph,
    frontier: Iterable[Reached],
    scorer: PathScorer,
    reached: dict[int, Reached],
    *,
    cache: NeighbourCache,
    avoid: set[int] = frozenset(),  # type: ignore[assignment]
    relation_filter: set[int] | None = None,
    node_kind: str | None = None,
    max_new: int = 5000,
) -> list[Reached]:
    """One hop out of ``frontier``: score every neighbour by its path, keep the best path per node
    in ``reached``, and return the nodes whose score improved (the next frontier). ``avoid`` (the
    seeds) is never walked through."""
    improved: dict[int, Reached] = {}
    new_count = 0
    for parent in frontier:
        for r, d, targets in cache.groups(graph, parent.node):
            if relation_filter is not None and r not in relation_filter:
                continue
            gain, used = scorer.hop(r, parent.used)
            score = parent.score + gain
            for j in targets:
                if j in avoid or j == parent.node:
                    continue
                if node_kind == "literal" and not graph.is_literal(j):
                    continue
                if node_kind == "entity" and graph.is_literal(j):
                    continue
                old = reached.get(j)
                if old is not None and old.score >= score:
                    continue
                if old is None:
                    new_count += 1
                    if new_count > max_new:
                        continue
                reached[j] = improved[j] = Reached(
                    j, score, parent.depth + 1, parent.path + ((r, d, j),), used
                )
    return sorted(improved.values(), key=lambda x: -x.score)


def to_retrieved(graph: LocalGraph, rec: Reached, source: str | None = None) -> RetrievedEntity:
    return RetrievedEntity(
        id=graph.entity_id(rec.node),
        label=graph.label(rec.node),
        score=round(float(rec.score), 6),
        source=source or rec.source,
        depth=rec.depth,
        path=[
            PathStep(
                relation=graph.rel_ids[r],
                label=graph.rel_labels[r],
                direction=d,
                target=graph.entity_id(j),
            )
            for r, d, j in rec.path
        ],
    )


def rank_answers(results: list[RetrievedEntity], seeds: set[str]) -> list[RetrievedEntity]:
    """Results best first with the seeds moved last (the topic is rarely its own answer, but
    sometimes is)."""
    return sorted(results, key=lambda e: (e.id in seeds, -e.score))


async def linked_seeds(
    kg: Graph, graph: LocalGraph, query: str, limit: int = 5
) -> list[tuple[int, float]]:
    """Entities the query mentions (the KG's own linker), as (node, score); empty when nothing
    links."""
    try:
        matches = await kg.initialize(query, limit=limit)
    except InvalidInput:
        return []
    out = [(i, float(m.score)) for m in matches if (i := graph.node_of(m.entity.id)) is not None]
    if out:
        top = max(s for _, s in out)
        out = [(i, s) for i, s in out if s >= 0.85 * top]
    return out
