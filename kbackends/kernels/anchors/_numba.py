"""Numba anchor kernels.

``anchor_knn``: the cross products ``X_chunk @ anchors.T`` come from BLAS (the
O(n m d) part), then one pass per row keeps the k smallest by insertion (k is
small), written straight into the outputs: no (n, m) matrix is kept.
``anchor_accumulate``: rows split into one block per thread, each block summed
into its own (m, q) buffer, the buffers added at the end (no races, no atomics).
Below ``_PARALLEL_WORK`` element operations the serial twin runs: on a busy
2-core machine opening a parallel region costs milliseconds (measured 15 ms
per call for k-means on 2000 rows). ``anchor_knn`` counts its work as the
multiply-adds of the cross products and goes parallel (Numba and BLAS) only from
``_PARALLEL_KNN`` on (tens of ms of one thread's work): S3GD's k-means and graph on
w8a or phishing (a few ms each) ran slower with two threads than with one, and
BLAS is held to one thread below it as well.

Sparse rows (scipy CSR, canonical: the ops convert once) are taken where S3GD
needs them, never densified whole: in ``anchor_knn`` either side may be CSR (the
rows against dense anchors: one fused Numba pass, or BLAS on densified chunks of
at most ``_CHUNK_ELEMENTS`` values when the rows are >= 50 % dense; dense centres
against CSR sample rows: the snap of Eq. 13, scipy's sparse x dense), the squared
norms come from the stored values (O(nnz)); ``anchor_accumulate`` of CSR rows adds each
row's nonzeros into a dense (m, q) result (O(nnz k)): the anchors' sums are dense anyway.
"""

import numpy as np
from numba import get_num_threads, njit, prange

_CHUNK_ELEMENTS = 1 << 20  # rows per chunk * anchors: an 8 MB float64 cross-product block
_PARALLEL_WORK = 1 << 20
_PARALLEL_KNN = 1 << 26  # multiply-adds of an anchor_knn call from which it uses more than one thread
_BLAS = []  # a threadpoolctl controller, made on first use (listing the loaded libraries takes ~1 ms)


def _one_blas_thread():
    """A context holding BLAS to one thread (threadpoolctl, one controller per process)."""
    if not _BLAS:
        from threadpoolctl import ThreadpoolController

        _BLAS.append(ThreadpoolController())
    return _BLAS[0].limit(limits=1, user_api="blas")
# CSR rows at least this dense go through BLAS in densified row chunks (at most
# _CHUNK_ELEMENTS values at a time). Below it the fused pass is as fast or faster (one
# thread: phishing, 44 % dense, 8.6 ms against 11.9 ms for the chunks, whose densifying
# and slicing cost 3 ms; random CSR of 68 or 300 columns at 10-45 %: 0.4-1.0x the chunks'
# time); the estimators densify X from 50 % on anyway (algorithms/_validation.py).
_DENSE_ENOUGH = 0.5


@njit(cache=True, inline="always")
def _select_row(dots, sq_x, sq_a, k, out_idx, out_dist, i, r):
    # The k nearest so far are kept in order with the k-th distance in a local (``worst``):
    # most anchors cost one compare; the output row is written on insertion only.
    for t in range(k):
        out_idx[i, t] = -1
        out_dist[i, t] = np.inf
    worst = np.inf
    base = sq_x[r]
    for j in range(dots.shape[1]):
        dist = base + sq_a[j] - 2.0 * dots[r, j]
        if dist < 0.0:
            dist = 0.0
        if dist < worst:
            pos = k - 1
            while pos > 0 and dist < out_dist[i, pos - 1]:  # strict: ties keep the lower index
                out_dist[i, pos] = out_dist[i, pos - 1]
                out_idx[i, pos] = out_idx[i, pos - 1]
                pos -= 1
            out_dist[i, pos] = dist
            out_idx[i, pos] = j
            worst = out_dist[i, k - 1]


@njit(parallel=True, cache=True)
def _select_parallel(dots, sq_x, sq_a, k, out_idx, out_dist, offset):
    for r in prange(dots.shape[0]):
        _select_row(dots, sq_x, sq_a, k, out_idx, out_dist, offset + r, r)


@njit(cache=True)
def _select_serial(dots, sq_x, sq_a, k, out_idx, out_dist, offset):
    for r in range(dots.shape[0]):
        _select_row(dots, sq_x, sq_a, k, out_idx, out_dist, offset + r, r)


def _is_csr(A):
    return hasattr(A, "tocsr")


def squared_norms(A):
    """Squared row norms of a dense or CSR matrix, in its dtype (O(nnz) for CSR)."""
    if _is_csr(A):
        out = np.zeros(A.shape[0], dtype=A.dtype)
        lengths = np.diff(A.indptr)
        if A.nnz:
            out[lengths > 0] = np.add.reduceat(A.data * A.data, A.indptr[:-1][lengths > 0])
        return out
    return np.einsum("ij,ij->i", A, A)


