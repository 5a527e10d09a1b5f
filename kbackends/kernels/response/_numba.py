"""Numba kernel-response update: rows in parallel (when big enough), the kernel row never stored."""

import math

import numpy as np
from numba import get_num_threads, njit, prange
from numba.extending import register_jitable

from ..rows._numba import squared_sums
from ._xp import KERNEL_CODES

_FAST = {"reassoc", "contract", "nsz", "arcp"}


@register_jitable
def _row(X, S, w, i, kernel_code, gamma):
    d = X.shape[1]
    acc = 0.0
    for j in range(S.shape[0]):
        if kernel_code == 0:
            dist = 0.0
            for k in range(d):
                diff = X[i, k] - S[j, k]
                dist += diff * diff
            acc += w[j] * math.exp(-gamma * dist)
        else:
            dot = 0.0
            for k in range(d):
                dot += X[i, k] * S[j, k]
            acc += w[j] * dot
    return acc


@register_jitable
def _row_from_dots(dots, sq_x, sq_s, w, i, kernel_code, gamma):
    acc = 0.0
    for j in range(dots.shape[1]):
        if kernel_code == 0:
            acc += w[j] * math.exp(-gamma * max(sq_x[i] + sq_s[j] - 2.0 * dots[i, j], 0.0))
        else:
            acc += w[j] * dots[i, j]
    return acc


# Each loop twice: threaded, and serial for calls too small to pay for waking
# the threads. The SBP calls this once per iteration with one row: a parallel
# region per call then costs more than the work (and on a loaded machine one
# descheduled thread stalls the join for a whole time slice: measured 16 ms
# threaded vs 1 ms serial for a9a's 32561 x 123 under load). Separate functions,
# not one body compiled twice: Numba's cache keys on the function, not the flags.
@njit(parallel=True, fastmath=_FAST, cache=True)
def _update(X, S, w, y, c, out, kernel_code, gamma):
    for i in prange(X.shape[0]):
        out[i] = c[i] + y[i] * _row(X, S, w, i, kernel_code, gamma)


@njit(fastmath=_FAST, cache=True)
def _update_serial(X, S, w, y, c, out, kernel_code, gamma):
    for i in range(X.shape[0]):
        out[i] = c[i] + y[i] * _row(X, S, w, i, kernel_code, gamma)


@njit(parallel=True, fastmath=_FAST, cache=True)
def _update_from_dots(dots, sq_x, sq_s, w, y, c, out, kernel_code, gamma):
    for i in prange(dots.shape[0]):
        out[i] = c[i] + y[i] * _row_from_dots(dots, sq_x, sq_s, w, i, kernel_code, gamma)


@njit(fastmath=_FAST, cache=True)
def _update_from_dots_serial(dots, sq_x, sq_s, w, y, c, out, kernel_code, gamma):
    for i in range(dots.shape[0]):
        out[i] = c[i] + y[i] * _row_from_dots(dots, sq_x, sq_s, w, i, kernel_code, gamma)


@register_jitable
def _sparse_rows(data, indices, indptr, sq_x, S, sq_s, w, y, c, out, kernel_code, gamma, acc, dots, lo, hi):
    # Rows lo..hi in two passes per changed row j: the sparse dot products (a gather
    # loop), then the kernel values and their weighted sum (no gathers, the exp out of
    # the gather loop: 2.5x faster a call on a9a).
    for j in range(S.shape[0]):
        for i in range(lo, hi):
            dot = 0.0
            for p in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):  # unsigned: no wrap-around tests
                dot += data[p] * S[j, np.uint64(indices[p])]
            dots[i] = dot
        for i in range(lo, hi):
            if kernel_code == 0:
                acc[i] += w[j] * math.exp(-gamma * max(sq_x[i] + sq_s[j] - 2.0 * dots[i], 0.0))
            else:
                acc[i] += w[j] * dots[i]
    for i in range(lo, hi):
        out[i] = c[i] + y[i] * acc[i]


@njit(parallel=True, fastmath=_FAST, cache=True)
def _update_sparse(data, indices, indptr, sq_x, S, sq_s, w, y, c, out, kernel_code, gamma, n_blocks):
    n = out.shape[0]
    acc, dots = np.zeros(n), np.empty(n)
    size = (n + n_blocks - 1) // n_blocks
    for b in prange(n_blocks):
        _sparse_rows(data, indices, indptr, sq_x, S, sq_s, w, y, c, out, kernel_code, gamma, acc, dots, b * size,
                     min(n, (b + 1) * size))


