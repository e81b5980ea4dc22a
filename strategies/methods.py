"""Named question-answering methods that ``tot-search --method`` can run side by side on one benchmark.

A method is built once per run by its factory (``(MethodOptions, Services) -> Method``) and then called per
question: ``await method(question, kg) -> MethodResult``. The question it receives is
:meth:`BenchmarkQuestion.public` — gold answers stripped — so no method can peek. Retrieval-style methods fill
``retrieved`` (ranked entity IDs) and get Recall@10 reported next to Hits@1.

To add a method, write its factory anywhere and add one line to ``_FACTORIES`` (``"name": "module:function"``);
the module is imported only when the method is chosen.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kg_adapters.base import KnowledgeGraph
from strategies.llm.base import LLMUsage


class BenchmarkQuestion(BaseModel):
    """One question as the benchmark gives it. ``text`` is what the system sees (topic entity in ``[...]``)."""

    id: str
    text: str
    answers: list[str] = Field(default_factory=list, description="Gold answer labels (empty in public copies).")
    topic: str | None = Field(default=None, description="Topic entity label, when the benchmark names it.")
    source: str = ""

    def public(self) -> "BenchmarkQuestion":
        """The copy a method may see: no gold answers."""
        return self.model_copy(update={"answers": []})


class MethodResult(BaseModel):
    answer_ids: list[str] = Field(default_factory=list, description="Ranked answer entity IDs.")
    answer_labels: list[str] = Field(default_factory=list)
    answer_text: str = ""
    value: float = 0.0
    status: str = "answered"
    expansions: int = 0
    usage: LLMUsage = Field(default_factory=LLMUsage)
    latency_s: float = 0.0
    retrieved: list[str] = Field(default_factory=list, description="Ranked retrieved entity IDs (retrievers).")
    retrieved_labels: list[str] = Field(default_factory=list)
    trace: dict[str, Any] | None = None
    error: str | None = None


Method = Callable[[BenchmarkQuestion, KnowledgeGraph], Awaitable[MethodResult]]


class MethodOptions(BaseModel):
    """Knobs shared by methods; each uses what applies to it (``extra`` carries method-specific ones)."""

    model_config = ConfigDict(extra="forbid")

    llm: str = "offline"
    model: str | None = None
    k: int = 3
    max_depth: int = 7
    tau: float = 0.8
    max_expansions: int = 25
    max_edges_per_expansion: int = 50
    extra: dict[str, Any] = Field(default_factory=dict)


class Services:
    """Shared, lazily created resources for one run: every configured KG, all of them linked as one ``graph``
    (one per run, so its link cache and the policies' statistics carry over between questions), and the sentence
    embedder."""

    def __init__(
        self,
        kgs: Sequence[KnowledgeGraph],
        embedder_factory: Callable[[], Any] | None = None,
        graph: KnowledgeGraph | None = None,
    ) -> None:
        self.kgs = list(kgs)
        self._graph = graph
        self._embedder_factory = embedder_factory
        self._embedder: Any = None
        self._lock = asyncio.Lock()
        self.shared: dict = {}  # state policies keep between questions of this run (see factory.make_policy)

    @property
    def graph(self) -> KnowledgeGraph:
        if self._graph is None:
            from kg_adapters.linked import LinkedKG

            self._graph = LinkedKG.of(self.kgs)
        return self._graph

    async def embedder(self) -> Any:
        """The shared embedder (loaded once, in a worker thread: ~6 s)."""
        async with self._lock:
            if self._embedder is None:
                factory = self._embedder_factory
                if factory is None:
                    from strategies.embeddings import Embedder

                    factory = Embedder
                self._embedder = await _in_daemon_thread(factory)
        return self._embedder


async def _in_daemon_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` in a daemon thread: unlike ``asyncio.to_thread``, whose executor ``asyncio.run`` joins on the way
    out, a Ctrl-C during a slow load (the embedder, ~6 s) does not wait for the load to finish."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not fut.done():
            fut.set_result(value) if ok else fut.set_exception(value)

    def work() -> None:
        try:
            ok, value = True, fn()
        except BaseException as e:  # noqa: BLE001 - handed to the awaiting task, which re-raises it
            ok, value = False, e
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:  # the loop is gone: the run was interrupted meanwhile
            pass

    threading.Thread(target=work, name="tot-load", daemon=True).start()
    return await fut


MethodFactory = Callable[[MethodOptions, Services], Method]

_FACTORIES: dict[str, str] = {
    "tot": "strategies.methods:tot_method",
    "chain": "strategies.methods:chain_method",
    "ark": "strategies.retrieval_methods:ark_method",
    "bfs": "strategies.retrieval_methods:bfs_method",
    "dfs": "strategies.retrieval_methods:dfs_method",
    "router": "strategies.retrieval_methods:router_method",
    "beam": "strategies.retrieval_methods:beam_method",
    "rerank": "strategies.retrieval_methods:rerank_method",
}


def available_methods() -> list[str]:
    return list(_FACTORIES)


def get_method_factory(name: str) -> MethodFactory:
    target = _FACTORIES.get(name)
    if target is None:
        raise KeyError(f"unknown method {name!r}; available: {', '.join(_FACTORIES)}")
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


# -- Tree-of-Traversals ---------------------------------------------------------------------------------------------
def tot_method(options: MethodOptions, services: Services) -> Method:
    """Tree-of-Traversals with the chosen policy (k = branching factor)."""
    from strategies.llm import factory
    from strategies.tot.asm import AsmConfig, TraversalASM
    from strategies.tot.search import SearchConfig, TreeSearch

    config = SearchConfig(
        k=options.k, max_depth=options.max_depth, tau=options.tau, max_expansions=options.max_expansions
    )
    asm_config = AsmConfig(max_edges_per_expansion=options.max_edges_per_expansion)

    async def run(question: BenchmarkQuestion, kg: KnowledgeGraph) -> MethodResult:
        graph = services.graph  # every KG of the run, linked (the primary ``kg`` is one of them)
        embedder = await services.embedder() if factory.needs_embedder(options.llm) else None
        policy = factory.make_policy(options.llm, graph, model=options.model, embedder=embedder, options=options.extra,
                                     shared=services.shared)
        started = time.perf_counter()
        try:
            result = await TreeSearch(TraversalASM(graph, asm_config), policy, config).run(question.text)
        finally:
            await policy.aclose()
        return MethodResult(
            answer_ids=result.answer.entity_ids,
            answer_labels=result.answer.labels,
            answer_text=result.answer.text,
            value=result.value,
            status=result.status,
            expansions=result.expansions,
            usage=result.usage,
            latency_s=time.perf_counter() - started,
            trace=result.model_dump(mode="json", exclude={"subgraph"}),
            error=result.error,
        )

    return run


def chain_method(options: MethodOptions, services: Services) -> Method:
    """Chain-of-Traversals: Tree-of-Traversals with k = 1."""
    return tot_method(options.model_copy(update={"k": 1}), services)
