"""What every retrieval strategy returns and accepts: ranked entities with the path that reached them, and the
one check every natural-language query passes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.models import Direction, backward
from tot_mcp.strategies.llm.base import LLMUsage

DEFAULT_MAX_QUERY_CHARS = 2000


def check_query(query: object, max_chars: int = DEFAULT_MAX_QUERY_CHARS) -> str:
    """Strip and validate a natural-language query: empty or huge queries are clear errors, never a crash."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query is empty")
    if len(query) > max_chars:
        raise InvalidInput(f"query is {len(query)} characters; at most {max_chars}")
    return query.strip()


# -- results --------------------------------------------------------------------------------------------------
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
    source: str = Field(description="What retrieved it: bm25, dense, graph, expand, beam, rerank, ...")
    depth: int | None = Field(default=None, description="Hops from a seed, when found by traversal")
    path: list[PathStep] = Field(default_factory=list, description="Relation path from the seed, if traversed")



class StrategyResult(BaseModel):
    """What every registered strategy returns (its own result type adds what is particular to it): the entities
    it found, best first, and, for strategies that answer, the answer."""

    query: str
    kg: str
    results: list[RetrievedEntity] = Field(description="Entities found, best first (answers, or retrieved)")
    status: str = Field(default="answered", description="answered, no_answer, or why the strategy stopped")
    answer_text: str = Field(default="", description="The answer in words, when the strategy answers")
    context: str | None = Field(default=None, description="A compact subgraph for the client to read (ARK)")
    value: float | None = Field(default=None, description="The strategy's confidence in its answer, 0..1")
    usage: LLMUsage | None = Field(default=None, description="LLM calls and tokens, when the strategy counts its own")
    error: str | None = None
    partial: bool = Field(default=False, description="The answer set is known to be incomplete (see partial_reason)")
    partial_reason: str = Field(default="", description="One line: why the answer may be missing members")
    seconds: float = 0.0

    def trace(self) -> dict[str, Any]:
        """What a benchmark record keeps of the run besides the results."""
        return self.model_dump(mode="json", exclude={"results", "query", "kg", "context"})


def render_ranked(title: str, results: list[RetrievedEntity], extra: list[str] | None = None) -> str:
    """The text a client model reads: a title, a few context lines, then one numbered line per entity with the
    relation path that reached it."""
    out = [title, *(extra or [])]
    for k, r in enumerate(results, 1):
        via = ""
        if r.path:
            via = "  via " + " → ".join(s.label if s.direction.value == "forward" else backward(s.label) for s in r.path)
        out.append(f"{k}. {r.label} [{r.id}] {r.score:.3f}{via}")
    if not results:
        out.append("(no results)")
    return "\n".join(out)
