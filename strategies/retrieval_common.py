"""Shared machinery for the server-side retrieval strategies (ARK, the router, Deep GraphRAG, adaptive rerank).

All four need a *global* view of one KG — every entity, its verbalised neighbourhood, lexical and dense indexes over
those texts — which the Tree-of-Traversals interface (``initialize``/``get_relations``/``get_edges``) cannot give.
So they run on KGs whose triples are held locally (``MemoryKG``: the embedded KB, triple and RDF files) and refuse
remote endpoints with a clear :class:`RetrievalUnavailable`.

``RetrievalService`` is the per-runtime owner of these indexes (built lazily, once per KG; the dense ones cached on
disk keyed by a hash of the KG content). ``QueryRelevance`` is the offline relevance model every strategy uses to
rank what it retrieved: each hop of a path is matched to a different short span of the question (MiniLM cosine,
centred per span so generic words match nothing), minus a per-hop price.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, Field

from kg_adapters.base import KnowledgeGraph
from kg_adapters.errors import InvalidInput, KGError
from kg_adapters.models import Direction
from kg_adapters.text import bracketed_mentions, tokens

if TYPE_CHECKING:
    from strategies.embeddings import Embedder

DEFAULT_MAX_QUERY_CHARS = 2000

STOPWORDS = frozenset(
    """a an the of in on at to for by with from and or but is are was were be been being am what which who whom
    whose when where how why did does do done that this these those it its as 's ? , . ! ; : ' " - s can could
    would should will shall may might must has have had having i you he she they we me him her them us my your his
    their our any some all also other than then there here about into onto over under up down out off so such
    very just too not no nor only own same both each few more most""".split()
)
# Answer-type words: they name what is asked for, not a relation, so they never count as a relation span.
TYPE_WORDS = frozenset("film films movie movies thing things one ones".split())


class RetrievalUnavailable(InvalidInput):
    """The strategy cannot run on this KG (remote endpoint, no text to index); the message says why."""


class IndexNotBuilt(KGError):
    """An index was asked for with ``build=False`` and is neither in memory nor in the on-disk cache."""


def check_query(query: object, max_chars: int = DEFAULT_MAX_QUERY_CHARS) -> str:
    """Strip and validate a natural-language query: empty or huge queries are clear errors, never a crash."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query is empty")
    if len(query) > max_chars:
        raise InvalidInput(f"query is {len(query)} characters; at most {max_chars}")
    return query.strip()


