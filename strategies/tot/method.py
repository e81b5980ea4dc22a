"""Tree-of-Traversals (Markowitz et al., ACL 2024) and its k = 1 special case, Chain-of-Traversals, as registered
strategies: best-first search over the action state machine with the configured policy (offline, or an LLM)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from strategies.registry import Call, Strategy
from strategies.results import RetrievedEntity, StrategyResult


class TotOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    k: int = Field(default=3, ge=1, le=10, description="Branching factor (1 = Chain-of-Traversals)")
    max_depth: int = Field(default=7, ge=1, le=50, description="Actions before an answer is forced")
    tau: float = Field(default=0.8, ge=0.0, le=1.0, description="Accept an answer valued at least this")
    max_expansions: int = Field(default=25, ge=1, le=500, description="Give up after this many expansions")
    max_edges_per_expansion: int = Field(default=50, ge=1, le=1000, description="Edges kept per expansion")
    policy: dict = Field(default_factory=dict, description="Policy settings (the offline policy's knobs)")


class ChainOptions(TotOptions):
    k: int = Field(default=1, ge=1, le=1, description="Always 1: one action per step")


class TotResult(StrategyResult):
    expansions: int = 0
    search: dict | None = Field(default=None, description="The search tree (benchmarks, the HTML report)")

    def trace(self) -> dict:
        return self.search or {}


async def _run(call: Call) -> TotResult:
    from strategies.llm import factory
    from strategies.tot.asm import AsmConfig, TraversalASM
    from strategies.tot.search import SearchConfig, TreeSearch

    o: TotOptions = call.options  # type: ignore[assignment]
    services = call.services
    graph = services.graph  # every KG of the run, linked
    embedder = await services.aembedder() if factory.needs_embedder(call.llm_kind) else None
    policy = factory.make_policy(call.llm_kind, graph, embedder=embedder, options=o.policy,
                                 llm=None if call.offline else call.llm(), shared=services.policy_state)
    config = SearchConfig(k=o.k, max_depth=o.max_depth, tau=o.tau, max_expansions=o.max_expansions)
    try:
        out = await TreeSearch(TraversalASM(graph, AsmConfig(max_edges_per_expansion=o.max_edges_per_expansion)),
                               policy, config).run(call.query)
    finally:
        await policy.aclose()
    answers = [RetrievedEntity(id=i, label=lab, score=out.value, source="tot")
               for i, lab in zip(out.answer.entity_ids, out.answer.labels)]
    return TotResult(query=call.query, kg=call.kg.name, results=answers, status=out.status,
                     answer_text=out.answer.text, value=out.value, expansions=out.expansions, usage=out.usage,
                     error=out.error, seconds=out.latency_s,
                     search=out.model_dump(mode="json", exclude={"subgraph"}))


TOT = Strategy(
    name="tot", job="answer", options=TotOptions, run=_run, local_only=False, result=TotResult,
    summary="Tree-of-Traversals: best-first search over KG actions, valued by the policy; answers the question.",
    reference="Markowitz et al., Tree-of-Traversals, ACL 2024",
)
CHAIN = Strategy(
    name="chain", job="answer", options=ChainOptions, run=_run, local_only=False, result=TotResult,
    summary="Chain-of-Traversals: Tree-of-Traversals with one action per step (k = 1): cheaper, no backtracking.",
    reference="Markowitz et al., Tree-of-Traversals, ACL 2024 (the k = 1 baseline)",
)
