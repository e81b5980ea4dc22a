"""Relation-path sets: from the question's entities, the best-scoring relation paths (sequences of
relation and direction) and, for each, the *whole set* of entities at its end. A question about "the
genres of the films that share actors with X" is answered by one such set; a best-path-per-entity
traversal keeps each entity only on its highest-scoring path and so scatters or drops it.

After the relation-path retrieval of KBQA (Luo et al., ICLR 2024, "Reasoning on Graphs": plan
relation paths, then read off every entity a path reaches). Paths are grown by a beam over path
scores; hubs (a genre, a year: they connect everything) and the question's own entities end a path
but are not walked through; a step back along the relation just taken leaves out the entities it
came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tot_mcp.kg_adapters.models import Direction, backward
from tot_mcp.kg_adapters.local_graph import LocalGraph
from tot_mcp.strategies.relevance import PathScorer

Step = tuple[int, Direction]


@dataclass(frozen=True)
class PathSet:
    root: int
    steps: tuple[Step, ...]
    nodes: tuple[int, ...]  # the entities at the path's end, in first-reached order
    score: float
    used: frozenset[int]  # question-span tokens the path's relations used
    parent: PathSet | None = None


def grow(
    graph: LocalGraph,
    parent: PathSet,
    scorer: PathScorer,
    exclude: set[int],
    hubs: np.ndarray,
    max_nodes: int,
    echo_price: float,
) -> list[PathSet]:
    """Every one-relation extension of ``parent``: its nodes' neighbours grouped by (relation,
    direction).

    A step back along the relation just taken ("the films that *share* actors with X": out to the
    actors, back to their films) is how one relation word reads as two hops, so it may reuse that
    word's span for ``echo_price`` instead of needing a span of its own; its set leaves out where it
    came from (X shares actors with itself)."""
    groups: dict[Step, dict[int, None]] = {}
    for i in parent.nodes:
        if parent.steps and (hubs[i] or i in exclude):
            continue
        for adjacency, d in ((graph.out[i], Direction.forward), (graph.inc[i], Direction.backward)):
            for r, targets in adjacency.items():
                bucket = groups.setdefault((r, d), {})
                if len(bucket) < max_nodes:
                    bucket.update(dict.fromkeys(targets))
    out = []
    for step, bucket in groups.items():
        gain, used = scorer.hop(step[0], parent.used)
        echo = bool(parent.steps) and parent.steps[-1] == (step[0], step[1].flip())
        if echo:
            if gain < -echo_price:
                gain, used = -echo_price, parent.used
            came_from = parent.parent.nodes if parent.parent is not None else ()
            for i in came_from:
                bucket.pop(i, None)
        if bucket:
            out.append(
                PathSet(
                    parent.root,
                    (*parent.steps, step),
                    tuple(bucket)[:max_nodes],
                    parent.score + gain,
                    used,
                    parent,
                )
            )
    return out


def path_sets(
    graph: LocalGraph,
    roots: Sequence[tuple[int, float]],
    scorer: PathScorer,
    depth: int,
    *,
    beam: int = 12,
    max_nodes: int = 2000,
    echo: float = 0.5,
) -> list[PathSet]:
    """Paths of 1..``depth`` relations from each (root, root score), best first; at each length only
    the ``beam`` best are grown further. ``echo``: the price of a step back along the relation just
    taken, in hop prices."""
    hubs = graph.hubs()
    exclude = {r for r, _ in roots}
    level = [PathSet(r, (), (r,), s, frozenset()) for r, s in roots]
    found: list[PathSet] = []
    for _ in range(depth):
        cands = [
            c
            for p in level
            for c in grow(graph, p, scorer, exclude, hubs, max_nodes, echo * scorer.hop_price)
        ]
        cands.sort(key=lambda c: -c.score)
        found.extend(cands)
        level = [c for c in cands if not all(hubs[i] for i in c.nodes)][:beam]
        if not level:
            break
    found.sort(key=lambda c: (-c.score, len(c.steps)))
    return found


def describe_path(graph: LocalGraph, steps: Sequence[Step]) -> str:
    return " → ".join(
        graph.rel_labels[r] if d is Direction.forward else backward(graph.rel_labels[r])
        for r, d in steps
    )


def render_path_sets(
    graph: LocalGraph, paths: Sequence[PathSet], budget_tokens: int, list_cap: int = 60
) -> str:
    """One line per path under its root, ``relation → relation: (N) a; b; …``, best path first,
    until ``budget_tokens`` (characters / 4, the note included) is spent; a line's list stops at
    ``list_cap`` names. What did not fit is counted on the last line, so a reader knows the context
    was cut."""
    budget = budget_tokens * 4
    kept: list[tuple[int, str]] = []
    roots: set[int] = set()
    used = 0
    left_out = 0
    for p in paths:
        names = [graph.label(j) for j in p.nodes[:list_cap]]
        more = f"; (+{len(p.nodes) - list_cap} more)" if len(p.nodes) > list_cap else ""
        count = f"({len(p.nodes)}) " if len(p.nodes) > 1 else ""
        line = f"  {describe_path(graph, p.steps)}: {count}" + "; ".join(names) + more
        cost = len(line) + 1 + (0 if p.root in roots else len(_root_line(graph, p.root)) + 1)
        if used + cost > budget:
            left_out += 1
            continue
        used += cost
        roots.add(p.root)
        kept.append((p.root, line))

    def note() -> str:
        return (
            f"(+{left_out} lower-ranked relation paths left out to stay within {budget_tokens} "
            "tokens)"
            if left_out
            else ""
        )

    while len(kept) > 1 and used + len(note()) > budget:  # make room for the note itself
        root, line = kept.pop()
        used -= len(line) + 1
        left_out += 1
        if all(r != root for r, _ in kept):
            used -= len(_root_line(graph, root)) + 1
    if not kept:
        return (
            f"(each of the {left_out} relation paths found is longer than {budget_tokens} tokens; "
            "raise context_tokens)"
            if left_out
            else "(nothing reached beyond the question's entities)"
        )
    lines: list[str] = []
    for root in dict.fromkeys(r for r, _ in kept):
        lines.append(_root_line(graph, root))
        lines.extend(line for r, line in kept if r == root)
    if left_out:
        lines.append(note())
    return "\n".join(lines)


def _root_line(graph: LocalGraph, root: int) -> str:
    return f"{graph.label(root)} [{graph.entity_id(root)}]"
