"""Following relations from many entities at once, within a budget: what a client would otherwise do
with one ``get_edges`` call per batch of 50 IDs and per page, merging by hand.

:func:`follow_path` chains hops and returns the distinct final targets with how many paths reach
each and one example path — the count of paths is the number of distinct walks start → … → target
in the KG, as in a path query's bag semantics.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .errors import InvalidInput
from .models import Direction, Edge, EdgePage, Entity, Literal

if TYPE_CHECKING:
    from .graph import Graph

MAX_HOPS = 4
HOP_EDGE_BUDGET = 20_000  # edges read per hop before the walk stops and says it was cut
HOP_FRONTIER = 5_000  # entities a hop may leave from


class Hop(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    relation_id: str = Field(description="A relation ID, or a name initialize lists.")
    direction: Direction = Field(
        default=Direction.forward, description="backward: from object to subject."
    )


class PathTarget(BaseModel):
    id: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="The entity reached (absent for a literal value).",
    )
    value: Literal | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="The literal reached, when the target is a value.",
    )
    label: str
    paths: int = Field(description="How many distinct paths from the start entities reach it.")
    example: list[str] = Field(
        description="One such path: the start entity's ID, then each node's ID or value."
    )


class PathResult(BaseModel):
    start: list[str]
    hops: list[Hop]
    reached: list[int] = Field(
        description="Distinct nodes reached after each hop, the start left out."
    )
    without_edge: int = Field(
        default=0, description="Nodes the last hop left from that have no such edge."
    )
    without_edge_sample: list[str] = Field(
        default_factory=list, description="The first few of them."
    )
    total: int = Field(description="Distinct final targets in all.")
    targets: list[PathTarget] = Field(description="This page of them, most paths first.")
    entities: dict[str, Entity] = Field(
        default_factory=dict, description="Labels of every ID in the examples."
    )
    truncated: bool = False
    next_offset: int | None = None
    partial: bool = False
    warnings: list[str] = Field(default_factory=list)
    _target_ids: list[str] = PrivateAttr(default_factory=list)

    @property
    def target_ids(self) -> list[str]:
        """Every final target that is an entity (all pages), most paths first."""
        return self._target_ids


def _node(edge: Edge) -> str | None:
    """The node an edge reaches: an entity ID, or ``"value"`` for a literal (quoted, so it cannot be
    an ID)."""
    if edge.target is not None:
        return edge.target
    return f'"{edge.value.value}"' if edge.value is not None else None


async def follow_path(
    kg: Graph,
    start: list[str],
    hops: list[Hop],
    *,
    exclude_start: bool = True,
    through_start: bool = True,
    limit: int = 50,
    offset: int = 0,
) -> PathResult:
    if not start:
        raise InvalidInput("no start entities")
    if not hops:
        raise InvalidInput("hops is empty: give at least one {relation_id, direction}")
    if len(hops) > MAX_HOPS:
        raise InvalidInput(f"{len(hops)} hops given; at most {MAX_HOPS}")
    start = list(dict.fromkeys(start))
    counts: dict[str, int] = dict.fromkeys(start, 1)
    example: dict[str, list[str]] = {s: [s] for s in start}
    values: dict[str, Literal] = {}
    entities: dict[str, Entity] = {}
    reached: list[int] = []
    warnings: list[str] = []
    truncated = partial = False
    starts = set(start)
    if (
        exclude_start or not through_start
    ):  # the start in every linked KG is the start: its twin is not an answer
        for twins in await asyncio.gather(*(kg.same_as(s) for s in start[:HOP_FRONTIER])):
            starts.update(twins)
    without_edge, without_sample = 0, []
    for n, hop in enumerate(hops, 1):
        # a walk may pass back through the start ("X's child's parent's heir" is X's heir): by
        # default only the final targets leave it out; through_start=False also stops walks there
        # ("X's co-stars' other films")
        frontier = [x for x in counts if x not in values]  # literal values are ends, not sources
        if not through_start and n > 1:
            frontier = [x for x in frontier if x not in starts]
        if len(frontier) > HOP_FRONTIER:
            warnings.append(
                f"hop {n} starts from {len(frontier)} entities; followed from the first "
                f"{HOP_FRONTIER}"
            )
            frontier, truncated = frontier[:HOP_FRONTIER], True
        # one bulk read per hop (per KG, over links): a remote KG answers a frontier in one round
        # trip, where the tools' sorted 200-edge pages cost one each
        reach = (
            await kg.adjacent(frontier, hop.relation_id, hop.direction, limit=HOP_EDGE_BUDGET)
            if frontier
            else EdgePage(edges=[])
        )
        entities.update(reach.entities)
        partial |= reach.partial
        warnings.extend(w for w in reach.warnings if w not in warnings)
        if reach.truncated:
            truncated = True
            warnings.append(f"hop {n} read its first {HOP_EDGE_BUDGET} edges only")
        nxt: dict[str, int] = {}
        nxt_example: dict[str, list[str]] = {}
        for e in reach.edges:
            src, tgt = (
                e.via or e.source,
                _node(e),
            )  # via: the edge was followed from src's twin in another KG
            if tgt is None or src not in counts:
                continue
            if e.target is None and e.value is not None:
                values[tgt] = e.value
            nxt[tgt] = nxt.get(tgt, 0) + counts[src]
            nxt_example.setdefault(tgt, [*example[src], tgt])
        if n == len(hops):
            left = {e.via or e.source for e in reach.edges}
            quiet = [x for x in frontier if x not in left and not (exclude_start and x in starts)]
            without_edge, without_sample = len(quiet), quiet[:3]
        counts, example = nxt, nxt_example
        reached.append(sum(1 for x in counts if x not in starts) if exclude_start else len(counts))
        if not counts:
            break
    if exclude_start:
        counts = {k: v for k, v in counts.items() if k not in starts}
    ordered = sorted(counts, key=lambda k: -counts[k])  # stable: first reached first among equals
    page = ordered[offset : offset + limit]
    targets = []
    for k in page:
        if k in values:
            targets.append(
                PathTarget(
                    value=values[k], label=values[k].value, paths=counts[k], example=example[k]
                )
            )
        else:
            ent = entities.get(k)
            targets.append(
                PathTarget(id=k, label=ent.label if ent else k, paths=counts[k], example=example[k])
            )
    shown = {x for t in targets for x in t.example} | set(without_sample)
    more = offset + limit < len(ordered)
    result = PathResult(
        start=start,
        hops=hops,
        reached=reached,
        without_edge=without_edge,
        without_edge_sample=without_sample,
        total=len(ordered),
        targets=targets,
        entities={k: v for k, v in entities.items() if k in shown},
        truncated=truncated or more,
        next_offset=offset + limit if more else None,
        partial=partial,
        warnings=warnings,
    )
    result._target_ids = [k for k in ordered if k not in values]
    return result