@njit(fastmath=_FAST, cache=True)
def _update_sparse_serial(data, indices, indptr, sq_x, S, sq_s, w, y, c, out, kernel_code, gamma, n_blocks):
    n = out.shape[0]
    _sparse_rows(data, indices, indptr, sq_x, S, sq_s, w, y, c, out, kernel_code, gamma, np.zeros(n), np.empty(n),
                 0, n)


def _sparse_update(X, idx, w, y, c, out, kernel, gamma, sq_norms):
    """CSR ``X``: the changed rows densified (m x d, the model's size), each row of X
    read once per changed row through its non-zeros; squared norms precomputed."""
    S = csr_rows_dense(X, idx, xp=np)
    sq_s = np.einsum("ij,ij->i", S, S)
    if sq_norms is None:
        sq_norms = squared_sums(X, xp=np, axis=1, dtype=X.dtype.name)
    # Work: the non-zeros read, plus an exp per row (about 20 multiply-adds), per changed row.
    work = (X.nnz + 20 * X.shape[0]) * S.shape[0]
    update = _update_sparse if work >= _SPARSE_PARALLEL_FROM else _update_sparse_serial
    update(X.data, X.indices, X.indptr, sq_norms.astype(X.dtype, copy=False), S, sq_s, w.astype(X.dtype),
           y, c, out, KERNEL_CODES[kernel], float(gamma), max(1, min(X.shape[0], 4 * get_num_threads())))
    return out


@njit(cache=True)
def _scatter_rows(data, indices, indptr, rows, out):
    for r in range(rows.shape[0]):
        for p in range(indptr[rows[r]], indptr[rows[r] + 1]):
            out[r, indices[p]] = data[p]


def csr_rows_dense(X, rows, *, xp):
    """Rows ``rows`` of the canonical CSR ``X``, dense: scattered from their stored
    values (scipy's fancy row indexing costs ~0.1 ms a call; SBP and k-means++ take
    a few rows at a time)."""
    rows = np.asarray(rows, dtype=np.int64)
    out = np.zeros((rows.shape[0], X.shape[1]), dtype=X.dtype)
    _scatter_rows(X.data, X.indices, X.indptr, rows, out)
    return out


_PARALLEL_FROM = 1 << 24  # multiply-adds per call
# The sparse loop gathers the changed row's entries at the stored indices (no SIMD):
# threads pay from a smaller size (a9a as CSR, one changed row: 0.9 ms serial, 0.6 ms
# on two threads per call).
_SPARSE_PARALLEL_FROM = 1 << 19

# From this many changed rows on, the inner products come from one BLAS product
# per row chunk (X @ S.T, cache-blocked, all cores) and only the exp and the
# weighted sum stay in Numba: the direct loop reads X once per changed row.
_GEMM_FROM = 8
_CHUNK_ELEMENTS = 1 << 20


def kernel_response_update(X, idx, w, y, c, *, xp, kernel, gamma, sq_norms=None):
    out = np.empty_like(c)
    y = y.astype(c.dtype, copy=False)
    if hasattr(X, "tocsr"):  # scipy.sparse CSR (canonical: the op checked it)
        return _sparse_update(X, idx, w, y, c, out, kernel, gamma, sq_norms) if X.shape[0] else out
    S = np.ascontiguousarray(X[np.asarray(idx)])
    n, m = X.shape[0], S.shape[0]
    if not n:
        return out
    if m < _GEMM_FROM:
        update = _update if n * m * X.shape[1] >= _PARALLEL_FROM else _update_serial
        update(X, S, w, y, c, out, KERNEL_CODES[kernel], float(gamma))
        return out
    from_dots = _update_from_dots if n * m >= _PARALLEL_FROM // 16 else _update_from_dots_serial
    sq_s = np.einsum("ij,ij->i", S, S)
    step = max(1, _CHUNK_ELEMENTS // m)
    for start in range(0, n, step):
        rows = slice(start, min(n, start + step))
        Xc = X[rows]
        sq_x = np.einsum("ij,ij->i", Xc, Xc)
        from_dots(Xc @ S.T, sq_x, sq_s, w, y[rows], c[rows], out[rows], KERNEL_CODES[kernel], float(gamma))
    return out
