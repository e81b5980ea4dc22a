"""Inner products of one query vector with many, on one thread: what a single query needs. A BLAS
gemv or faiss's OpenMP flat scan wakes worker threads, which on a busy 2-core machine costs more
than the products themselves (docs/strategies.md: the flat scan ran several times slower on two
threads than on one)."""

from __future__ import annotations

import numpy as np


def _faiss_reads(mat: np.ndarray, q: np.ndarray) -> bool:
    """faiss's raw kernels read C-contiguous float32 only."""
    return (
        mat.dtype == np.float32
        and q.dtype == np.float32
        and mat.flags.c_contiguous
        and q.flags.c_contiguous
        and mat.ndim == 2
        and mat.shape[1] == len(q)
    )


def inner_products(mat: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``mat @ q`` in one thread. A BLAS gemv this size wakes OpenBLAS's worker threads, which on a
    busy machine costs ~20 ms — more than the whole beam search. faiss's SIMD kernel
    (``fvec_inner_products_ny``: no OpenMP) does it in about 0.6× the time of einsum's own loop;
    einsum when the arrays are not contiguous float32."""
    if len(mat) and _faiss_reads(mat, q):
        import faiss

        out = np.empty(len(mat), dtype=np.float32)
        faiss.fvec_inner_products_ny(  # type: ignore[attr-defined]  # in faiss, not its stubs
            faiss.swig_ptr(out), faiss.swig_ptr(q), faiss.swig_ptr(mat), len(q), len(mat)
        )
        return out
    return np.einsum("ij,j->i", mat, q)


def inner_products_at(mat: np.ndarray, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``mat[rows] @ q`` without copying the rows out first (faiss ``fvec_inner_products_by_idx``:
    the gather of a few thousand 384-d rows costs more than their products). That kernel is an
    OpenMP loop, so it runs with the calling thread's OpenMP team set to one thread (an OpenMP
    setting of the calling thread only, restored after)."""
    if len(rows) == 0:
        return np.zeros(0, np.float32)
    if _faiss_reads(mat, q):
        import faiss

        ids = np.ascontiguousarray(rows, dtype=np.int64)
        out = np.empty(len(ids), dtype=np.float32)
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            faiss.fvec_inner_products_by_idx(  # type: ignore[attr-defined]  # not in faiss's stubs
                faiss.swig_ptr(out),
                faiss.swig_ptr(q),
                faiss.swig_ptr(mat),
                faiss.swig_ptr(ids),
                len(q),
                1,
                len(ids),
            )
        finally:
            faiss.omp_set_num_threads(threads)
        return out
    return inner_products(mat[rows], q)


def top_k(mat: np.ndarray, q: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` rows with the largest inner product with ``q``, best first (ties: lower row first):
    an exact flat search for one query."""
    n = len(mat)
    k = max(0, min(k, n))
    if k == 0:
        return []
    scores = inner_products(mat, q)
    best = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
    best = best[np.lexsort((best, -scores[best]))]
    return [(int(i), float(scores[i])) for i in best]
