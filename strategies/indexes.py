"""The per-KG indexes the strategies read (BM25 over entity descriptors, MiniLM and static dense
vectors) and the shared models that make them, built on first use, once, and cached on disk keyed by
a hash of the KG's content."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tot_mcp.kg_adapters.errors import KGError
from tot_mcp.kg_adapters.plugins import LazyRegistry
from tot_mcp.kg_adapters.text import tokens
from tot_mcp.strategies.inner_products import top_k
from tot_mcp.kg_adapters.local_graph import LocalGraph
from tot_mcp.strategies.global_view import RetrievalUnavailable
from tot_mcp.strategies.relevance import STOPWORDS, QueryRelevance
from tot_mcp.strategies.traversal import NeighbourCache

if TYPE_CHECKING:
    from tot_mcp.strategies.embeddings import Embedder


STATIC_FILE = "static-descriptors.npy"  # the static model's vectors in the on-disk cache


class IndexNotBuilt(KGError):
    """An index was asked for with ``build=False`` and is neither in memory nor in the on-disk
    cache."""


# -- lexical index over descriptors ----------------------------------------------------------------
class DescriptorBM25:
    """BM25 (bm25s) over every entity's descriptor. The label is indexed twice so a name match
    outweighs a neighbour's name."""

    def __init__(self, graph: LocalGraph, neighbours: int = 10) -> None:
        import bm25s

        corpus: list[list[str]] = []
        has_text = False
        for i in range(graph.n):
            label_toks = [t for t in tokens(graph.label(i)) if t.isalnum()]
            rest = [
                t
                for t in tokens(graph.descriptor(i, neighbours, 600))
                if t.isalnum() and t not in STOPWORDS
            ]
            doc = label_toks * 2 + rest
            has_text = has_text or bool(doc)
            corpus.append(doc or ["<empty>"])
        if not has_text:
            raise RetrievalUnavailable(
                f"KG {graph.name!r} has no text to index (every label is empty)"
            )
        self.graph = graph
        self._bm25 = bm25s.BM25()
        self._bm25.index(corpus, show_progress=False)

    def search(self, query: str, k: int = 20) -> list[tuple[int, float]]:
        """(node, score normalised so the best is 1.0), best first; [] when no query word is in the
        index."""
        q = [
            t
            for t in tokens(query.replace("[", " ").replace("]", " "))
            if t.isalnum() and t not in STOPWORDS
        ]
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


# -- dense indexes (MiniLM, model2vec) with an on-disk cache ---------------------------------------
def _progress(total: int, desc: str, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="ent", disable=not enabled, leave=False)


class DenseIndex:
    """Normalised entity vectors (inner product = cosine), searched exactly for one query on one
    thread (:func:`~strategies.inner_products.top_k`): a faiss flat index would hold a second copy
    of the vectors and scan them with its OpenMP pool, slower for one query on a busy machine."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    def search(self, q: np.ndarray, k: int) -> list[tuple[int, float]]:
        return top_k(self.vectors, np.ascontiguousarray(q.reshape(-1), dtype=np.float32), k)


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
    """The second, independent embedding model for rerank fusion: the model2vec static model shipped
    by the ``tokenlearn-static-model`` package (64-d). Loaded offline from the package folder."""

    def __init__(self) -> None:
        import importlib.util

        spec = importlib.util.find_spec("static_model")
        if spec is None or not spec.submodule_search_locations:
            raise RetrievalUnavailable(
                "the second embedding model is missing: pip install model2vec "
                "tokenlearn-static-model"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / "model"
        try:
            from model2vec import StaticModel as _M
        except ImportError as e:
            raise RetrievalUnavailable(
                "model2vec is not installed: pip install model2vec tokenlearn-static-model"
            ) from e
        self._model = _M.from_pretrained(str(path))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        v = np.asarray(self._model.encode(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        return v / np.maximum(norms, 1e-9)


def _bulk_name(models: Models) -> str:
    """The name of the vectors the models' embedder makes in bulk; before it is loaded, what it will
    make."""
    emb = models._embedder
    if emb is not None:
        return getattr(emb, "bulk_name", "minilm")
    from tot_mcp.kg_adapters.environment import Environment
    from tot_mcp.strategies.embeddings import default_bulk_backend

    return default_bulk_backend(Environment.read().bulk_embedder)


def _encode_many(emb: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Uncached bulk vectors: ``encode_many`` (the bulk backend) when the embedder has it, else
    ``encode``."""
    many = getattr(emb, "encode_many", None)
    return many(texts) if many is not None else emb.encode(texts)


