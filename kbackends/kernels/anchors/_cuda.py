"""Anchor kernels on the GPU: cuBLAS for the products, Numba-CUDA for selection and gathers.

``anchor_knn`` (anchor_graph, kmeans' assignment, snap_to_samples): per row
chunk, ``anchors @ X_chunk.T`` through ``xp.matmul`` (cuBLAS), transposed so
that the selection kernel, one thread per row, reads consecutive rows from
consecutive threads (coalesced); it forms ``max(|x|^2 + |a|^2 - 2 a.x, 0)`` and
keeps the k smallest by insertion (ties keep the lower anchor index, as the
oracle's stable sort).

``anchor_propagate``: one thread per (row, column), a gather of k values; no
product to hand to cuBLAS (k is a handful).

``anchor_accumulate``: deterministic, no float atomics (k-means and S3GD must
repeat): per row chunk one thread per row writes its k weights into a dense
(rows, n_anchors) block (a row's duplicates added in slot order), then
``out += block.T @ rows_chunk`` through ``xp.matmul`` (cuBLAS: the same bits
every run on one device).
"""

import numpy as np
from numba import cuda

from .. import _cuda_launch as launch
from .._cuda_math import INF, TWO, ZERO


@cuda.jit(cache=True)
def _select_k(Dt, sq_x, sq_a, out_idx, out_dist):
    """k nearest per row from ``Dt[j, i] = a_j . x_i``; one thread per row (:func:`grid_1d`)."""
    i = cuda.grid(1)
    m, n = Dt.shape
    if i >= n:
        return
    k = out_idx.shape[1]
    for t in range(k):
        out_idx[i, t] = -1
        out_dist[i, t] = INF
    s = sq_x[i]
    for j in range(m):
        dist = max(s + sq_a[j] - TWO * Dt[j, i], ZERO)
        if dist < out_dist[i, k - 1]:
            pos = k - 1
            while pos > 0 and dist < out_dist[i, pos - 1]:  # strict: ties keep the lower index
                out_dist[i, pos] = out_dist[i, pos - 1]
                out_idx[i, pos] = out_idx[i, pos - 1]
                pos -= 1
            out_dist[i, pos] = dist
            out_idx[i, pos] = j


@cuda.jit(cache=True)
def _propagate(indices, weights, values, out):
    """``out[i, c] = sum_s weights[i, s] * values[indices[i, s], c]``; one thread per (i, c)."""
    t = cuda.grid(1)
    q = values.shape[1]
    if t >= indices.shape[0] * q:
        return
    i = t // q
    c = t - i * q
    acc = ZERO
    for s in range(indices.shape[1]):
        acc += weights[i, s] * values[indices[i, s], c]
    out[i, c] = acc


@cuda.jit(cache=True)
def _scatter_weights(indices, weights, block):
    """``block[i, indices[i, s]] += weights[i, s]`` on a zeroed block; one thread per row."""
    i = cuda.grid(1)
    if i >= indices.shape[0]:
        return
    for s in range(indices.shape[1]):
        block[i, indices[i, s]] += weights[i, s]


PTX_SIGNATURES = {
    "_select_k": [
        f"void({t}[:, ::1], {t}[::1], {t}[::1], int64[:, ::1], {t}[:, ::1])" for t in ("float32", "float64")
    ],
    "_propagate": [f"void(int64[:, ::1], {t}[:, ::1], {t}[:, ::1], {t}[:, ::1])" for t in ("float32", "float64")],
    "_scatter_weights": [f"void(int64[:, ::1], {t}[:, ::1], {t}[:, ::1])" for t in ("float32", "float64")],
}


def anchor_knn(X, anchors, *, xp, k):
    n, m = X.shape[0], anchors.shape[0]
    out_idx = xp.empty((n, k), dtype=xp.int64)
    out_dist = xp.empty((n, k), dtype=X.dtype)
    if n == 0:
        return out_idx, out_dist
    X, anchors = launch.contiguous(xp, X, anchors)
    sq_a = xp.sum(anchors * anchors, axis=1)
    step = launch.chunk_rows(n, m * np.dtype(X.dtype).itemsize)
    with launch.launch_context(xp) as stream:
        for start in range(0, n, step):
            stop = min(n, start + step)
            Xc = X[start:stop]
            Dt = xp.matmul(anchors, Xc.T)  # (m, rows): row i's distances down column i
            blocks, threads = launch.grid_1d(stop - start)
            _select_k[blocks, threads, stream](
                Dt, xp.sum(Xc * Xc, axis=1), sq_a, out_idx[start:stop], out_dist[start:stop]
            )
    return out_idx, out_dist


def anchor_propagate(indices, weights, values, *, xp):
    V = values[:, None] if values.ndim == 1 else values
    out = xp.empty((indices.shape[0], V.shape[1]), dtype=V.dtype)
    total = indices.shape[0] * V.shape[1]
    if total:
        indices, weights, V = launch.contiguous(xp, xp.astype(indices, xp.int64), xp.astype(weights, V.dtype), V)
        blocks, threads = launch.grid_1d(total)
        with launch.launch_context(xp) as stream:
            _propagate[blocks, threads, stream](indices, weights, V, out)
    return out[:, 0] if values.ndim == 1 else out


def anchor_accumulate(indices, weights, rows, *, xp, n_anchors):
    R = rows[:, None] if rows.ndim == 1 else rows
    out = xp.zeros((n_anchors, R.shape[1]), dtype=R.dtype)
    n = R.shape[0]
    if n == 0 or R.shape[1] == 0 or n_anchors == 0:
        return out[:, 0] if rows.ndim == 1 else out
    indices, weights, R = launch.contiguous(xp, xp.astype(indices, xp.int64), xp.astype(weights, R.dtype), R)
    step = launch.chunk_rows(n, n_anchors * np.dtype(R.dtype).itemsize)
    with launch.launch_context(xp) as stream:
        for start in range(0, n, step):
            stop = min(n, start + step)
            block = xp.zeros((stop - start, n_anchors), dtype=R.dtype)
            blocks, threads = launch.grid_1d(stop - start)
            _scatter_weights[blocks, threads, stream](indices[start:stop], weights[start:stop], block)
            out += xp.matmul(block.T, R[start:stop])
    return out[:, 0] if rows.ndim == 1 else out
