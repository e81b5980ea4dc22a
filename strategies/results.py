"""What every retrieval strategy returns and accepts: ranked entities with the path that reached
them, and the one check every natural-language query passes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from tot_mcp.kg_adapters.base import Limits
from tot_mcp.kg_adapters.models import Direction, backward
from tot_mcp.strategies.llm.base import LLMUsage


def check_query(query: object, max_chars: int = Limits.max_query_chars) -> str:
    """Strip and validate a natural-language query: empty or huge queries are clear errors, never a
    crash."""
    return Limits(max_query_chars=max_chars).check_query(query)  # type: ignore[arg-type]


# -- results ---------------------------------------------------------------------------------------
#: the one status vocabulary of every answering path (the tools, ``tot-search`` and its JSONL);
#: docs/tools.md quotes this table, and a test checks that it does
STATUSES: dict[str, str] = {
    "answered": (
        "linked confidently, along relations the question asks for, grounded in edges, valued at "
        "least tau"
    ),
    "partial": (
        "as answered, but the answer set is known to miss members (a cap, a KG that did not answer)"
    ),
    "uncertain": (
        "the question's entity matched only a look-alike, so nothing was answered (the reason "
        "names it)"
    ),
    "unsupported": (
        "the KG has no relation that fits what the question asks (the reason lists what it has)"
    ),
    "no_entity": (
        "no entity of the question was found in the KG (the reason says what was looked for)"
    ),
    "below_tau": "an answer was found but valued below tau: the evidence is weak",
    "incomplete": "a budget (expansions, hops) ran out before an answer was reached",
    "no_answer": "the search ran and reached no answer",
}
#: the statuses that refuse: nothing in ``results`` is an answer
REFUSALS = frozenset({"unsupported", "no_entity", "no_answer"})


class LinkInfo(BaseModel):
    """One entity the question was linked to, and how surely (:mod:`kg_adapters.link_grade`)."""

    mention: str = Field(description="The question's text it was linked from")
    id: str
    label: str
    match: str = Field(
        description="exact, normalised, typo, partial, similar (or the backend's own kind)"
    )
    score: float
    confident: bool
    note: str = Field(default="", description="One line when the match is not exact")


class PathStep(BaseModel):
    relation: str = Field(description="Relation ID")
    label: str = Field(description="Relation label")
    direction: Direction
    target: str = Field(description="Entity ID reached")


class RetrievedEntity(BaseModel):
    """One retrieved entity with its score and why it was retrieved."""

    id: str
    label: str
    score: float
    source: str = Field(
        description="What retrieved it: bm25, dense, graph, expand, beam, rerank, ..."
    )
    depth: int | None = Field(default=None, description="Hops from a seed, when found by traversal")
    path: list[PathStep] = Field(
        default_factory=list, description="Relation path from the seed, if traversed"
    )


class StrategyResult(BaseModel):
    """What every registered strategy returns (its own result type adds what is particular to it):
    the entities it found, best first, and, for strategies that answer, the answer."""

    query: str
    kg: str
    results: list[RetrievedEntity] = Field(
        description="Entities found, best first (answers, or retrieved)"
    )
    status: str = Field(default="answered", description="One of: " + ", ".join(STATUSES))
    reason: str = Field(
        default="", description="One line: why this status (what was linked, what is missing)"
    )
    links: list[LinkInfo] = Field(
        default_factory=list, description="The question's entities and how they matched"
    )
    answer_text: str = Field(
        default="", description="The answer in words, when the strategy answers"
    )
    context: str | None = Field(
        default=None, description="A compact subgraph for the client to read (ARK)"
    )
    value: float | None = Field(
        default=None, description="The strategy's confidence in its answer, 0..1"
    )
    usage: LLMUsage | None = Field(
        default=None, description="LLM calls and tokens, when the strategy counts its own"
    )
    error: str | None = None
    partial: bool = Field(
        default=False, description="The answer set is known to be incomplete (see partial_reason)"
    )
    partial_reason: str = Field(
        default="", description="One line: why the answer may be missing members"
    )
    seconds: float = 0.0

    def trace(self) -> dict[str, Any]:
        """What a benchmark record keeps of the run besides the results."""
        return self.model_dump(mode="json", exclude={"results", "query", "kg", "context"})


def render_ranked(
    title: str, results: list[RetrievedEntity], extra: list[str] | None = None
) -> str:
    """The text a client model reads: a title, a few context lines, then one numbered line per
    entity with the relation path that reached it."""
    out = [title, *(extra or [])]
    for k, r in enumerate(results, 1):
        via = ""
        if r.path:
            via = "  via " + " → ".join(
                s.label if s.direction.value == "forward" else backward(s.label) for s in r.path
            )
        out.append(f"{k}. {r.label} [{r.id}] {r.score:.3f}{via}")
    if not results:
        out.append("(no results)")
    return "\n".join(out)
