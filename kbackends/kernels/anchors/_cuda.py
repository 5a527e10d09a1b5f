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

CSR rows (cupyx.scipy.sparse on a GPU; scipy.sparse under the simulator, the
same calls). ``anchor_knn`` with a CSR ``X`` (anchor_graph, k-means): per row
chunk the products ``X_chunk @ anchors.T`` by the sparse library (cuSPARSE
SpMM, non-transposed: deterministic), transposed into the (m, rows) layout of
the same ``_select_k``; the rows' squared norms once from the non-zeros. With
CSR anchors (snap_to_samples: the samples are the "anchors" of the centres)
``anchors @ centres_chunk.T`` is that layout already. ``anchor_accumulate``
with CSR rows does not use the transposed SpMM (``block.T @ R`` would be
cuSPARSE's ``op(A) = A^T``, which NVIDIA documents may differ from run to run):
the graph's entries are sorted by anchor (a stable sort: rows ascending), and
``_accumulate_csr`` runs one block per anchor, its threads over one row's
non-zeros at a time (a canonical row's columns are distinct, so no two threads
write one element; a barrier between rows): the same sums in the same order
every run, O(k nnz) work and no atomics.
"""

import numpy as np
from numba import config, cuda

from .. import _cuda_launch as launch
from .._cuda_math import INF, TWO, ZERO
from ..response._cuda import csr_rows_dense
from ._xp import seeds_loop


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


@cuda.jit(cache=True)
def _accumulate_csr(order, starts, flat_w, k, data, indices, indptr, out):
    """``out[j, :] += flat_w[e] * row(e // k)`` for the graph entries ``e = order[t]``,
    ``starts[j] <= t < starts[j + 1]`` (anchor j's, rows ascending), CSR rows; one
    block per anchor (grid-stride), threads over a row's non-zeros."""
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for j in range(cuda.blockIdx.x, out.shape[0], cuda.gridDim.x):  # uniform in the block
        for t in range(starts[j], starts[j + 1]):
            e = order[t]
            i = e // k
            wt = flat_w[e]
            for p in range(indptr[i] + tid, indptr[i + 1], nt):
                out[j, indices[p]] += wt * data[p]
            cuda.syncthreads()  # the next row may touch the same columns from other threads


# Under the simulator every thread is a Python thread: a narrower block, same code.
_ACC_THREADS = 8 if config.ENABLE_CUDASIM else 128

PTX_SIGNATURES = {
    "_accumulate_csr": [f"void(int64[::1], int64[::1], {t}[::1], int64, {t}[::1], int32[::1], int32[::1], {t}[:, ::1])"
                        for t in ("float32", "float64")],
    "_select_k": [
        f"void({t}[:, ::1], {t}[::1], {t}[::1], int64[:, ::1], {t}[:, ::1])" for t in ("float32", "float64")
    ],
    "_propagate": [f"void(int64[:, ::1], {t}[:, ::1], {t}[:, ::1], {t}[:, ::1])" for t in ("float32", "float64")],
    "_scatter_weights": [f"void(int64[:, ::1], {t}[:, ::1], {t}[:, ::1])" for t in ("float32", "float64")],
}


def _row_squares(xp, A):
    """Squared row norms (A's dtype) of a dense or CSR ``A``."""
    if hasattr(A, "tocsr"):
        return xp.reshape(xp.asarray(A.multiply(A).sum(axis=1), dtype=A.dtype), (-1,))
    return xp.sum(A * A, axis=1)


def _sparse_knn(X, anchors, out_idx, out_dist, *, xp):
    """anchor_knn with a CSR ``X`` or CSR ``anchors`` (the other dense)."""
    n, m = X.shape[0], anchors.shape[0]
    sparse_x = hasattr(X, "tocsr")
    sq_a = _row_squares(xp, anchors)
    if sparse_x:
        sq_x = _row_squares(xp, X)
        At = xp.ascontiguousarray(anchors.T)  # (d, m): the SpMM's dense operand
    else:
        X = xp.ascontiguousarray(X)
    step = launch.chunk_rows(n, 2 * m * np.dtype(X.dtype).itemsize)  # the product and its transpose
    with launch.launch_context(xp) as stream:
        for start in range(0, n, step):
            stop = min(n, start + step)
            Xc = X if (start == 0 and stop == n) else X[start:stop]
            if sparse_x:
                Dt, sq = xp.asarray(Xc @ At).T, sq_x[start:stop]
            else:
                Dt, sq = xp.asarray(anchors @ xp.ascontiguousarray(Xc.T)), xp.sum(Xc * Xc, axis=1)
            blocks, threads = launch.grid_1d(stop - start)
            launch.run_kernel(_select_k, blocks, threads, stream, xp.ascontiguousarray(Dt), xp.ascontiguousarray(sq),
                              sq_a, out_idx[start:stop], out_dist[start:stop])
    return out_idx, out_dist


def anchor_knn(X, anchors, *, xp, k):
    n, m = X.shape[0], anchors.shape[0]
    out_idx = xp.empty((n, k), dtype=xp.int64)
    out_dist = xp.empty((n, k), dtype=X.dtype)
    if n == 0:
        return out_idx, out_dist
    if hasattr(X, "tocsr") or hasattr(anchors, "tocsr"):
        return _sparse_knn(X, anchors, out_idx, out_dist, xp=xp)
    X, anchors = launch.contiguous(xp, X, anchors)
    sq_a = xp.sum(anchors * anchors, axis=1)
    step = launch.chunk_rows(n, m * np.dtype(X.dtype).itemsize)
    with launch.launch_context(xp) as stream:
        for start in range(0, n, step):
            stop = min(n, start + step)
            Xc = X[start:stop]
            Dt = xp.matmul(anchors, Xc.T)  # (m, rows): row i's distances down column i
            blocks, threads = launch.grid_1d(stop - start)
            launch.run_kernel(_select_k, blocks, threads, stream,
                              Dt, xp.sum(Xc * Xc, axis=1), sq_a, out_idx[start:stop], out_dist[start:stop])
    return out_idx, out_dist


def anchor_propagate(indices, weights, values, *, xp):
    V = values[:, None] if values.ndim == 1 else values
    out = xp.empty((indices.shape[0], V.shape[1]), dtype=V.dtype)
    total = indices.shape[0] * V.shape[1]
    if total:
        indices, weights, V = launch.contiguous(xp, xp.astype(indices, xp.int64), xp.astype(weights, V.dtype), V)
        blocks, threads = launch.grid_1d(total)
        with launch.launch_context(xp) as stream:
            launch.run_kernel(_propagate, blocks, threads, stream, indices, weights, V, out)
    return out[:, 0] if values.ndim == 1 else out


def _sparse_accumulate(indices, weights, R, *, xp, n_anchors):
    """anchor_accumulate of CSR rows ``R``: entries sorted by anchor, ``_accumulate_csr``."""
    out = xp.zeros((n_anchors, R.shape[1]), dtype=R.dtype)
    if R.shape[0] == 0 or R.nnz == 0:
        return out
    k = indices.shape[1]
    flat = xp.reshape(xp.astype(indices, xp.int64), (-1,))
    order = xp.astype(xp.argsort(flat, stable=True), xp.int64)
    starts = xp.astype(xp.searchsorted(xp.take(flat, order), xp.arange(n_anchors + 1, dtype=xp.int64)), xp.int64)
    flat_w = xp.ascontiguousarray(xp.reshape(xp.astype(weights, R.dtype), (-1,)))
    blocks = min(n_anchors, launch.MAX_GRID_YZ)
    with launch.launch_context(xp) as stream:
        launch.run_kernel(
            _accumulate_csr, blocks, _ACC_THREADS, stream,
            xp.ascontiguousarray(order), xp.ascontiguousarray(starts), flat_w, k, R.data, R.indices, R.indptr, out)
    return out


def anchor_accumulate(indices, weights, rows, *, xp, n_anchors):
    if hasattr(rows, "tocsr"):
        return _sparse_accumulate(indices, weights, rows, xp=xp, n_anchors=n_anchors)
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
            launch.run_kernel(_scatter_weights, blocks, threads, stream,
                              indices[start:stop], weights[start:stop], block)
            out += xp.matmul(block.T, R[start:stop])
    return out[:, 0] if rows.ndim == 1 else out


def kmeans_seeds(X, sq, uniforms, *, xp, first):
    """k-means++ seeding (:func:`kbackends.kernels.anchors._xp.seeds_loop`: one host read
    of the D(x)^2 per centre); a CSR row is densified on the device."""
    if hasattr(X, "tocsr"):
        return seeds_loop(X, sq, uniforms, first, xp,
                          lambda i: csr_rows_dense(X, xp.asarray(np.asarray([i], dtype=np.int64)), xp=xp)[0])
    return seeds_loop(X, sq, uniforms, first, xp, lambda i: X[i, :])
