"""Numba-CUDA anchor kernels on CuPy's current stream.

``anchor_knn``: one thread per row, the k best kept by insertion in the output
rows (ties keep the lower anchor index, as the oracle's stable sort);
``anchor_propagate``: one thread per (row, column); ``anchor_accumulate``: one
thread per (row, column), atomics onto the (m, q) output.
"""

from numba import cuda

from .._cuda_launch import blocks_for, contiguous, launch_stream

_THREADS = 128


@cuda.jit
def _knn(X, A, sq_a, k, out_idx, out_dist):
    i = cuda.grid(1)
    if i >= X.shape[0]:
        return
    d = X.shape[1]
    sq_x = 0.0
    for c in range(d):
        sq_x += X[i, c] * X[i, c]
    for t in range(k):
        out_idx[i, t] = -1
        out_dist[i, t] = 3.0e38
    for j in range(A.shape[0]):
        dot = 0.0
        for c in range(d):
            dot += X[i, c] * A[j, c]
        dist = sq_x + sq_a[j] - 2.0 * dot
        if dist < 0.0:
            dist = 0.0
        if dist < out_dist[i, k - 1]:
            pos = k - 1
            while pos > 0 and dist < out_dist[i, pos - 1]:
                out_dist[i, pos] = out_dist[i, pos - 1]
                out_idx[i, pos] = out_idx[i, pos - 1]
                pos -= 1
            out_dist[i, pos] = dist
            out_idx[i, pos] = j


def anchor_knn(X, anchors, *, xp, k):
    n = X.shape[0]
    out_idx = xp.empty((n, k), dtype=xp.int64)
    out_dist = xp.empty((n, k), dtype=X.dtype)
    if n:
        X, anchors = contiguous(xp, X, anchors)
        sq_a = xp.sum(anchors * anchors, axis=1)
        _knn[blocks_for(n, _THREADS), _THREADS, launch_stream(xp)](X, anchors, sq_a, k, out_idx, out_dist)
    return out_idx, out_dist


@cuda.jit
def _propagate(indices, weights, values, out):
    t = cuda.grid(1)
    q = values.shape[1]
    if t >= indices.shape[0] * q:
        return
    i = t // q
    c = t - i * q
    acc = 0.0
    for s in range(indices.shape[1]):
        acc += weights[i, s] * values[indices[i, s], c]
    out[i, c] = acc


def anchor_propagate(indices, weights, values, *, xp):
    V = values[:, None] if values.ndim == 1 else values
    out = xp.empty((indices.shape[0], V.shape[1]), dtype=V.dtype)
    total = indices.shape[0] * V.shape[1]
    if total:
        indices, weights, V = contiguous(xp, indices, xp.astype(weights, V.dtype), V)
        _propagate[blocks_for(total, _THREADS), _THREADS, launch_stream(xp)](indices, weights, V, out)
    return out[:, 0] if values.ndim == 1 else out


@cuda.jit
def _accumulate(indices, weights, rows, out):
    t = cuda.grid(1)
    q = rows.shape[1]
    if t >= rows.shape[0] * q:
        return
    i = t // q
    c = t - i * q
    value = rows[i, c]
    for s in range(indices.shape[1]):
        cuda.atomic.add(out, (indices[i, s], c), weights[i, s] * value)


def anchor_accumulate(indices, weights, rows, *, xp, n_anchors):
    R = rows[:, None] if rows.ndim == 1 else rows
    out = xp.zeros((n_anchors, R.shape[1]), dtype=R.dtype)
    total = R.shape[0] * R.shape[1]
    if total:
        indices, weights, R = contiguous(xp, indices, xp.astype(weights, R.dtype), R)
        _accumulate[blocks_for(total, _THREADS), _THREADS, launch_stream(xp)](indices, weights, R, out)
    return out[:, 0] if rows.ndim == 1 else out
