"""Adaptive rerank: multi-model dense retrieval with an AB-MCTS-style broaden/deepen loop.

After the adaptive branching idea of AB-MCTS (Inoue et al. 2025, "Wider or Deeper?"), applied to retrieval: start
from the weighted reciprocal-rank fusion of several embedding models' kNN results (all-MiniLM-L6-v2 and the
independent model2vec static model of ``tokenlearn-static-model``, each over faiss ``IndexFlatIP`` of the entity
descriptors). While the quality of the top candidates (mean of the top 3 primary scores) is below a threshold,
either **broaden** — perturb each query embedding with Gaussian noise σ, search again, merge — or **deepen** —
rescore the top-K with a stronger scorer: a cross-encoder if a local model path is given, else the LLM backend if
one is given, else the bi-encoder over each candidate's *full* verbalised neighbourhood. Which of the two is chosen
by an exploration rate ε that decays per iteration (ε_t = ε₀·decay^t, seeded RNG); the loop ends at the quality
threshold or after ``max_iterations``. The result says which deepening backend was used.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

import prompts
from kg_adapters.base import KnowledgeGraph
from strategies.indexes import GraphResources
from strategies.llm.base import LLM, LLMError
from strategies.llm.replies import extract_json
from strategies.local_graph import RetrievalUnavailable
from strategies.registry import Call, Progress, Strategy
from strategies.results import (
    RetrievedEntity,
    StrategyResult,
    check_query,
    render_ranked,
)

DeepenBackend = Literal["cross-encoder", "llm", "bi-encoder"]


class RerankConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    k: int = Field(default=50, ge=1, le=1000, description="kNN per model per search")
    top_k: int = Field(default=10, ge=1, le=500, description="Results returned")
    weights: dict[str, float] = Field(default_factory=lambda: {"minilm": 1.0, "static": 0.35})
    quality_threshold: float = Field(default=0.6, description="Stop once the top-3 mean primary score reaches it")
    max_iterations: int = Field(default=4, ge=0, le=50)
    exploration: float = Field(default=0.6, ge=0.0, le=1.0, description="ε₀: probability of broadening first")
    decay: float = Field(default=0.5, ge=0.0, le=1.0, description="ε is multiplied by this each iteration")
    sigma: float = Field(default=0.05, ge=0.0, le=1.0, description="Std-dev of the query-embedding noise")
    deepen_k: int = Field(default=20, ge=1, le=200, description="Candidates rescored when deepening")
    rrf_k: int = Field(default=60, ge=1)
    seed: int = 0
    cross_encoder_path: str | None = Field(default=None, description="Local sentence-transformers CrossEncoder dir")


class RerankIteration(BaseModel):
    iteration: int
    action: Literal["broaden", "deepen"]
    epsilon: float
    quality_before: float
    quality_after: float
    candidates: int
    deepen_backend: DeepenBackend | None = None


class RerankResult(StrategyResult):
    models: dict[str, float] = Field(description="Embedding models fused, with their weights")
    iterations: list[RerankIteration]
    deepen_backend: DeepenBackend | None = Field(description="Which scorer deepened, if any deepening happened")
    stopped: Literal["quality", "max_iterations", "no_candidates"]
    quality: float


class _Candidates:
    def __init__(self) -> None:
        self.fused: dict[int, float] = {}
        self.primary: dict[int, float] = {}  # MiniLM cosine with the *original* query, or the deepened score
        self.deepened: dict[int, float] = {}

    def add_run(self, hits: list[tuple[int, float]], weight: float, rrf_k: int) -> None:
        for rank, (i, _) in enumerate(hits):
            self.fused[i] = self.fused.get(i, 0.0) + weight / (rrf_k + rank + 1)

    def ranking(self) -> list[int]:
        deep = sorted(self.deepened, key=lambda i: (-self.deepened[i], -self.fused.get(i, 0.0)))
        rest = sorted((i for i in self.fused if i not in self.deepened), key=lambda i: -self.fused[i])
        return deep + rest

    def quality(self, n: int = 3) -> float:
        top = self.ranking()[:n]
        if not top:
            return 0.0
        return float(np.mean([self.deepened.get(i, self.primary.get(i, 0.0)) for i in top]))


def _perturb(q: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    v = q + rng.normal(0.0, sigma, size=q.shape).astype(np.float32)
    return (v / max(float(np.linalg.norm(v)), 1e-9)).astype(np.float32)


async def _deepen(res: GraphResources, query: str, q: np.ndarray, ids: list[int], cfg: RerankConfig,
                  llm: LLM | None) -> tuple[list[float], DeepenBackend]:
    graph = res.graph
    texts = [graph.descriptor(i, neighbours=30, max_chars=1200) for i in ids]
    if cfg.cross_encoder_path:
        from sentence_transformers import CrossEncoder

        try:
            model = res.models.cross_encoder(cfg.cross_encoder_path)
        except (OSError, ValueError) as e:
            raise RetrievalUnavailable(f"cannot load cross-encoder from {cfg.cross_encoder_path!r}: {e}") from e
        assert isinstance(model, CrossEncoder)
        logits = model.predict([(query, t) for t in texts], show_progress_bar=False)
        return [1.0 / (1.0 + math.exp(-float(x))) for x in np.ravel(logits)], "cross-encoder"
    if llm is not None:
        scores = await llm_candidate_scores(llm, query, [(graph.label(i), t[:300]) for i, t in zip(ids, texts)])
        if scores is not None:
            return scores, "llm"
        # unusable LLM answer: documented fallback to the bi-encoder
    vecs = res.models.embedder().encode(texts)
    return [float(x) for x in vecs @ q], "bi-encoder"


async def adaptive_rerank(
    kg: KnowledgeGraph,
    query: str,
    res: GraphResources,
    config: RerankConfig | None = None,
    llm: LLM | None = None,
    progress: Progress | None = None,
) -> RerankResult:
    t0 = time.perf_counter()
    query = check_query(query, kg.limits.max_query_chars)
    cfg = config or RerankConfig()
    graph = res.graph
    rng = np.random.default_rng(cfg.seed)
    models: dict[str, tuple[np.ndarray, object]] = {}
    if cfg.weights.get("minilm", 0) > 0:
        models["minilm"] = (res.models.embedder().encode_one(query), res.dense())
    if cfg.weights.get("static", 0) > 0:
        models["static"] = (res.models.static_model().encode([query])[0], res.static_dense())
    unknown = set(cfg.weights) - {"minilm", "static"}
    if unknown:
        raise RetrievalUnavailable(f"unknown embedding model(s) {sorted(unknown)}; available: minilm, static")
    if not models:
        raise RetrievalUnavailable("every model weight is 0: nothing to retrieve with")
    primary_q = models["minilm"][0] if "minilm" in models else None
    primary_vecs = res.dense().vectors if primary_q is not None else None
    cands = _Candidates()

    def search(weight_scale: float, perturb: bool) -> None:
        for name, (q, index) in models.items():
            qq = _perturb(q, cfg.sigma, rng) if perturb else q
            hits = index.search(qq, cfg.k)  # type: ignore[attr-defined]
            cands.add_run(hits, cfg.weights[name] * weight_scale, cfg.rrf_k)
            for i, s in hits:
                if i not in cands.primary:
                    cands.primary[i] = float(primary_vecs[i] @ primary_q) if primary_q is not None else s

    search(1.0, perturb=False)
    iterations: list[RerankIteration] = []
    backend_used: DeepenBackend | None = None
    stopped: Literal["quality", "max_iterations", "no_candidates"] = "max_iterations"
    for it in range(cfg.max_iterations + 1):
        quality = cands.quality()
        if not cands.fused:
            stopped = "no_candidates"
            break
        if quality >= cfg.quality_threshold:
            stopped = "quality"
            break
        if it == cfg.max_iterations:
            break
        eps = cfg.exploration * cfg.decay**it
        todo = [i for i in cands.ranking()[: cfg.deepen_k] if i not in cands.deepened]
        action: Literal["broaden", "deepen"] = "broaden" if (rng.random() < eps or not todo) else "deepen"
        backend = None
        if action == "broaden":
            search(0.5, perturb=True)
        else:
            scores, backend = await _deepen(res, query, primary_q if primary_q is not None else
                                            res.models.embedder().encode_one(query), todo, cfg, llm)
            backend_used = backend
            for i, s in zip(todo, scores):
                cands.deepened[i] = s
        iterations.append(RerankIteration(iteration=it, action=action, epsilon=round(eps, 4),
                                          quality_before=round(quality, 4), quality_after=round(cands.quality(), 4),
                                          candidates=len(cands.fused), deepen_backend=backend))
        if progress is not None:
            await progress(it + 1, cfg.max_iterations, f"iteration {it}: {action}")
    ranking = cands.ranking()[: cfg.top_k]
    results = [
        RetrievedEntity(id=graph.entity_id(i), label=graph.label(i),
                        score=round(cands.deepened.get(i, cands.fused.get(i, 0.0)), 6),
                        source="rerank" if i in cands.deepened else "fusion")
        for i in ranking
    ]
    return RerankResult(
        query=query, kg=kg.name, results=results, models={m: cfg.weights[m] for m in models}, iterations=iterations,
        deepen_backend=backend_used, stopped=stopped, quality=round(cands.quality(), 4),
        seconds=round(time.perf_counter() - t0, 4),
    )


# -- deepening with the LLM -----------------------------------------------------------------------------------
async def llm_candidate_scores(llm: LLM, query: str, candidates: Sequence[tuple[str, str]]) -> list[float] | None:
    """0–1 scores for ``(label, descriptor)`` candidates from the LLM; None when the answer is unusable."""
    listing = "\n".join(f"{k}. {label} — {desc}" for k, (label, desc) in enumerate(candidates, 1))
    try:
        text = await llm.complete(prompts.render("rerank_deepen", query=query, candidates=listing), max_tokens=400,
                                  temperature=0.0)
    except LLMError:
        return None
    data = extract_json(text)
    if not isinstance(data, list):
        return None
    scores = [0.0] * len(candidates)
    seen = False
    for item in data:
        if isinstance(item, dict):
            try:
                n, s = int(item["n"]), float(item["score"])
            except (KeyError, TypeError, ValueError):
                continue
            if 1 <= n <= len(candidates):
                scores[n - 1] = max(0.0, min(10.0, s)) / 10.0
                seen = True
    return scores if seen else None


# -- as a registered strategy -----------------------------------------------------------------------------------
class RerankOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    top_k: int = Field(default=10, ge=1, le=200)
    max_iterations: int = Field(default=4, ge=0, le=20)
    quality_threshold: float = Field(default=0.6, description="Stop when the top-3 mean score reaches this")
    exploration: float = Field(default=0.6, ge=0, le=1, description="Initial probability of broadening")
    sigma: float = Field(default=0.05, ge=0, le=1, description="Noise added to the query embedding")
    deepen: Literal["auto", "llm", "bi-encoder"] = Field(
        default="auto", description="auto: the cross-encoder if [retrieval] cross_encoder_path is set, else the "
                                    "bi-encoder; llm: the configured LLM")


async def _run_rerank(call: Call) -> RerankResult:
    o: RerankOptions = call.options  # type: ignore[assignment]
    res = await call.resources()
    cfg = RerankConfig(top_k=o.top_k, max_iterations=o.max_iterations, quality_threshold=o.quality_threshold,
                       exploration=o.exploration, sigma=o.sigma,
                       cross_encoder_path=call.services.cross_encoder_path if o.deepen == "auto" else None)
    return await adaptive_rerank(call.kg, call.query, res, cfg, llm=call.llm() if o.deepen == "llm" else None,
                                 progress=call.progress)


def _render_rerank(out: RerankResult) -> str:
    head = (f"stopped: {out.stopped} after {len(out.iterations)} iteration(s) "
            f"({', '.join(i.action for i in out.iterations) or 'none'}); deepened with {out.deepen_backend}")
    return render_ranked(f"Reranked results for {out.query!r}", out.results, [head])


RERANK = Strategy(
    name="rerank", job="linking", options=RerankOptions, run=_run_rerank, render=_render_rerank,
    result=RerankResult, needs=("dense", "static"), tool="rerank_retrieve", llm_option="deepen",
    title="Adaptive multi-model dense retrieval with broaden/deepen rerank",
    summary="Dense retrieval fused over two embedding models, refined while quality is low by broadening (noisy "
            "query re-search) or deepening (rescoring the top candidates).",
    reference="AB-MCTS (Inoue et al. 2025, 'Wider or Deeper?') applied to retrieval",
)
