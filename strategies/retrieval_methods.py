"""``tot-search --method`` factories for the composite retrieval strategies: ark, router, beam, rerank, bfs, dfs.

Register them in :data:`strategies.methods._FACTORIES` as ``"ark": "strategies.retrieval_methods:ark_method"``
and so on (see :data:`FACTORIES`). Each factory builds one :class:`RetrievalService` per run (indexes are built on
the first question and cached on disk) and fills ``retrieved`` so the runner reports Recall@10 next to Hits@1.
``--llm offline`` (the default) uses the offline judges; any other backend name is passed to
``strategies.llm.factory.make_llm`` and used for ARK's judge, the router's analysis and rerank's deepening.

Method-specific knobs come from ``MethodOptions.extra`` (e.g. ``{"beam": 3}``, ``{"max_iterations": 4}``).
"""

from __future__ import annotations

import time
from typing import Any

from kg_adapters.base import KnowledgeGraph
from strategies.methods import BenchmarkQuestion, Method, MethodOptions, MethodResult, Services
from strategies.retrieval_common import RetrievalService, RetrievedEntity

FACTORIES = {
    name: f"strategies.retrieval_methods:{name}_method" for name in ("ark", "router", "beam", "rerank", "bfs", "dfs")
}


def _service(services: Services, options: MethodOptions) -> RetrievalService:
    """One RetrievalService per ``Services`` and cache dir, so methods run side by side share their indexes."""
    key = f"_retrieval_service:{options.extra.get('cache_dir')}"
    svc = getattr(services, key, None)
    if svc is None:
        svc = RetrievalService(cache_dir=options.extra.get("cache_dir"))
        setattr(services, key, svc)
    return svc


async def _prepare(svc: RetrievalService, services: Services) -> None:
    if svc._embedder is None:
        svc.use_embedder(await services.embedder())


def _llm(options: MethodOptions):
    if options.llm == "offline":
        return None
    from strategies.llm.factory import make_llm

    return make_llm(options.llm, model=options.model, options=options.extra)


def _result(results: list[RetrievedEntity], started: float, trace: dict[str, Any], llm=None,
            before=None) -> MethodResult:
    from strategies.llm.base import LLMUsage

    usage = llm.usage.since(before) if llm is not None and before is not None else LLMUsage()
    return MethodResult(
        answer_ids=[r.id for r in results], answer_labels=[r.label for r in results],
        answer_text=", ".join(r.label for r in results[:3]), value=results[0].score if results else 0.0,
        status="answered" if results else "no_answer", usage=usage, latency_s=time.perf_counter() - started,
        retrieved=[r.id for r in results], retrieved_labels=[r.label for r in results], trace=trace,
    )


def ark_method(options: MethodOptions, services: Services) -> Method:
    from strategies.ark import ArkConfig, ark_search
    from strategies.judges import LLMArkJudge

    svc = _service(services, options)
    llm = _llm(options)
    config = ArkConfig(**{k: v for k, v in options.extra.items() if k in ArkConfig.model_fields})

    async def run(q: BenchmarkQuestion, kg: KnowledgeGraph) -> MethodResult:
        await _prepare(svc, services)
        started, before = time.perf_counter(), llm.usage.snapshot() if llm else None
        out = await ark_search(kg, q.text, svc.resources(kg), judge=LLMArkJudge(llm) if llm else None, config=config)
        return _result(out.results, started, out.model_dump(mode="json", include={"history", "judge", "seeds"}),
                       llm, before)

    return run


def _fixed(kind: str):
    def factory(options: MethodOptions, services: Services) -> Method:
        from strategies.ark import fixed_bfs, fixed_dfs

        svc = _service(services, options)

        async def run(q: BenchmarkQuestion, kg: KnowledgeGraph) -> MethodResult:
            await _prepare(svc, services)
            started = time.perf_counter()
            res = svc.resources(kg)
            out = await (fixed_bfs(kg, q.text, res, depth=2) if kind == "bfs" else fixed_dfs(kg, q.text, res, depth=5))
            return _result(out.results, started, {"method": out.method, "visited": out.visited})

        return run

    return factory


bfs_method = _fixed("bfs")
dfs_method = _fixed("dfs")


def router_method(options: MethodOptions, services: Services) -> Method:
    from strategies.judges import LLMQueryAnalyser, RuleQueryAnalyser
    from strategies.router import route_query

    svc = _service(services, options)
    llm = _llm(options)

    async def run(q: BenchmarkQuestion, kg: KnowledgeGraph) -> MethodResult:
        await _prepare(svc, services)
        started, before = time.perf_counter(), llm.usage.snapshot() if llm else None
        res = svc.resources(kg)
        rules = RuleQueryAnalyser(res.relevance())
        out = await route_query(kg, q.text, res, analyser=LLMQueryAnalyser(llm, rules) if llm else rules)
        return _result(out.results, started, out.model_dump(mode="json", include={"analysis", "route", "parts"}),
                       llm, before)

    return run


def beam_method(options: MethodOptions, services: Services) -> Method:
    """Deep GraphRAG beam search; ``extra``: ``beam`` (3), ``top_k`` (10), ``anchor`` (True: the communities of
    the entities the question names are entered first; False: descent by cosine only)."""
    from strategies.deep_graphrag import beam_search, hierarchy_for, topic_anchors

    svc = _service(services, options)
    beam = int(options.extra.get("beam", 3))
    anchor = bool(options.extra.get("anchor", True))

    async def run(q: BenchmarkQuestion, kg: KnowledgeGraph) -> MethodResult:
        await _prepare(svc, services)
        res = svc.resources(kg)
        h = hierarchy_for(res, progress=True)  # first question of a KG: build or load from the cache
        started = time.perf_counter()
        anchors = await topic_anchors(kg, res, q.text) if anchor else []
        out = beam_search(kg, q.text, res, h, beam=beam, top_k=int(options.extra.get("top_k", 10)), anchors=anchors)
        return _result(list(out.results), started, {"l0": [c.id for c in out.l0], "l1": [c.id for c in out.l1],
                                                    "anchors": anchors, "scanned": out.scanned_entities,
                                                    "vectors": out.scanned_vectors})

    return run


def rerank_method(options: MethodOptions, services: Services) -> Method:
    from strategies.rerank import RerankConfig, adaptive_rerank

    svc = _service(services, options)
    llm = _llm(options)
    config = RerankConfig(**{k: v for k, v in options.extra.items() if k in RerankConfig.model_fields})

    async def run(q: BenchmarkQuestion, kg: KnowledgeGraph) -> MethodResult:
        await _prepare(svc, services)
        res = svc.resources(kg)
        res.dense(progress=True)
        started, before = time.perf_counter(), llm.usage.snapshot() if llm else None
        out = await adaptive_rerank(kg, q.text, res, config, llm=llm)
        return _result(out.results, started,
                       out.model_dump(mode="json", include={"iterations", "deepen_backend", "stopped", "quality"}),
                       llm, before)

    return run
