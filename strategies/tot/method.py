"""Tree-of-Traversals (Markowitz et al., ACL 2024) and its k = 1 special case, Chain-of-Traversals,
as registered strategies: best-first search over the action state machine with the configured policy
(offline, or an LLM).

This is the one implementation: ``tot-search --method tot`` and the ``tree_of_traversals`` MCP tool
both run :func:`run_search`, so what the benchmark measures is what the tool does."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from tot_mcp.strategies.registry import Call, Strategy
from tot_mcp.strategies.results import check_query, RetrievedEntity, StrategyResult

from .state import DEFAULT_MAX_EDGES, DEFAULT_MAX_HOPS


class TotOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    k: int = Field(default=3, ge=1, le=10, description="Branching factor (1 = Chain-of-Traversals)")
    max_hops: int = Field(
        default=DEFAULT_MAX_HOPS,
        ge=1,
        le=10,
        description="Expansions (hops) a path may take before it must answer",
    )
    max_depth: int | None = Field(
        default=None,
        ge=1,
        le=50,
        description="The paper's budget instead: actions before an answer is forced "
        "(an expansion takes 3; the paper used 7)",
    )
    tau: float = Field(
        default=0.8, ge=0.0, le=1.0, description="Accept an answer valued at least this"
    )
    max_expansions: int = Field(
        default=25,
        ge=1,
        le=500,
        description=(
            "Give up after this many search steps (a node expanded, or a step a reply decided "
            "ahead)"
        ),
    )
    max_edges_per_expansion: int = Field(
        default=DEFAULT_MAX_EDGES, ge=1, le=1000, description="Edges kept per expansion"
    )
    policy: dict = Field(
        default_factory=dict,
        description=(
            "Policy settings: the offline policy's knobs; with an LLM, fused (default true: one "
            "call per expansion; false: the paper's three steps)"
        ),
    )


class ChainOptions(TotOptions):
    k: int = Field(default=1, ge=1, le=1, description="Always 1: one action per step")


class TotResult(StrategyResult):
    expansions: int = 0
    search: dict | None = Field(
        default=None, description="The search tree (benchmarks, the HTML report)"
    )
    _search: object = PrivateAttr(
        default=None
    )  # the SearchResult itself, for in-process callers (the MCP tool)

    def trace(self) -> dict:
        return self.search or {}


async def _run(call: Call) -> TotResult:
    from tot_mcp.strategies.llm import factory
    from tot_mcp.strategies.tot.asm import AsmConfig, TraversalASM
    from tot_mcp.strategies.tot.search import SearchConfig, SearchProgress, TreeSearch

    o: TotOptions = call.options  # type: ignore[assignment]
    graph = (
        call.scope or call.services.graph
    )  # every KG of the run, linked, unless the caller chose some
    check_query(
        call.query, graph.limits.max_query_chars
    )  # a bad query is refused before any model loads
    embedder = await call.services.aembedder() if factory.needs_embedder(call.llm_kind) else None
    policy = factory.make_policy(
        call.llm_kind,
        graph,
        embedder=embedder,
        options=o.policy,
        llm=None if call.offline else call.llm(),
        shared=call.services.policy_state,
    )
    config = SearchConfig(
        k=o.k,
        max_hops=o.max_hops,
        max_depth=o.max_depth,
        tau=o.tau,
        max_expansions=o.max_expansions,
    )

    async def progress(p: SearchProgress) -> None:
        if call.progress is not None:
            best = (
                f", best answer value {p.best_answer_value:.2f}"
                if p.best_answer_value is not None
                else ""
            )
            await call.progress(p.expansions, p.max_expansions, f"{p.message}{best}")

    try:
        asm = TraversalASM(
            graph,
            AsmConfig(
                max_edges_per_expansion=o.max_edges_per_expansion, describe_twins=not call.offline
            ),
        )  # summaries are for a model to read
        out = await TreeSearch(asm, policy, config).run(call.query, progress=progress)
    finally:
        await policy.aclose()
    answers = [
        RetrievedEntity(id=it.id, label=it.text, score=out.value, source="tot")
        for it in out.answer.items
    ]
    result = TotResult(
        query=call.query,
        kg=call.kg.name,
        results=answers,
        status=out.status,
        answer_text=out.answer.text,
        value=out.value,
        expansions=out.expansions,
        usage=out.usage,
        error=out.error,
        seconds=out.latency_s,
        partial=out.partial,
        partial_reason=out.partial_reason,
        reason=out.reason,
        search=out.model_dump(mode="json", exclude={"subgraph"}),
    )
    result._search = out
    return result


TOT = Strategy(
    name="tot",
    job="answer",
    options=TotOptions,
    run=_run,
    local_only=False,
    result=TotResult,
    summary=(
        "Tree-of-Traversals: best-first search over KG actions, valued by the policy; answers the "
        "question."
    ),
    reference="Markowitz et al., Tree-of-Traversals, ACL 2024",
)
CHAIN = Strategy(
    name="chain",
    job="answer",
    options=ChainOptions,
    run=_run,
    local_only=False,
    result=TotResult,
    summary=(
        "Chain-of-Traversals: Tree-of-Traversals with one action per step (k = 1): cheaper, no "
        "backtracking."
    ),
    reference="Markowitz et al., Tree-of-Traversals, ACL 2024 (the k = 1 baseline)",
)
