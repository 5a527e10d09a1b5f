"""Numba anchor kernels.

``anchor_knn``: the cross products ``X_chunk @ anchors.T`` come from BLAS (the
O(n m d) part), then one pass per row keeps the k smallest by insertion (k is
small), written straight into the outputs: no (n, m) matrix is kept.
``anchor_accumulate``: rows split into one block per thread, each block summed
into its own (m, q) buffer, the buffers added at the end (no races, no atomics).
Below ``_PARALLEL_WORK`` element operations the serial twin runs: on a busy
2-core machine opening a parallel region costs milliseconds (measured 15 ms
per call for k-means on 2000 rows).
"""

import numpy as np
from numba import get_num_threads, njit, prange

_CHUNK_ELEMENTS = 1 << 20  # rows per chunk * anchors: an 8 MB float64 cross-product block
_PARALLEL_WORK = 1 << 20


@njit(cache=True, inline="always")
def _select_row(dots, sq_x, sq_a, k, out_idx, out_dist, i, r):
    for t in range(k):
        out_idx[i, t] = -1
        out_dist[i, t] = np.inf
    for j in range(dots.shape[1]):
        dist = sq_x[r] + sq_a[j] - 2.0 * dots[r, j]
        if dist < 0.0:
            dist = 0.0
        if dist < out_dist[i, k - 1]:
            pos = k - 1
            while pos > 0 and dist < out_dist[i, pos - 1]:  # strict: ties keep the lower index
                out_dist[i, pos] = out_dist[i, pos - 1]
                out_idx[i, pos] = out_idx[i, pos - 1]
                pos -= 1
            out_dist[i, pos] = dist
            out_idx[i, pos] = j


@njit(parallel=True, cache=True)
def _select_parallel(dots, sq_x, sq_a, k, out_idx, out_dist, offset):
    for r in prange(dots.shape[0]):
        _select_row(dots, sq_x, sq_a, k, out_idx, out_dist, offset + r, r)


@njit(cache=True)
def _select_serial(dots, sq_x, sq_a, k, out_idx, out_dist, offset):
    for r in range(dots.shape[0]):
        _select_row(dots, sq_x, sq_a, k, out_idx, out_dist, offset + r, r)


def anchor_knn(X, anchors, *, xp, k):
    n, m = X.shape[0], anchors.shape[0]
    out_idx = np.empty((n, k), dtype=np.int64)
    out_dist = np.empty((n, k), dtype=X.dtype)
    if n == 0:
        return out_idx, out_dist
    sq_a = np.einsum("ij,ij->i", anchors, anchors)
    step = max(1, _CHUNK_ELEMENTS // max(1, m))
    for start in range(0, n, step):
        Xc = X[start : min(n, start + step)]
        select = _select_parallel if Xc.shape[0] * m > _PARALLEL_WORK else _select_serial
        select(Xc @ anchors.T, np.einsum("ij,ij->i", Xc, Xc), sq_a, k, out_idx, out_dist, start)
    return out_idx, out_dist


@njit(parallel=True, cache=True)
def _propagate(indices, weights, values, out):
    n, k = indices.shape
    q = values.shape[1]
    for i in prange(n):
        for c in range(q):
            out[i, c] = 0.0
        for t in range(k):
            w = weights[i, t]
            j = indices[i, t]
            for c in range(q):
                out[i, c] += w * values[j, c]


def anchor_propagate(indices, weights, values, *, xp):
    V = values[:, None] if values.ndim == 1 else values
    out = np.empty((indices.shape[0], V.shape[1]), dtype=np.result_type(weights, V))
    if indices.shape[0]:
        _propagate(indices, weights, np.ascontiguousarray(V), out)
    return out[:, 0] if values.ndim == 1 else out


@njit(cache=True, inline="always")
def _accumulate_rows(indices, weights, rows, buf, start, stop):
    k = indices.shape[1]
    q = rows.shape[1]
    for i in range(start, stop):
        for t in range(k):
            w = weights[i, t]
            j = indices[i, t]
            for c in range(q):
                buf[j, c] += w * rows[i, c]


@njit(parallel=True, cache=True)
def _accumulate_parallel(indices, weights, rows, partial):
    n = indices.shape[0]
    n_blocks = partial.shape[0]
    size = (n + n_blocks - 1) // n_blocks
    for b in prange(n_blocks):
        _accumulate_rows(indices, weights, rows, partial[b], b * size, min(n, (b + 1) * size))


@njit(cache=True)
def _accumulate_serial(indices, weights, rows, partial):
    _accumulate_rows(indices, weights, rows, partial[0], 0, indices.shape[0])


def anchor_accumulate(indices, weights, rows, *, xp, n_anchors):
    R = rows[:, None] if rows.ndim == 1 else rows
    n = R.shape[0]
    work = n * indices.shape[1] * R.shape[1]
    n_blocks = max(1, min(get_num_threads(), n // 256)) if work > _PARALLEL_WORK else 1
    partial = np.zeros((n_blocks, n_anchors, R.shape[1]), dtype=R.dtype)
    if n:
        accumulate = _accumulate_parallel if n_blocks > 1 else _accumulate_serial
        accumulate(indices, weights.astype(R.dtype, copy=False), np.ascontiguousarray(R), partial)
    out = partial.sum(axis=0) if n_blocks > 1 else partial[0]
    return out[:, 0] if rows.ndim == 1 else out
