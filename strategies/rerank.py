"""Adaptive rerank — entity linking for hard mentions: the entity a question is about when the
mention is not marked, is misspelt or is only partly given.

After the adaptive branching of AB-MCTS (Inoue et al. 2025, "Wider or Deeper?"), applied to linking:

* **Candidates from several models, fused** by weighted reciprocal rank: (a) lexical — every short
  span of the question (1–4 words, not only stop words) looked up in the KG's own fuzzy label index
  (``search_entities``: exact, then trigram/edit-distance matching, so "Jya Roach" still finds Jay
  Roach); (b) MiniLM and (c) the independent model2vec static model, each by cosine between the
  question and every entity's descriptor (label, description, verbalised neighbourhood), which also
  catches a name given only in part.
* **The second stage** — what a cross-encoder would do, with no cross-encoder weights on PyPI to
  ship — scores each candidate on features that a fused rank cannot see: how closely its label
  matches a span of the question (character-level similarity), how specific that span is (longer
  mentions say more), whether the span names a *relation* rather than an entity ("director" is
  usually the question's relation word, not its topic: the span's similarity to the KG's relation
  phrases), and whether the candidate's own relations fit the rest of the question (a director's
  entity has "directed by" edges). A local CrossEncoder (``[retrieval] cross_encoder_path``) or the
  LLM (``deepen="llm"``) replaces it when configured.
* **The adaptive loop**: while the best second-stage score is below ``quality_threshold``, either
  **broaden** — perturb each query embedding with Gaussian noise σ and look spans up with more
  results each — or **deepen** — score the next ``deepen_k`` fused candidates with the second stage,
  chosen by an exploration rate that decays per iteration (ε_t = ε₀·decay^t, seeded RNG); it ends at
  the threshold or after ``max_iterations``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from rapidfuzz import fuzz

from tot_mcp import prompts
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import KGError
from tot_mcp.kg_adapters.text import key
from tot_mcp.strategies.indexes import GraphResources
from tot_mcp.strategies.llm.base import LLM, LLMError
from tot_mcp.strategies.llm.replies import extract_json
from tot_mcp.kg_adapters.local_graph import LocalGraph
from tot_mcp.strategies.global_view import RetrievalUnavailable
from tot_mcp.strategies.registry import Call, Progress, Strategy
from tot_mcp.strategies.relevance import STOPWORDS, Span, query_spans
from tot_mcp.strategies.results import (
    RetrievedEntity,
    StrategyResult,
    check_query,
    render_ranked,
)

DeepenBackend = Literal["cross-encoder", "llm", "features"]
MODELS = ("lexical", "minilm", "static")


class RerankOptions(BaseModel):  # the registered strategy's options: what a client may set
    model_config = ConfigDict(extra="forbid")

    top_k: int = Field(default=10, ge=1, le=200)
    max_iterations: int = Field(default=3, ge=0, le=20)
    quality_threshold: float = Field(
        default=0.85, description="Stop when the best candidate's score reaches this"
    )
    exploration: float = Field(
        default=0.5, ge=0, le=1, description="Initial probability of broadening"
    )
    sigma: float = Field(default=0.05, ge=0, le=1, description="Noise added to the query embedding")
    deepen: Literal["auto", "llm", "features"] = Field(
        default="auto",
        description="The second stage. auto: a local cross-encoder if [retrieval] "
        "cross_encoder_path is set, else the feature scorer; llm: the configured LLM",
    )


class RerankConfig(RerankOptions):
    """Every knob of :func:`adaptive_rerank`: the options, and those only code sets (``deepen`` is
    read by the strategy, which hands :func:`adaptive_rerank` the LLM)."""

    k: int = Field(default=30, ge=1, le=1000, description="Candidates per model per search")
    span_results: int = Field(
        default=5, ge=1, le=50, description="Label matches looked up per question span"
    )
    weights: dict[str, float] = Field(
        default_factory=lambda: {"lexical": 1.0, "minilm": 0.5, "static": 0.25}
    )
    decay: float = Field(
        default=0.5, ge=0.0, le=1.0, description="ε is multiplied by this each iteration"
    )
    deepen_k: int = Field(
        default=20, ge=1, le=200, description="Candidates the second stage scores per deepening"
    )
    rrf_k: int = Field(default=60, ge=1)
    seed: int = 0
    cross_encoder_path: str | None = Field(
        default=None, description="Local sentence-transformers CrossEncoder dir"
    )


class RerankIteration(BaseModel):
    iteration: int
    action: Literal["broaden", "deepen"]
    epsilon: float
    quality_before: float
    quality_after: float
    candidates: int
    deepen_backend: DeepenBackend | None = None


class RerankResult(StrategyResult):
    models: dict[str, float] = Field(description="Candidate models fused, with their weights")
    iterations: list[RerankIteration]
    deepen_backend: DeepenBackend | None = Field(
        description="Which second stage scored the candidates"
    )
    stopped: Literal["quality", "max_iterations", "no_candidates"]
    quality: float


# -- candidates ------------------------------------------------------------------------------------
class _Candidates:
    def __init__(self) -> None:
        self.fused: dict[int, float] = {}
        self.scored: dict[int, float] = {}  # second-stage scores

    def add_run(self, hits: Sequence[int], weight: float, rrf_k: int) -> None:
        for rank, i in enumerate(dict.fromkeys(hits)):
            self.fused[i] = self.fused.get(i, 0.0) + weight / (rrf_k + rank + 1)

    def ranking(self) -> list[int]:
        return (
            sorted(self.scored, key=lambda i: (-self.scored[i], -self.fused.get(i, 0.0)))
            + self.unscored()
        )

    def unscored(self) -> list[int]:
        return [i for i in sorted(self.fused, key=lambda i: -self.fused[i]) if i not in self.scored]

    def quality(self) -> float:
        return max(self.scored.values(), default=0.0)


def mention_spans(query: str) -> list[Span]:
    """Spans that could name an entity: 1–4 words, not starting or ending with a stop word."""
    return [
        s
        for s in query_spans(query, max_len=4)
        if s.text.split()[0] not in STOPWORDS and s.text.split()[-1] not in STOPWORDS
    ]


async def _lexical(kg: Graph, graph: LocalGraph, spans: Sequence[Span], per_span: int) -> list[int]:
    """Entities whose label matches a span, best match first (the KG's fuzzy label index per
    span)."""
    scored: dict[int, float] = {}
    for span in spans:
        try:
            matches = await kg.search_entities(span.text, limit=per_span)
        except KGError:  # a span the index refuses (too short, only symbols) is just not a mention
            continue
        for m in matches:
            i = graph.node_of(m.entity.id)
            if i is not None and not graph.is_literal(i):
                scored[i] = max(scored.get(i, 0.0), float(m.score))
    return sorted(scored, key=lambda i: -scored[i])


def _perturb(q: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    v = q + rng.normal(0.0, sigma, size=q.shape).astype(np.float32)
    return (v / max(float(np.linalg.norm(v)), 1e-9)).astype(np.float32)


# -- the second stage ------------------------------------------------------------------------------
@dataclass
class _Question:
    spans: list[Span]
    relation_like: np.ndarray  # per span: 1.0 if it overlaps the question's relation word, else 0.0
    centred: np.ndarray  # spans × relations


def _question(res: GraphResources, query: str) -> _Question:
    sc = res.relevance().scorer(query)
    spans = sc.spans
    rel_like = np.zeros(len(spans), np.float32)
    short = [k for k, sp in enumerate(spans) if sp.end - sp.start <= 2]
    if sc.centred.size and short:
        # the short span most like a relation of the KG names the relation asked about: a span
        # overlapping it is the least likely mention (1.0); one that does not is unpenalised (0.0)
        best = spans[max(short, key=lambda k: float(sc.centred[k].max()))]
        rel_like = np.array(
            [1.0 if sp.start < best.end and best.start < sp.end else 0.0 for sp in spans],
            np.float32,
        )
    return _Question(spans, rel_like, sc.centred)


def feature_scores(graph: LocalGraph, q: _Question, ids: Sequence[int]) -> list[float]:
    """The second stage: label-to-span similarity, discounted when the span names a relation, plus
    the span's specificity and how well the candidate's relations fit the rest of the question.
    0..~1.3."""
    out = []
    mention = [(k, s) for k, s in enumerate(q.spans) if s.text.split()[0] not in STOPWORDS]
    for i in ids:
        label = key(graph.label(i))
        bare = _without_article(label)
        best = 0.0
        for k, span in mention:
            sim = max(fuzz.ratio(span.text, label), fuzz.ratio(span.text, bare)) / 100.0
            if sim < 0.5:
                continue
            specific = min(1.0, len(span.text.replace(" ", "")) / 10.0)
            relation_like = float(q.relation_like[k])  # 0.0 or 1.0, one per span
            fit = _context_fit(graph, q, i, span)
            best = max(best, sim - 0.5 * relation_like + 0.3 * specific + 0.3 * fit)
        out.append(round(best, 6))
    return out


def _without_article(label: str) -> str:
    """``the package`` → ``package``: spans never start with a stop word, so compare labels without
    theirs too."""
    first, _, rest = label.partition(" ")
    return rest if rest and first in STOPWORDS else label


def _context_fit(graph: LocalGraph, q: _Question, i: int, mention: Span) -> float:
    """Best centred similarity between the candidate's relations and a question span outside the
    mention."""
    rels = list(graph.out[i]) + list(graph.inc[i])
    if not rels or q.centred.size == 0:
        return 0.0
    rows = [k for k, s in enumerate(q.spans) if s.end <= mention.start or s.start >= mention.end]
    if not rows:
        return 0.0
    return max(0.0, float(q.centred[np.ix_(rows, rels)].max()))


async def _deepen(
    res: GraphResources,
    query: str,
    q: _Question,
    ids: list[int],
    cfg: RerankConfig,
    llm: LLM | None,
) -> tuple[list[float], DeepenBackend]:
    graph = res.graph
    if cfg.cross_encoder_path:
        try:
            model = res.models.cross_encoder(cfg.cross_encoder_path)
        except (OSError, ValueError) as e:
            raise RetrievalUnavailable(
                f"cannot load cross-encoder from {cfg.cross_encoder_path!r}: {e}"
            ) from e
        texts = [graph.descriptor(i, neighbours=12, max_chars=400) for i in ids]
        logits = model.predict([(query, t) for t in texts], show_progress_bar=False)
        return [1.0 / (1.0 + math.exp(-float(x))) for x in np.ravel(logits)], "cross-encoder"
    if llm is not None:
        texts = [graph.descriptor(i, neighbours=12, max_chars=300) for i in ids]
        scores = await llm_candidate_scores(
            llm, query, [(graph.label(i), t) for i, t in zip(ids, texts)]
        )
        if scores is not None:
            return scores, "llm"
        # unusable LLM answer: documented fallback to the feature scorer
    return feature_scores(graph, q, ids), "features"


# -- the loop --------------------------------------------------------------------------------------
async def adaptive_rerank(
    kg: Graph,
    query: str,
    res: GraphResources,
    config: RerankConfig | None = None,
    llm: LLM | None = None,
    progress: Progress | None = None,
) -> RerankResult:
    t0 = time.perf_counter()
    query = check_query(query, kg.limits.max_query_chars)
    cfg = config or RerankConfig()
    unknown = set(cfg.weights) - set(MODELS)
    if unknown:
        raise RetrievalUnavailable(
            f"unknown candidate model(s) {sorted(unknown)}; available: {', '.join(MODELS)}"
        )
    weights = {m: w for m, w in cfg.weights.items() if w > 0}
    if not weights:
        raise RetrievalUnavailable("every model weight is 0: nothing to retrieve with")
    graph = res.graph
    rng = np.random.default_rng(cfg.seed)
    dense: dict[str, tuple[np.ndarray, object]] = {}
    if "minilm" in weights:
        dense["minilm"] = (res.models.embedder().encode_one(query), res.dense())
    if "static" in weights:
        dense["static"] = (res.models.static_model().encode([query])[0], res.static_dense())
    plain = query.replace("[", " ").replace(
        "]", " "
    )  # a marked mention is a mention like any other here
    question = _question(res, plain)
    spans = mention_spans(plain)
    cands = _Candidates()

    async def search(scale: float, perturb: bool, per_span: int) -> None:
        if "lexical" in weights:
            cands.add_run(
                await _lexical(kg, graph, spans, per_span), weights["lexical"] * scale, cfg.rrf_k
            )
        for name, (q, index) in dense.items():
            qq = _perturb(q, cfg.sigma, rng) if perturb else q
            hits = [i for i, _ in index.search(qq, cfg.k) if not graph.is_literal(i)]  # type: ignore[attr-defined]
            cands.add_run(hits, weights[name] * scale, cfg.rrf_k)

    async def deepen() -> DeepenBackend | None:
        todo = cands.unscored()[: cfg.deepen_k]
        if not todo:
            return None
        scores, backend = await _deepen(res, query, question, todo, cfg, llm)
        cands.scored.update(zip(todo, scores))
        return backend

    await search(1.0, perturb=False, per_span=cfg.span_results)
    backend_used = await deepen()
    iterations: list[RerankIteration] = []
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
        action: Literal["broaden", "deepen"] = (
            "broaden" if (rng.random() < eps or not cands.unscored()) else "deepen"
        )
        if action == "broaden":
            await search(0.5, perturb=True, per_span=cfg.span_results * 2)
        backend = await deepen()  # after broadening too: what it found is scored like the rest
        backend_used = backend or backend_used
        iterations.append(
            RerankIteration(
                iteration=it,
                action=action,
                epsilon=round(eps, 4),
                quality_before=round(quality, 4),
                quality_after=round(cands.quality(), 4),
                candidates=len(cands.fused),
                deepen_backend=backend,
            )
        )
        if progress is not None:
            await progress(it + 1, cfg.max_iterations, f"iteration {it}: {action}")
    results = [
        RetrievedEntity(
            id=graph.entity_id(i),
            label=graph.label(i),
            score=round(cands.scored.get(i, cands.fused.get(i, 0.0)), 6),
            source="rerank" if i in cands.scored else "fusion",
        )
        for i in cands.ranking()[: cfg.top_k]
    ]
    return RerankResult(
        query=query,
        kg=kg.name,
        results=results,
        status="answered" if results else "no_answer",
        models=weights,
        iterations=iterations,
        deepen_backend=backend_used,
        stopped=stopped,
        quality=round(cands.quality(), 4),
        seconds=round(time.perf_counter() - t0, 4),
    )


# -- deepening with the LLM ------------------------------------------------------------------------
async def llm_candidate_scores(
    llm: LLM, query: str, candidates: Sequence[tuple[str, str]]
) -> list[float] | None:
    """0–1 scores for ``(label, descriptor)`` candidates from the LLM; None when the answer is
    unusable."""
    listing = "\n".join(f"{k}. {label} — {desc}" for k, (label, desc) in enumerate(candidates, 1))
    try:
        text = await llm.complete(
            prompts.render("rerank_deepen", query=query, candidates=listing),
            max_tokens=400,
            temperature=0.0,
        )
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


# -- as a registered strategy ----------------------------------------------------------------------
async def _run_rerank(call: Call) -> RerankResult:
    o: RerankOptions = call.options  # type: ignore[assignment]
    res = await call.resources()
    crosser = call.services.cross_encoder_path if o.deepen == "auto" else None
    cfg = RerankConfig(**o.model_dump(), cross_encoder_path=crosser)
    return await adaptive_rerank(
        call.kg,
        call.query,
        res,
        cfg,
        llm=call.llm() if o.deepen == "llm" else None,
        progress=call.progress,
    )


def _render_rerank(out: RerankResult) -> str:
    head = (
        f"stopped: {out.stopped} after {len(out.iterations)} iteration(s) "
        f"({', '.join(i.action for i in out.iterations) or 'none'}); second stage: "
        f"{out.deepen_backend}"
    )
    return render_ranked(f"Entities {out.query!r} is about", out.results, [head])


RERANK = Strategy(
    name="rerank",
    job="linking",
    options=RerankOptions,
    run=_run_rerank,
    render=_render_rerank,
    result=RerankResult,
    needs=("relevance", "dense", "static"),
    tool="rerank_retrieve",
    llm_option="deepen",
    title="Find the entity a question is about (unmarked, misspelt or partial mentions)",
    summary="Entity linking for hard mentions: candidates from the KG's fuzzy label index over "
    "every short span of the question and from two embedding models, fused, then reranked by how "
    "well each label matches a span that is not a relation word and how well its relations fit the "
    "question; broadens (perturbed queries) or deepens (more candidates scored) while the best "
    "match is weak. Use it when initialize finds nothing or the wrong entity.",
    reference="AB-MCTS (Inoue et al. 2025, 'Wider or Deeper?') applied to entity linking",
)
