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
``_PARALLEL_KNN`` on (tens of ms of one thread's work): BLAS's threads spin after a
call and, on a loaded machine, S3GD's k-means and graph on w8a or phishing ran slower
with two threads than with one; BLAS is held to one thread below it. The fused pass
over CSR rows (no BLAS) goes parallel from ``_PARALLEL_KNN_CSR`` (a few ms of work),
where two threads on a quiet machine halve it.

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

from ..rows._numba import squared_sums

_CHUNK_ELEMENTS = 1 << 20  # rows per chunk * anchors: an 8 MB float64 cross-product block
_PARALLEL_WORK = 1 << 20
_PARALLEL_KNN = 1 << 26  # multiply-adds of an anchor_knn call from which it uses more than one thread
# ... for the fused pass over CSR rows (Numba threads only, no BLAS): from ~2 ms of one
# thread's work. Quiet 2-core machine, two threads against one: w8a's graph 4.8 against
# 9.1 ms, phishing's 1.7 against 3.3 ms (a9a the same ratio).
_PARALLEL_KNN_CSR = 1 << 23
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
# time); estimators built on these ops may densify X from 50 % on anyway.
_DENSE_ENOUGH = 0.5


@njit(cache=True, inline="always")
def _select_row(dots, sq_x, sq_a, k, out_idx, out_dist, i, r, dist, candidates):
    # The k nearest of row r (row i of the outputs) by (distance, anchor index). A bound
    # first, without branches: cut the anchors into at least k groups; the largest of the
    # group minima (distinct anchors) is at least the k-th smallest distance, so only
    # anchors within it (about a tenth of them for k = 5 of 100) can be among the k nearest. Those are kept in index
    # order, then inserted; a direct insertion over every anchor mispredicted a branch
    # at each new k-th nearest and cost as much as the products.
    # dist, candidates: (m,) scratch of the caller's
    m = dots.shape[1]
    base = sq_x[r]
    for j in range(m):
        dist[j] = max(base + sq_a[j] - 2.0 * dots[r, j], 0.0)
    size = max(1, m // k)  # so ceil(m / size) >= k groups
    bound = -np.inf
    for start in range(0, m, size):
        low = np.inf
        for j in range(start, min(m, start + size)):
            low = min(low, dist[j])
        bound = max(bound, low)
    count = 0
    for j in range(m):
        candidates[count] = j
        count += dist[j] <= bound
    for t in range(k):
        out_idx[i, t] = -1
        out_dist[i, t] = np.inf
    for c in range(count):
        j = candidates[c]
        d = dist[j]
        if d < out_dist[i, k - 1]:  # candidates come in index order: strict keeps ties by index
            pos = k - 1
            while pos > 0 and d < out_dist[i, pos - 1]:
                out_dist[i, pos] = out_dist[i, pos - 1]
                out_idx[i, pos] = out_idx[i, pos - 1]
                pos -= 1
            out_dist[i, pos] = d
            out_idx[i, pos] = j


@njit(parallel=True, cache=True)
def _select_parallel(dots, sq_x, sq_a, k, out_idx, out_dist, offset):
    n, m = dots.shape
    n_blocks = min(n, 4 * get_num_threads())
    size = (n + n_blocks - 1) // n_blocks
    for b in prange(n_blocks):
        dist, candidates = np.empty(m, dtype=dots.dtype), np.empty(m, dtype=np.int64)
        for r in range(b * size, min(n, (b + 1) * size)):
            _select_row(dots, sq_x, sq_a, k, out_idx, out_dist, offset + r, r, dist, candidates)


@njit(cache=True)
def _select_serial(dots, sq_x, sq_a, k, out_idx, out_dist, offset):
    dist, candidates = np.empty(dots.shape[1], dtype=dots.dtype), np.empty(dots.shape[1], dtype=np.int64)
    for r in range(dots.shape[0]):
        _select_row(dots, sq_x, sq_a, k, out_idx, out_dist, offset + r, r, dist, candidates)


def _is_csr(A):
    return hasattr(A, "tocsr")


def squared_norms(A):
    """Squared row norms of a dense or CSR matrix, in its dtype (O(nnz) for CSR)."""
    return squared_sums(A, xp=np, axis=1, dtype=A.dtype.name)


def _cross(Xc, anchors):
    """``Xc @ anchors.T`` as a dense C-contiguous (len(Xc), m) array, either side CSR."""
    if _is_csr(anchors):
        prod = anchors @ Xc.T if not _is_csr(Xc) else (anchors @ Xc.T).toarray()
        return np.ascontiguousarray(np.asarray(prod).T)
    return np.ascontiguousarray(np.asarray(Xc @ anchors.T))


@njit(cache=True, inline="always")
def _csr_row(data, indices, indptr, AT, sq_x, sq_a, k, out_idx, out_dist, i, dots, dist, candidates):
    # The row's products with every anchor, its nonzeros added in order; four at a time
    # (the same order of additions) so dots is loaded and stored once per four.
    m = dots.shape[1]
    for j in range(m):
        dots[0, j] = 0.0
    # (indices read from arrays index as unsigned: Numba tests every signed index for wrap-around)
    t, stop = indptr[i], indptr[i + 1]
    while t + 4 <= stop:
        u0, u1, u2, u3 = np.uint64(t), np.uint64(t + 1), np.uint64(t + 2), np.uint64(t + 3)
        v0, v1, v2, v3 = data[u0], data[u1], data[u2], data[u3]
        a0, a1 = AT[np.uint64(indices[u0])], AT[np.uint64(indices[u1])]
        a2, a3 = AT[np.uint64(indices[u2])], AT[np.uint64(indices[u3])]
        for j in range(m):
            dots[0, j] = (((dots[0, j] + v0 * a0[j]) + v1 * a1[j]) + v2 * a2[j]) + v3 * a3[j]
        t += 4
    while t < stop:
        v, a = data[np.uint64(t)], AT[np.uint64(indices[np.uint64(t)])]
        for j in range(m):
            dots[0, j] += v * a[j]
        t += 1
    _select_row(dots, sq_x[i : i + 1], sq_a, k, out_idx, out_dist, i, 0, dist, candidates)


@njit(parallel=True, cache=True)
def _knn_csr_parallel(data, indices, indptr, AT, sq_x, sq_a, k, out_idx, out_dist, n_blocks):
    n, m = out_idx.shape[0], AT.shape[1]
    size = (n + n_blocks - 1) // n_blocks
    for b in prange(n_blocks):
        dots = np.empty((1, m), dtype=AT.dtype)
        dist, candidates = np.empty(m, dtype=AT.dtype), np.empty(m, dtype=np.int64)
        for i in range(b * size, min(n, (b + 1) * size)):
            _csr_row(data, indices, indptr, AT, sq_x, sq_a, k, out_idx, out_dist, i, dots, dist, candidates)


@njit(cache=True)
def _knn_csr_serial(data, indices, indptr, AT, sq_x, sq_a, k, out_idx, out_dist, n_blocks):
    m = AT.shape[1]
    dots = np.empty((1, m), dtype=AT.dtype)
    dist, candidates = np.empty(m, dtype=AT.dtype), np.empty(m, dtype=np.int64)
    for i in range(out_idx.shape[0]):
        _csr_row(data, indices, indptr, AT, sq_x, sq_a, k, out_idx, out_dist, i, dots, dist, candidates)


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
        knn = _knn_csr_parallel if X.nnz * m >= _PARALLEL_KNN_CSR else _knn_csr_serial
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
            j = np.uint64(indices[i, t])  # unsigned: no wrap-around tests
            for q in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
                out[j, np.uint64(cols[q])] += w * data[q]


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



@njit(cache=True)
def _seeds(data, indices, indptr, col_data, col_rows, col_ptr, XT, sparse, sq, first, uniforms, center, chosen):
    # k-means++ as kbackends.kernels.anchors._xp.seeds_loop: D(x)^2 in X's dtype, its
    # running sum in float64. The products of every row with a centre go column by column
    # (X's columns: CSC for a CSR X, X.T for a dense one) over the centre's nonzeros only:
    # each row still adds its terms in column order, as a row-by-row loop would, but the
    # adds of different rows are independent (no chain of dependent adds) and a dense
    # column is one vectorised pass. ``center``: (d,) scratch of X's dtype.
    n = sq.shape[0]
    zero = sq[0] * 0
    two = zero + 2
    closest = np.empty(n, dtype=sq.dtype)
    dots = np.empty(n, dtype=sq.dtype)
    running = np.empty(n, dtype=np.float64)
    taken = np.zeros(n, dtype=np.bool_)
    c = first
    for s in range(chosen.shape[0]):
        chosen[s] = c
        taken[c] = True
        dots[:] = zero
        norm = zero
        if sparse:
            for t in range(indptr[c], indptr[c + 1]):  # the centre's nonzeros, in column order
                v = data[t]
                norm += v * v
                j = indices[t]
                for q in range(col_ptr[j], col_ptr[j + 1]):
                    dots[col_rows[q]] += col_data[q] * v
        else:
            for j in range(XT.shape[0]):
                center[j] = XT[j, c]
                norm += center[j] * center[j]
            for j in range(XT.shape[0]):
                v = center[j]
                if v != 0:
                    for i in range(n):
                        dots[i] += XT[j, i] * v
        for i in range(n):
            v = max(sq[i] + norm - two * dots[i], zero)
            closest[i] = v if s == 0 else min(closest[i], v)
        if s + 1 == chosen.shape[0]:
            break
        total = 0.0
        for i in range(n):
            total += closest[i]
            running[i] = total
        u = uniforms[s]
        if total > 0:
            c = min(np.searchsorted(running, u * total, side="right"), n - 1)
        else:  # every row duplicates a centre: the floor(u * count)-th row not yet chosen
            free = 0
            for i in range(n):
                free += not taken[i]
            pick = int(u * free)
            for i in range(n):
                if not taken[i]:
                    if pick == 0:
                        c = i
                        break
                    pick -= 1


def kmeans_seeds(X, sq, uniforms, *, xp, first):
    """k-means++ seeding compiled (the loop of ``_xp.seeds_loop`` costs ~40 us of
    Python a centre): the chosen rows, int64."""
    uniforms = np.asarray(uniforms, dtype=np.float64)
    chosen = np.empty(uniforms.shape[0] + 1, dtype=np.int64)
    center = np.zeros(X.shape[1], dtype=X.dtype)
    sq = np.asarray(sq, dtype=X.dtype)
    none_i, none_f = np.zeros(1, dtype=np.int32), np.zeros(0, dtype=X.dtype)
    if _is_csr(X):
        columns = X.tocsc()  # canonical: each column's rows in increasing order
        _seeds(X.data, X.indices, X.indptr, columns.data, columns.indices, columns.indptr,
               np.zeros((0, 0), dtype=X.dtype), True, sq, first, uniforms, center, chosen)
    else:
        _seeds(none_f, none_i, none_i, none_f, none_i, none_i, np.ascontiguousarray(X.T), False, sq, first, uniforms,
               center, chosen)
    return chosen