class GraphResources:
    """Every index one KG needs, built on first use, once; thread-safe. Each index has a lock of its
    own, so a minutes-long build of one (the dense vectors, in the background) never holds up a call
    that needs another (ARK's BM25, the relevance model)."""

    def __init__(self, graph: LocalGraph, models: Models, cache_dir: Path) -> None:
        self.graph = graph
        self.models = models
        self.cache_dir = cache_dir
        self._locks: dict[str, threading.RLock] = {}
        self._locks_guard = threading.Lock()
        self.neighbour_cache = NeighbourCache()
        self._own: dict[str, Any] = {}

    def _lock(self, name: str) -> threading.RLock:
        with self._locks_guard:
            return self._locks.setdefault(name, threading.RLock())

    def own(self, key: str, make: Callable[[], Any]) -> Any:
        """The index kept under ``key`` (this module's, or a strategy's own: the beam search's
        hierarchy, ...), made once under its lock by ``make``: no slot here names a strategy's."""
        with self._lock(key):
            if key not in self._own:
                self._own[key] = make()
            return self._own[key]

    def has_own(self, key: str) -> bool:
        return key in self._own

    def cache_path(self, name: str) -> Path:
        return self.cache_dir / f"{self.graph.name}-{self.graph.content_hash()}" / name

    def bm25(self) -> DescriptorBM25:
        return self.own("bm25", lambda: DescriptorBM25(self.graph))

    def relevance(self) -> QueryRelevance:
        return self.own("relevance", lambda: QueryRelevance(self.graph, self.models.embedder()))

    def descriptors(self) -> list[str]:
        # short on purpose: embedding cost grows with length, and 43k entities must embed in minutes
        # on 2 cores
        return [self.graph.descriptor(i, neighbours=4, max_chars=120) for i in range(self.graph.n)]

    def dense_file(self) -> str:
        """The dense index's cache file, named by the backend that embeds it
        (``minilm-descriptors.npy`` for the torch model, ``minilm-int8-descriptors.npy`` for its
        int8 ONNX export), so one backend's cache is never read as the other's vectors."""
        return f"{_bulk_name(self.models)}-descriptors.npy"

    def dense(
        self,
        build: bool = True,
        progress: bool = False,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> DenseIndex:
        """MiniLM vectors of every entity descriptor, by the embedder's bulk backend (the int8 ONNX
        model when installed, 1.3–1.6× the torch model's entities/s; cached on disk; 43k entities:
        ~3–4 min int8 on the shared 2 cores at moderate load, much longer when it is busy)."""

        def make() -> DenseIndex:
            if not build and not self.cache_path(self.dense_file()).is_file():
                name = self.graph.name
                raise IndexNotBuilt(
                    f"the dense entity index of KG {name!r} is not built yet; call "
                    "build_index (or tot-search with the method) first"
                )
            emb = self.models.embedder()
            path = self.cache_path(self.dense_file())  # the loaded embedder's backend names it

            def compute() -> np.ndarray:
                texts = self.descriptors()
                out = np.empty((len(texts), emb.dim), np.float32)
                desc = f"embedding {self.graph.name} entities"
                with _progress(len(texts), desc, progress) as bar:
                    for s in range(0, len(texts), 512):
                        chunk = texts[s : s + 512]
                        out[s : s + len(chunk)] = _encode_many(emb, chunk)  # uncached: 43k one-offs
                        bar.update(len(chunk))
                        if on_progress is not None:
                            on_progress(s + len(chunk), len(texts))
                return out

            return DenseIndex(_cached_matrix(path, compute, self.graph.n))

        return self.own("dense", make)

    def static_dense(self) -> DenseIndex:
        def make() -> DenseIndex:
            model = self.models.static_model()
            path = self.cache_path(STATIC_FILE)
            vectors = _cached_matrix(path, lambda: model.encode(self.descriptors()), self.graph.n)
            return DenseIndex(vectors)

        return self.own("static", make)

    def dense_ready(self) -> bool:
        return self.has_own("dense") or self.cache_path(self.dense_file()).is_file()

    def static_ready(self) -> bool:
        return self.has_own("static") or self.cache_path(STATIC_FILE).is_file()


class Models:
    """The models shared by every KG's indexes in one process: the MiniLM embedder (the caller's, so
    a server loads one copy), the static second model, user-supplied cross-encoders. Each is loaded
    on first use."""

    def __init__(self, embedder_provider: Callable[[], Embedder] | None = None) -> None:
        self._embedder_provider = embedder_provider
        self._embedder: Embedder | None = None
        self._static: StaticModel | None = None
        self._cross: dict[str, Any] = {}
        self._lock = threading.Lock()

    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    from tot_mcp.strategies.embeddings import Embedder

                    self._embedder = (self._embedder_provider or Embedder)()
        return self._embedder

    def static_model(self) -> StaticModel:
        if self._static is None:
            with self._lock:
                if self._static is None:
                    self._static = StaticModel()
        return self._static

    def cross_encoder(self, path: str):
        """A local sentence-transformers ``CrossEncoder`` (no PyPI package ships one; the user
        supplies it)."""
        with self._lock:
            if path not in self._cross:
                if not Path(path).expanduser().is_dir():
                    raise RetrievalUnavailable(f"cross-encoder path {path!r} is not a directory")
                try:
                    from sentence_transformers import CrossEncoder
                except ImportError as e:
                    raise RetrievalUnavailable(
                        "a cross-encoder needs sentence-transformers: pip install "
                        "'tot-mcp[torch]', or leave cross_encoder_path unset"
                    ) from e

                self._cross[path] = CrossEncoder(
                    str(Path(path).expanduser()), device="cpu", local_files_only=True
                )
            return self._cross[path]


# -- the registry: what strategies may name in ``needs`` -------------------------------------------
@dataclass(frozen=True)
class IndexKind:
    """One index a strategy can need (``Strategy.needs``): whether it is ready (in memory or on
    disk), how to bring it into memory without building what takes minutes, and how to build it
    (``job`` takes ``stage`` and ``step(done, total)``: :class:`~strategies.services.BuildJob`). A
    ``cheap`` one (BM25 over the entity descriptors, seconds for 43k entities; the relevance model's
    relation-phrase embeddings) has no disk cache and is made within any call, whatever the KG's
    size: never sent to the background, never refused."""

    name: str
    ready: Callable[[GraphResources], bool]
    load: Callable[[GraphResources], Any]
    build: Callable[[GraphResources, Any], Any] | None = None
    cheap: bool = False


def _build_dense(res: GraphResources, job: Any) -> None:
    job.stage = f"embedding {res.graph.n} entity descriptors"
    res.dense(build=True, on_progress=job.step)


def _build_static(res: GraphResources, job: Any) -> None:
    job.stage = "static entity vectors"
    res.static_dense()


BM25 = IndexKind("bm25", lambda res: res.has_own("bm25"), GraphResources.bm25, cheap=True)
RELEVANCE = IndexKind(
    "relevance", lambda res: res.has_own("relevance"), GraphResources.relevance, cheap=True
)
DENSE = IndexKind(
    "dense", GraphResources.dense_ready, lambda res: res.dense(build=False), _build_dense
)
STATIC = IndexKind(
    "static", GraphResources.static_ready, GraphResources.static_dense, _build_static
)

INDEXES: LazyRegistry[IndexKind] = LazyRegistry(
    "index",
    {
        "bm25": "tot_mcp.strategies.indexes:BM25",
        "relevance": "tot_mcp.strategies.indexes:RELEVANCE",
        "dense": "tot_mcp.strategies.indexes:DENSE",
        "static": "tot_mcp.strategies.indexes:STATIC",
        "hierarchy": "tot_mcp.strategies.deep_graphrag:HIERARCHY",
    },
    group="tot_mcp.indexes",
)
