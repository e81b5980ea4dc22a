"""KG operations over any number of entities — a whole earlier result, not just the IDs one backend
call takes: relations merged over batches, a page of edges, and why a first page came back empty.

Why here and not in the MCP layer: the tools (``get_relations``/``get_edges`` with ``from_result``)
and any strategy walking a frontier need the same answers; the server only maps MCP to these.
"""

from __future__ import annotations

from .graph import Graph
from .errors import InvalidInput, KGError
from .follow import HOP_EDGE_BUDGET, HOP_FRONTIER
from .models import Direction, Edge, EdgePage, RelationList, labels_only


async def relations_over(kg: Graph, ids: list[str]) -> tuple[list[str], RelationList]:
    """``get_relations`` over the first ``HOP_FRONTIER`` entities (counts, edges and entities having
    the relation, added up; an ID naming nothing is an error), at most ``max_relations`` shown;
    returns the entities read and the list."""
    limits = kg.limits
    warnings: list[str] = []
    truncated = False
    if len(ids) > HOP_FRONTIER:
        warnings.append(f"relations of the first {HOP_FRONTIER} of {len(ids)} entities")
        ids, truncated = ids[:HOP_FRONTIER], True
    rl = await kg.relation_counts(ids, strict=True)
    rels = rl.relations
    return ids, RelationList(
        relations=rels[: limits.max_relations],
        truncated=truncated or rl.truncated or len(rels) > limits.max_relations,
        partial=rl.partial,
        warnings=[*warnings, *rl.warnings],
    )


async def edges_over(
    kg: Graph, ids: list[str], relation_id: str, direction: Direction, limit: int, offset: int
) -> EdgePage:
    """One page of edges from any number of entities, the entities by label only (a page shown to a
    model): one backend call when the IDs fit in one, else read across batches (within
    ``HOP_EDGE_BUDGET`` edges and ``HOP_FRONTIER`` entities, beyond which follow_path serves)."""
    if len(ids) <= kg.limits.max_ids:
        return await kg.get_labelled_edges(ids, relation_id, direction, limit, offset)
    if offset + limit > HOP_EDGE_BUDGET:
        raise InvalidInput(
            f"offset {offset} is past the first {HOP_EDGE_BUDGET} edges of a whole result; "
            "use follow_path (distinct targets) or fewer entities"
        )
    if len(ids) > HOP_FRONTIER:
        raise InvalidInput(
            f"result has {len(ids)} entities; get_edges follows at most {HOP_FRONTIER} "
            "(follow_path counts distinct targets over large sets)"
        )
    edges: list[Edge] = []
    pages: list[EdgePage] = []
    batch = kg.limits.max_ids
    for i in range(0, len(ids), batch):  # every page of each batch, until one edge past this page
        at: int | None = 0
        while at is not None and len(edges) <= offset + limit:
            pages.append(await kg.get_edges(ids[i : i + batch], relation_id, direction, offset=at))
            edges.extend(pages[-1].edges)
            at = pages[-1].next_offset if pages[-1].truncated else None
    more = len(edges) > offset + limit
    edges = edges[offset : offset + limit]
    shown = {x for e in edges for x in (e.source, e.target, e.via) if x}
    entities = {k: v for p in pages for k, v in p.entities.items() if k in shown}
    return EdgePage(
        edges=edges,
        entities=labels_only(entities),
        truncated=more,
        next_offset=offset + limit if more else None,
        partial=any(p.partial for p in pages),
        warnings=list(dict.fromkeys(w for p in pages for w in p.warnings)),
        relation=next((p.relation for p in pages if p.relation is not None), None),
    )


async def why_empty(
    kg: Graph, ids: list[str], relation_id: str, direction: Direction
) -> str | None:
    """Why a first page is empty, and the call that would find edges (the other direction), if
    any."""
    try:
        rels = (await relations_over(kg, ids))[1].relations
    except KGError:
        return None
    other = direction.flip()
    back = next((r for r in rels if r.id == relation_id and r.direction is other), None)
    if back is not None:
        many = f" ({back.count} edges)" if back.count is not None else ""
        return (
            f"no {relation_id} edges {direction.value} from these entities, but it runs "
            f"{other.value}"
            f'{many}: call get_edges again with direction="{other.value}"'
        )
    if not any(r.id == relation_id for r in rels):
        return (
            f"these entities have no {relation_id} edges either way; call get_relations to see "
            "theirs"
        )
    return None
