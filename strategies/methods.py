"""Named question-answering methods that ``tot-search --method`` runs side by side on one benchmark:
every strategy of :mod:`strategies.registry`, adapted to the benchmark runner.

A method is built once per run (:func:`make_method`) and then called per question:
``await method(question, kg) -> MethodResult``. The question it receives is
:meth:`BenchmarkQuestion.public` — gold answers stripped — so no method can peek. Strategies whose
job is a ranking or a context fill ``retrieved_labels`` (and ``context``) so the runner reports
their job's figure next to Hits@1.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.strategies.llm.base import LLMUsage
from tot_mcp.strategies.grounding import run_checked
from tot_mcp.strategies.registry import Call, get
from tot_mcp.strategies.results import LinkInfo
from tot_mcp.strategies.services import Services


class BenchmarkQuestion(BaseModel):
    """One question as the benchmark gives it. ``text`` is what the system sees (topic entity in
    ``[...]``)."""

    id: str
    text: str
    answers: list[str] = Field(
        default_factory=list, description="Gold answer labels (empty in public copies)."
    )
    topic: str | None = Field(
        default=None, description="Topic entity label, when the benchmark names it."
    )
    source: str = ""

    def public(self) -> BenchmarkQuestion:
        """The copy a method may see: no gold answers."""
        return self.model_copy(update={"answers": []})


class MethodResult(BaseModel):
    answer_ids: list[str] = Field(default_factory=list, description="Ranked answer entity IDs.")
    answer_labels: list[str] = Field(default_factory=list)
    answer_text: str = ""
    value: float = 0.0
    status: str = "answered"
    reason: str = ""
    links: list[LinkInfo] = Field(default_factory=list)
    expansions: int = 0
    usage: LLMUsage = Field(default_factory=LLMUsage)
    latency_s: float = 0.0
    retrieved_labels: list[str] = Field(default_factory=list, description="Ranked (retrievers).")
    context: str | None = Field(
        default=None, description="The context returned for a client to read (ARK)."
    )
    trace: dict[str, Any] | None = None
    error: str | None = None
    partial: bool = False
    partial_reason: str = ""


Method = Callable[[BenchmarkQuestion, Graph], Awaitable[MethodResult]]


class MethodOptions(BaseModel):
    """How a run builds its method: the LLM (``offline``: none), and the strategy's own options
    (validated by its options model, so a misspelt one is an error)."""

    model_config = ConfigDict(extra="forbid")

    llm: str = "offline"
    model: str | None = None
    llm_options: dict[str, Any] = Field(
        default_factory=dict, description="base_url, timeout, max_retries, ..."
    )
    options: dict[str, Any] = Field(default_factory=dict)


def make_method(name: str, options: MethodOptions, services: Services) -> Method:
    """The registered strategy ``name`` as a benchmark method (an unknown name or option:
    ``InvalidInput``)."""
    strategy = get(name)
    parsed = services.options(strategy, options.options)
    llm_factory = None
    if options.llm != "offline":
        from tot_mcp.strategies.llm.factory import make_llm

        def llm_factory():
            return make_llm(options.llm, model=options.model, options=options.llm_options)

    async def run(question: BenchmarkQuestion, kg: Graph) -> MethodResult:
        call = Call.of(
            strategy,
            services,
            kg,
            question.text,
            parsed,
            llm_kind=options.llm,
            llm_factory=llm_factory,
        )
        started = time.perf_counter()
        out = await run_checked(strategy, call)
        ranked = out.results
        retriever = strategy.job != "answer"
        trace = out.trace()
        return MethodResult(
            answer_ids=[r.id for r in ranked],
            answer_labels=[r.label for r in ranked],
            answer_text=out.answer_text or ", ".join(r.label for r in ranked[:3]),
            value=out.value if out.value is not None else (ranked[0].score if ranked else 0.0),
            status=out.status if ranked or out.status != "answered" else "no_answer",
            reason=out.reason,
            links=out.links,
            expansions=int(trace.get("expansions", 0) or 0),
            usage=out.usage or call.usage(),
            latency_s=time.perf_counter() - started,
            retrieved_labels=[r.label for r in ranked] if retriever else [],
            context=out.context,
            trace=trace,
            error=out.error,
            partial=out.partial,
            partial_reason=out.partial_reason,
        )

    return run