def _cross(Xc, anchors):
    """``Xc @ anchors.T`` as a dense C-contiguous (len(Xc), m) array, either side CSR."""
    if _is_csr(anchors):
        prod = anchors @ Xc.T if not _is_csr(Xc) else (anchors @ Xc.T).toarray()
        return np.ascontiguousarray(np.asarray(prod).T)
    return np.ascontiguousarray(np.asarray(Xc @ anchors.T))


@njit(cache=True, inline="always")
def _csr_row(data, indices, indptr, AT, sq_x, sq_a, k, out_idx, out_dist, i, dots):
    for j in range(dots.shape[1]):
        dots[0, j] = 0.0
    for t in range(indptr[i], indptr[i + 1]):
        v = data[t]
        c = indices[t]
        for j in range(dots.shape[1]):
            dots[0, j] += v * AT[c, j]
    _select_row(dots, sq_x[i : i + 1], sq_a, k, out_idx, out_dist, i, 0)


@njit(parallel=True, cache=True)
def _knn_csr_parallel(data, indices, indptr, AT, sq_x, sq_a, k, out_idx, out_dist, n_blocks):
    n, m = out_idx.shape[0], AT.shape[1]
    size = (n + n_blocks - 1) // n_blocks
    for b in prange(n_blocks):
        dots = np.empty((1, m), dtype=AT.dtype)
        for i in range(b * size, min(n, (b + 1) * size)):
            _csr_row(data, indices, indptr, AT, sq_x, sq_a, k, out_idx, out_dist, i, dots)


@njit(cache=True)
def _knn_csr_serial(data, indices, indptr, AT, sq_x, sq_a, k, out_idx, out_dist, n_blocks):
    dots = np.empty((1, AT.shape[1]), dtype=AT.dtype)
    for i in range(out_idx.shape[0]):
        _csr_row(data, indices, indptr, AT, sq_x, sq_a, k, out_idx, out_dist, i, dots)


def anchor_knn(X, anchors, *, xp, k):
    n, m = X.shape[0], anchors.shape[0]
    out_idx = np.empty((n, k), dtype=np.int64)
    out_dist = np.empty((n, k), dtype=X.dtype)
    if n == 0:
        return out_idx, out_dist
    sq_a = squared_norms(anchors)
    if _is_csr(X) and not _is_csr(anchors) and X.nnz < _DENSE_ENOUGH * n * X.shape[1]:
        # CSR rows against dense anchors, fused: per row, its nonzeros times the rows of
        # anchors^T (d, m) into one m-vector, then the k smallest; no chunk buffer.
        knn = _knn_csr_parallel if X.nnz * m >= _PARALLEL_KNN else _knn_csr_serial
        knn(X.data, X.indices, X.indptr, np.ascontiguousarray(anchors.T), squared_norms(X), sq_a, k, out_idx,
            out_dist, min(n, 4 * get_num_threads()))
        return out_idx, out_dist
    stored = X.nnz if _is_csr(X) else n * X.shape[1]
    if stored * m < _PARALLEL_KNN:  # a few ms of work: one thread (BLAS and the selection)
        with _one_blas_thread():
            _knn_chunks(X, anchors, k, out_idx, out_dist, sq_a, parallel=False)
    else:
        _knn_chunks(X, anchors, k, out_idx, out_dist, sq_a, parallel=True)
    return out_idx, out_dist


def _knn_chunks(X, anchors, k, out_idx, out_dist, sq_a, parallel):
    """``anchor_knn`` by row chunks: the cross products by BLAS (scipy for CSR
    anchors), then the k smallest per row."""
    n, m = X.shape[0], anchors.shape[0]
    sq_x = squared_norms(X)  # once for all chunks (O(nnz) for CSR rows)
    step = max(1, _CHUNK_ELEMENTS // max(1, m, X.shape[1] if _is_csr(X) else 1))
    for start in range(0, n, step):
        stop = min(n, start + step)
        Xc = X[start:stop]
        if _is_csr(Xc) and not _is_csr(anchors):  # dense enough: a chunk of rows densified, BLAS
            Xc = Xc.toarray()
        select = _select_parallel if parallel and (stop - start) * m > _PARALLEL_WORK else _select_serial
        select(_cross(Xc, anchors), sq_x[start:stop], sq_a, k, out_idx, out_dist, start)


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


@njit(cache=True)
def _accumulate_csr_rows(indices, weights, data, cols, indptr, out):
    for i in range(indices.shape[0]):
        for t in range(indices.shape[1]):
            w = weights[i, t]
            j = indices[i, t]
            for q in range(indptr[i], indptr[i + 1]):
                out[j, cols[q]] += w * data[q]


def _accumulate_csr(indices, weights, rows, n_anchors):
    out = np.zeros((n_anchors, rows.shape[1]), dtype=rows.dtype)
    _accumulate_csr_rows(indices, weights.astype(rows.dtype, copy=False), rows.data, rows.indices, rows.indptr, out)
    return out


def anchor_accumulate(indices, weights, rows, *, xp, n_anchors):
    if _is_csr(rows):
        return _accumulate_csr(indices, weights, rows, n_anchors)
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