def default_cache_dir() -> Path:
    """``$TOT_MCP_CACHE_DIR``, else ``$XDG_CACHE_HOME/tot-mcp``, else ``~/.cache/tot-mcp``."""
    explicit = os.environ.get("TOT_MCP_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "tot-mcp"


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


# -- the local graph ---------------------------------------------------------------------------------------------
class LocalGraph:
    """Read-only, integer-indexed view of a KG held in memory (its ``TripleIndex``)."""

    def __init__(self, kg: KnowledgeGraph) -> None:
        if not kg.capabilities.local_index:
            raise RetrievalUnavailable(
                f"KG {kg.name!r} ({kg.backend}) is not held locally; the retrieval "
                "strategies need every entity and triple (use an embedded, triple-file or RDF-file KG)"
            )
        index = kg.index  # type: ignore[attr-defined] - declared by capabilities.local_index
        if not index.nodes:
            raise RetrievalUnavailable(f"KG {kg.name!r} has no entities")
        self.kg = kg
        self.name = kg.name
        self.index = index
        self.n = len(index.nodes)
        self.out: list[dict[int, list[int]]] = index.out
        self.inc: list[dict[int, list[int]]] = index.inc
        self.rel_labels: list[str] = list(index.rel_labels)
        self.rel_ids: list[str] = [f"{kg.name}:{x}" for x in index.rel_local_ids]
        self._prefix = f"{kg.name}:E"
        self._hash: str | None = None
        self._degree: np.ndarray | None = None

    # identity
    def entity_id(self, i: int) -> str:
        return f"{self._prefix}{i}"

    def node_of(self, entity_id: str) -> int | None:
        if not entity_id.startswith(self._prefix):
            return None
        local = entity_id[len(self._prefix):]
        if not local.isdigit() or int(local) >= self.n:
            return None
        return int(local)

    def label(self, i: int) -> str:
        return self.index.nodes[i].label

    def description(self, i: int) -> str | None:
        return self.index.nodes[i].description

    def is_literal(self, i: int) -> bool:
        return bool(self.index.nodes[i].is_literal)

    # structure
    def neighbours(self, i: int) -> Iterator[tuple[int, Direction, int]]:
        for r, objs in self.out[i].items():
            for j in objs:
                yield r, Direction.forward, j
        for r, subs in self.inc[i].items():
            for j in subs:
                yield r, Direction.backward, j

    def degree(self, i: int) -> int:
        return int(self.degrees()[i])

    def degrees(self) -> np.ndarray:
        if self._degree is None:
            self._degree = np.array(
                [sum(map(len, o.values())) + sum(map(len, n.values())) for o, n in zip(self.out, self.inc)],
                dtype=np.int64,
            )
        return self._degree

    def triples(self) -> Iterator[tuple[int, int, int]]:
        for s, rels in enumerate(self.out):
            for r, objs in rels.items():
                for o in objs:
                    yield s, r, o

    def content_hash(self) -> str:
        """Stable hash of labels and triples: the key of every on-disk cache for this KG."""
        if self._hash is None:
            h = hashlib.sha256()
            for node in self.index.nodes:
                h.update(node.label.encode("utf-8", "replace"))
                h.update(b"\x00")
            h.update("\x01".join(self.rel_labels).encode())
            for s, rels in enumerate(self.out):
                for r in sorted(rels):
                    h.update(np.asarray([s, r, *rels[r]], dtype=np.int64).tobytes())
            self._hash = h.hexdigest()[:20]
        return self._hash

    # text
    def neighbourhood_lines(self, i: int, limit: int = 8) -> list[str]:
        """``"directed by Clark Gregg"`` / ``"directed (inverse of directed by) Choke"``: the node's edges as short
        phrases, at most ``limit``, spread over relations so one huge relation cannot fill them all."""
        groups: list[tuple[str, list[int]]] = []
        for r, objs in self.out[i].items():
            groups.append((self.rel_labels[r], objs))
        for r, subs in self.inc[i].items():
            groups.append((f"{self.rel_labels[r]} of", subs))
        lines: list[str] = []
        per = max(1, limit // max(1, len(groups)))
        for text, targets in groups:
            for j in targets[:per]:
                lines.append(f"{text} {self.label(j)}")
        if len(lines) < limit:
            for text, targets in groups:
                for j in targets[per: per + limit]:
                    if len(lines) >= limit:
                        break
                    lines.append(f"{text} {self.label(j)}")
        return lines[:limit]

    def descriptor(self, i: int, neighbours: int = 8, max_chars: int = 240) -> str:
        """Label + description + verbalised neighbourhood; what BM25 and the dense indexes see for an entity."""
        parts = [self.label(i)]
        desc = self.description(i)
        if desc:
            parts.append(desc)
        parts.extend(self.neighbourhood_lines(i, neighbours))
        return "; ".join(parts)[:max_chars]


# -- lexical index over descriptors --------------------------------------------------------------------------------
class DescriptorBM25:
    """BM25 (bm25s) over every entity's descriptor. The label is indexed twice so a name match outweighs a
    neighbour's name."""

    def __init__(self, graph: LocalGraph, neighbours: int = 10) -> None:
        import bm25s

        corpus: list[list[str]] = []
        has_text = False
        for i in range(graph.n):
            label_toks = [t for t in tokens(graph.label(i)) if t.isalnum()]
            rest = [t for t in tokens(graph.descriptor(i, neighbours, 600)) if t.isalnum() and t not in STOPWORDS]
            doc = label_toks * 2 + rest
            has_text = has_text or bool(doc)
            corpus.append(doc or ["<empty>"])
        if not has_text:
            raise RetrievalUnavailable(f"KG {graph.name!r} has no text to index (every label is empty)")
        self.graph = graph
        self._bm25 = bm25s.BM25()
        self._bm25.index(corpus, show_progress=False)

    def search(self, query: str, k: int = 20) -> list[tuple[int, float]]:
        """(node, score normalised so the best is 1.0), best first; [] when no query word is in the index."""
        q = [t for t in tokens(query.replace("[", " ").replace("]", " ")) if t.isalnum() and t not in STOPWORDS]
        if not q:
            q = [t for t in tokens(query) if t.isalnum()]
        if not q:
            return []
        k = max(1, min(k, self.graph.n))
        docs, scores = self._bm25.retrieve([q], k=k, show_progress=False)
        top = float(scores[0][0]) if len(scores[0]) else 0.0
        if top <= 0:
            return []
        return [(int(d), float(s) / top) for d, s in zip(docs[0], scores[0]) if s > 0]


# -- offline relevance of relation paths -------------------------------------------------------------------------
@dataclass(frozen=True)
class Span:
    text: str
    start: int
    end: int


def query_spans(query: str, max_len: int = 4, exclude: Sequence[str] = ()) -> list[Span]:
    """Every 1–``max_len``-token span of the query that has a content word, with ``[mentions]`` and the given
    entity labels removed (the topic is where a path starts, not a relation)."""
    text = query
    for m in bracketed_mentions(query):
        text = text.replace(f"[{m}]", " ")
    low = text.replace("_", " ").casefold()
    for label in sorted(exclude, key=len, reverse=True):
        lab = label.replace("_", " ").casefold().strip()
        if len(lab) > 2:
            low = low.replace(lab, " ")
    toks = [t for t in tokens(low) if t.isalnum() or t == "'s"]
    spans: list[Span] = []
    for n in range(1, max_len + 1):
        for s in range(0, len(toks) - n + 1):
            gram = toks[s: s + n]
            if all(t in STOPWORDS or t in TYPE_WORDS for t in gram) or (
                n > 1 and gram[0] in STOPWORDS and gram[-1] in STOPWORDS
            ):
                continue
            spans.append(Span(" ".join(gram), s, s + n))
    return spans


def relation_phrase(label: str) -> str:
    """``people person place of birth`` → ``place of birth``: the last ``__`` segment of a Freebase-style name."""
    last = re.split(r"__|/", label.strip())[-1]
    return last.replace("_", " ").strip() or label


class QueryRelevance:
    """Relation-phrase embeddings of one KG; makes a :class:`PathScorer` per query."""

    def __init__(self, graph: LocalGraph, embedder: "Embedder", hop_price: float = 0.12) -> None:
        self.graph = graph
        self.embedder = embedder
        self.hop_price = hop_price
        self.phrases = [relation_phrase(x) for x in graph.rel_labels]
        self.rel_vecs = embedder.encode(self.phrases) if self.phrases else np.zeros((0, embedder.dim), np.float32)

    def scorer(self, query: str, topic_labels: Sequence[str] = ()) -> "PathScorer":
        spans = query_spans(query, exclude=topic_labels)
        if not spans or len(self.phrases) == 0:
            return PathScorer(spans, np.zeros((len(spans), len(self.phrases)), np.float32), self.hop_price)
        vecs = self.embedder.encode([s.text for s in spans])
        sims = vecs @ self.rel_vecs.T  # spans × relations
        centred = sims - sims.mean(axis=1, keepdims=True) if sims.shape[1] > 1 else sims
        return PathScorer(spans, centred.astype(np.float32), self.hop_price)

    def estimate_hops(self, query: str, topic_labels: Sequence[str] = (), threshold: float = 0.18) -> int:
        """How many distinct relations the query mentions: greedy non-overlapping spans whose best centred
        similarity to some relation clears ``threshold``. The offline judge's and the router's main signal."""
        sc = self.scorer(query, topic_labels)
        used: set[int] = set()
        hops = 0
        while True:
            best = sc.best_span(used)
            if best is None or best[1] < threshold:
                return hops
            hops += 1
            span = sc.spans[best[0]]
            used.update(range(span.start, span.end))
            if hops >= 6:
                return hops


class PathScorer:
    """Scores relation paths for one query. A path's score is Σ over hops of (best centred similarity between the
    hop's relation and a question span not used by an earlier hop) − hop price."""

    def __init__(self, spans: list[Span], centred: np.ndarray, hop_price: float) -> None:
        self.spans = spans
        self.centred = centred
        self.hop_price = hop_price

    def best_span(self, used: set[int], relation: int | None = None) -> tuple[int, float] | None:
        best: tuple[int, float] | None = None
        for k, s in enumerate(self.spans):
            if used and any(t in used for t in range(s.start, s.end)):
                continue
            row = self.centred[k]
            v = float(row[relation]) if relation is not None else float(row.max()) if row.size else 0.0
            if best is None or v > best[1]:
                best = (k, v)
        return best

    def hop(self, relation: int, used: frozenset[int]) -> tuple[float, frozenset[int]]:
        """(score of taking ``relation`` next, the span tokens used afterwards)."""
        best = self.best_span(set(used), relation)
        if best is None:
            return -self.hop_price, used
        span = self.spans[best[0]]
        return best[1] - self.hop_price, used | frozenset(range(span.start, span.end))

    def relation_scores(self) -> np.ndarray:
        """Best centred similarity of each relation to any span (no coverage constraint): a cheap prior."""
        if self.centred.size == 0:
            return np.zeros(self.centred.shape[1] if self.centred.ndim == 2 else 0, np.float32)
        return self.centred.max(axis=0)


# -- traversal shared by ARK and the fixed BFS/DFS baselines ---------------------------------------------------
@dataclass
class Reached:
    """A node reached by traversal: best path score so far and the path that gave it."""

    node: int
    score: float
    depth: int
    path: tuple[tuple[int, Direction, int], ...]  # (relation, direction, target)
    used: frozenset[int] = frozenset()
    source: str = "expand"


@dataclass
class NeighbourCache:
    """Per-node neighbour lists grouped by (relation, direction); bounded so a hub cannot blow memory up."""

    max_per_relation: int = 200
    enabled: bool = True
    hits: int = 0
    misses: int = 0
    _store: dict[int, list[tuple[int, Direction, list[int]]]] = field(default_factory=dict)

    def groups(self, graph: LocalGraph, i: int) -> list[tuple[int, Direction, list[int]]]:
        if self.enabled and i in self._store:
            self.hits += 1
            return self._store[i]
        self.misses += 1
        out = [(r, Direction.forward, objs[: self.max_per_relation]) for r, objs in graph.out[i].items()]
        out += [(r, Direction.backward, subs[: self.max_per_relation]) for r, subs in graph.inc[i].items()]
        if self.enabled:
            self._store[i] = out
        return out


def expand_frontier(
    graph: LocalGraph,
    frontier: Iterable[Reached],
    scorer: PathScorer,
    reached: dict[int, Reached],
    *,
    cache: NeighbourCache,
    avoid: set[int] = frozenset(),  # type: ignore[assignment]
    relation_filter: set[int] | None = None,
    node_kind: str | None = None,
    max_new: int = 5000,
) -> list[Reached]:
    """One hop out of ``frontier``: score every neighbour by its path, keep the best path per node in ``reached``,
    and return the nodes whose score improved (the next frontier). ``avoid`` (the seeds) is never walked through."""
    improved: dict[int, Reached] = {}
    new_count = 0
    for parent in frontier:
        for r, d, targets in cache.groups(graph, parent.node):
            if relation_filter is not None and r not in relation_filter:
                continue
            gain, used = scorer.hop(r, parent.used)
            score = parent.score + gain
            for j in targets:
                if j in avoid or j == parent.node:
                    continue
                if node_kind == "literal" and not graph.is_literal(j):
                    continue
                if node_kind == "entity" and graph.is_literal(j):
                    continue
                old = reached.get(j)
                if old is not None and old.score >= score:
                    continue
                if old is None:
                    new_count += 1
                    if new_count > max_new:
                        continue
                rec = Reached(j, score, parent.depth + 1, parent.path + ((r, d, j),), used)
                reached[j] = rec
                improved[j] = rec
    return sorted(improved.values(), key=lambda x: -x.score)


def to_retrieved(graph: LocalGraph, rec: Reached, source: str | None = None) -> RetrievedEntity:
    return RetrievedEntity(
        id=graph.entity_id(rec.node),
        label=graph.label(rec.node),
        score=round(float(rec.score), 6),
        source=source or rec.source,
        depth=rec.depth,
        path=[
            PathStep(relation=graph.rel_ids[r], label=graph.rel_labels[r], direction=d, target=graph.entity_id(j))
            for r, d, j in rec.path
        ],
    )


def rank_answers(results: list[RetrievedEntity], seeds: set[str]) -> list[RetrievedEntity]:
    """Results best first with the seeds moved last (the topic is rarely its own answer, but sometimes is)."""
    return sorted(results, key=lambda e: (e.id in seeds, -e.score))


# -- dense indexes (MiniLM, model2vec) with an on-disk cache ------------------------------------------------------
def _progress(total: int, desc: str, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="ent", disable=not enabled, leave=False)


class DenseIndex:
    """A faiss ``IndexFlatIP`` over normalised vectors (so inner product = cosine)."""

    def __init__(self, vectors: np.ndarray) -> None:
        import faiss

        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.dim = int(self.vectors.shape[1])
        self.index = faiss.IndexFlatIP(self.dim)
        if len(self.vectors):
            self.index.add(self.vectors)

    def search(self, q: np.ndarray, k: int) -> list[tuple[int, float]]:
        k = max(1, min(k, len(self.vectors)))
        if len(self.vectors) == 0:
            return []
        D, I = self.index.search(np.ascontiguousarray(q.reshape(1, -1), dtype=np.float32), k)
        return [(int(i), float(d)) for i, d in zip(I[0], D[0]) if i >= 0]


def _cached_matrix(path: Path, compute, expected_rows: int) -> np.ndarray:
    if path.is_file():
        try:
            arr = np.load(path)
            if arr.shape[0] == expected_rows:
                return arr
        except (OSError, ValueError):
            pass  # a torn or stale cache file: rebuild it
    arr = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}.npy")
    np.save(tmp, arr)
    os.replace(tmp, path)
    return arr


class StaticModel:
    """The second, independent embedding model for rerank fusion: the model2vec static model shipped by the
    ``tokenlearn-static-model`` package (64-d). Loaded offline from the package folder."""

    def __init__(self) -> None:
        import importlib.util

        spec = importlib.util.find_spec("static_model")
        if spec is None or not spec.submodule_search_locations:
            raise RetrievalUnavailable("the second embedding model is missing: pip install model2vec tokenlearn-static-model")
        path = Path(list(spec.submodule_search_locations)[0]) / "model"
        try:
            from model2vec import StaticModel as _M
        except ImportError as e:
            raise RetrievalUnavailable("model2vec is not installed: pip install model2vec tokenlearn-static-model") from e
        self._model = _M.from_pretrained(str(path))
        self.name = "tokenlearn-static-model (model2vec, 64-d)"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        v = np.asarray(self._model.encode(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        return v / np.maximum(norms, 1e-9)


class GraphResources:
    """Every index one KG needs, built on first use, once; thread-safe."""

    def __init__(self, service: "RetrievalService", graph: LocalGraph) -> None:
        self.service = service
        self.graph = graph
        self._lock = threading.RLock()
        self._bm25: DescriptorBM25 | None = None
        self._relevance: QueryRelevance | None = None
        self._dense: DenseIndex | None = None
        self._static: DenseIndex | None = None
        self.hierarchy: Any = None  # set by strategies.deep_graphrag
        self.neighbour_cache = NeighbourCache()

    def cache_path(self, name: str) -> Path:
        return self.service.cache_dir / f"{self.graph.name}-{self.graph.content_hash()}" / name

    def bm25(self) -> DescriptorBM25:
        with self._lock:
            if self._bm25 is None:
                self._bm25 = DescriptorBM25(self.graph)
            return self._bm25

    def relevance(self) -> QueryRelevance:
        with self._lock:
            if self._relevance is None:
                self._relevance = QueryRelevance(self.graph, self.service.embedder())
            return self._relevance

    def descriptors(self) -> list[str]:
        # short on purpose: embedding cost grows with length, and 43k entities must embed in minutes on 2 cores
        return [self.graph.descriptor(i, neighbours=4, max_chars=120) for i in range(self.graph.n)]

    def dense(self, build: bool = True, progress: bool = False) -> DenseIndex:
        """MiniLM vectors of every entity descriptor (cached on disk; ~2 min for 43k entities on 2 cores)."""
        with self._lock:
            if self._dense is None:
                path = self.cache_path("minilm-descriptors.npy")
                if not build and not path.is_file():
                    raise IndexNotBuilt(
                        f"the dense entity index of KG {self.graph.name!r} is not built yet; call build_index "
                        "(or tot-search with the method) first"
                    )
                emb = self.service.embedder()

                def compute() -> np.ndarray:
                    texts = self.descriptors()
                    out = np.empty((len(texts), emb.dim), np.float32)
                    with _progress(len(texts), f"embedding {self.graph.name} entities", progress) as bar:
                        for s in range(0, len(texts), 512):
                            chunk = texts[s: s + 512]
                            out[s: s + len(chunk)] = emb._model.encode(  # bypass the string cache: 43k one-offs
                                chunk, batch_size=128, normalize_embeddings=True, convert_to_numpy=True,
                                show_progress_bar=False,
                            )
                            bar.update(len(chunk))
                    return out

                self._dense = DenseIndex(_cached_matrix(path, compute, self.graph.n))
            return self._dense

    def static_dense(self) -> DenseIndex:
        with self._lock:
            if self._static is None:
                model = self.service.static_model()
                path = self.cache_path("static-descriptors.npy")
                self._static = DenseIndex(_cached_matrix(path, lambda: model.encode(self.descriptors()), self.graph.n))
            return self._static

    def dense_ready(self) -> bool:
        return self._dense is not None or self.cache_path("minilm-descriptors.npy").is_file()


class RetrievalService:
    """Per-runtime owner of the strategies' indexes and statistics (no module-level state)."""

    def __init__(self, embedder_provider=None, cache_dir: Path | str | None = None) -> None:
        self._embedder_provider = embedder_provider
        self._embedder: Embedder | None = None
        self._static: StaticModel | None = None
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        self._graphs: dict[str, GraphResources] = {}
        self._lock = threading.Lock()
        from strategies.router import RouteStats  # local: router imports this module

        self.route_stats = RouteStats()

    def embedder(self) -> "Embedder":
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    if self._embedder_provider is not None:
                        self._embedder = self._embedder_provider()
                    else:
                        from strategies.embeddings import Embedder

                        self._embedder = Embedder()
        return self._embedder

    def use_embedder(self, embedder: "Embedder") -> None:
        """Share an already loaded embedder (e.g. the runtime's) instead of loading another copy."""
        with self._lock:
            self._embedder = embedder

    def static_model(self) -> StaticModel:
        if self._static is None:
            with self._lock:
                if self._static is None:
                    self._static = StaticModel()
        return self._static

    def cross_encoder(self, path: str):
        """A local sentence-transformers ``CrossEncoder`` (no PyPI package ships one; the user supplies it)."""
        with self._lock:
            cache = self.__dict__.setdefault("_cross", {})
            if path not in cache:
                if not Path(path).expanduser().is_dir():
                    raise RetrievalUnavailable(f"cross-encoder path {path!r} is not a directory")
                from sentence_transformers import CrossEncoder

                cache[path] = CrossEncoder(str(Path(path).expanduser()), device="cpu", local_files_only=True)
            return cache[path]

    def resources(self, kg: KnowledgeGraph) -> GraphResources:
        with self._lock:
            res = self._graphs.get(kg.name)
            if res is None or res.graph.kg is not kg:
                res = GraphResources(self, LocalGraph(kg))
                self._graphs[kg.name] = res
            return res


async def linked_seeds(kg: KnowledgeGraph, graph: LocalGraph, query: str, limit: int = 5) -> list[tuple[int, float]]:
    """Entities the query mentions (the KG's own linker), as (node, score); empty when nothing links."""
    try:
        matches = await kg.initialize(query, limit=limit)
    except InvalidInput:
        return []
    out = []
    for m in matches:
        i = graph.node_of(m.entity.id)
        if i is not None:
            out.append((i, float(m.score)))
    if out:
        top = max(s for _, s in out)
        out = [(i, s) for i, s in out if s >= 0.85 * top]
    return out


# -- ranking metrics against gold answers -------------------------------------------------------------------
def answer_key(label: str) -> str:
    """Gold answers and labels compare case- and ``_``-insensitively (PathQuestion writes ``anna_of_x``)."""
    return " ".join(label.replace("_", " ").casefold().split())


def ranking_metrics(ranked_labels: Sequence[str], gold: Iterable[str], k: int = 10) -> dict[str, float]:
    """Hits@1, Recall@k (gold found in the top k / min(|gold|, k)), nDCG@k (binary gains) and MRR."""
    gold_keys = {answer_key(g) for g in gold if g}
    keys: list[str] = []
    for lab in ranked_labels:  # a label listed twice (merged same-name nodes) counts once
        kk = answer_key(lab)
        if kk not in keys:
            keys.append(kk)
    if not gold_keys:
        return {"hits@1": 0.0, f"recall@{k}": 0.0, f"ndcg@{k}": 0.0, "mrr": 0.0}
    rel = [1.0 if x in gold_keys else 0.0 for x in keys]
    top = rel[:k]
    dcg = sum(g / math.log2(r + 2) for r, g in enumerate(top))
    ideal = sum(1.0 / math.log2(r + 2) for r in range(min(len(gold_keys), k)))
    first = next((r for r, g in enumerate(rel) if g), None)
    return {
        "hits@1": rel[0] if rel else 0.0,
        f"recall@{k}": sum(top) / min(len(gold_keys), k),
        f"ndcg@{k}": dcg / ideal if ideal else 0.0,
        "mrr": 1.0 / (first + 1) if first is not None else 0.0,
    }
