"""The KG's own entity linker as a strategy (``initialize``: exact, then fuzzy label matching): the
baseline the linking task measures the other strategies against."""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict, Field

from tot_mcp.strategies.registry import Call, Strategy
from tot_mcp.strategies.results import RetrievedEntity, StrategyResult, check_query


class LinkOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: int = Field(default=10, ge=1, le=50, description="Matches returned")


async def _run_link(call: Call) -> StrategyResult:
    t0 = time.perf_counter()
    o: LinkOptions = call.options  # type: ignore[assignment]
    query = check_query(call.query, call.kg.limits.max_query_chars)
    matches = await call.kg.initialize(query, limit=o.limit)
    results = [
        RetrievedEntity(
            id=m.entity.id,
            label=m.entity.label,
            score=round(float(m.score), 6),
            source="initialize",
        )
        for m in matches
    ]
    return StrategyResult(
        query=query,
        kg=call.kg.name,
        results=results,
        status="answered" if results else "no_answer",
        seconds=round(time.perf_counter() - t0, 4),
    )


INITIALIZE = Strategy(
    name="initialize",
    job="linking",
    options=LinkOptions,
    run=_run_link,
    local_only=False,
    summary=(
        "The KG's own entity linker (the initialize tool): the question's mentions matched to "
        "entity labels."
    ),
    reference="Markowitz et al., Tree-of-Traversals, ACL 2024 (initialize)",
)
