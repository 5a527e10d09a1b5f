"""Kernel-response update on the GPU: ``c + y * (K(X, X[idx]) @ w)``.

- linear: ``K @ w = X @ (S.T @ w)`` with ``S = X[idx]``, two cuBLAS GEMVs
  through ``xp.matmul``: O(n d) instead of the O(n m d) of forming K.
- one changed dense row (SBP's default iteration): :func:`_one_row_response`, one
  launch, a warp a row (32 lanes summing strided products, lane 0 adding them in
  order; one lane a row under the simulator, whose threads are Python threads), the
  row's index read on the device;
- rbf: per row chunk (sized by :data:`.._cuda_launch.CHUNK_BYTES`) the inner
  products ``S @ X_chunk.T`` (m, rows) through ``xp.matmul`` (cuBLAS), then one
  fused Numba-CUDA kernel, one thread per row, reading its column (consecutive
  threads, consecutive addresses): ``c_i + y_i sum_j w_j exp(-gamma max(|x_i|^2
  + |s_j|^2 - 2 x_i.s_j, 0))``. The product is written once and read once; no
  atomics (each row is summed by one thread in index order). The rows' squared norms
  are the caller's where given (SBP computes them once a fit), else squared per call.

float32 input is computed in float32 (typed constants, a float32 ``-gamma``).

CSR ``X`` (cupyx.scipy.sparse on a GPU; scipy.sparse under the simulator, the
same calls): the m changed rows are densified on the device by
:func:`_csr_rows_dense` (an (m, d) block written from their non-zeros: no
host round trip, unlike cupyx's row indexing, which reads the new row
pointers' total back to size its output), the inner products ``X_chunk @ S.T``
come from the sparse library (cuSPARSE SpMM through cupyx), transposed into
the (m, rows) layout of the same fused epilogue ``_rbf_response``; the squared
row norms are the caller's (precomputed once). Linear: ``X @ (w @ S)``, one
SpMV. Bytes read per call: ``nnz (itemsize + 4) + (n + 1) 4`` for X (the CSR
arrays, int32 indices) plus ``n m itemsize`` written and read twice for the
product and its transpose, against ``n d itemsize`` for dense X: the sparse
path reads less once the density is under about ``itemsize / (itemsize + 4)``
(a9a: 11 %, its density; news20: 0.03 %). One chunk (``n m itemsize`` under
:data:`.._cuda_launch.CHUNK_BYTES`, every SBP batch size on a9a) makes no
host synchronisation; each further chunk slices X's rows, which reads two row
pointers to the host (cupyx).
"""

import math

import numpy as np
from numba import config, cuda

from .. import _cuda_launch as launch
from .._cuda_math import TWO, ZERO
from ._xp import KERNEL_CODES


@cuda.jit(cache=True)
def _rbf_response(Dt, sq_x, sq_s, w, neg_gamma, c, y, out):
    """``out[i] = c[i] + y[i] sum_j w[j] exp(neg_gamma max(sq_x[i] + sq_s[j] - 2 Dt[j, i], 0))``;
    one thread per row (:func:`grid_1d`)."""
    i = cuda.grid(1)
    m, n = Dt.shape
    if i >= n:
        return
    s = sq_x[i]
    acc = ZERO
    for j in range(m):
        acc += w[j] * math.exp(neg_gamma * max(s + sq_s[j] - TWO * Dt[j, i], ZERO))
    out[i] = c[i] + y[i] * acc


# A warp a row (the simulator runs each thread as a Python thread: there a "warp" of one
# lane keeps SBP's fits fast; tests/kbackends/test_cuda_ops.py runs the 32 lanes).
_WARP = 1 if config.ENABLE_CUDASIM else 32
_ROWS_A_BLOCK = 8  # warps of a block, one row a warp


@cuda.jit(cache=True)
def _one_row_response(X, idx, sq_x, w, neg_gamma, rbf, c, y, out):
    """Batch 1 in one launch: ``out[i] = c[i] + y[i] (w[0] k(x_i, x_r))``, r = ``idx[0]``
    read on the device (no gather of the row, no separate product or norms). A warp a
    row: lane l sums entries l, l + 32, ... (a warp reads 32 consecutive values of its
    row at once), lane 0 adds the 32 partial sums in order."""
    lane = cuda.threadIdx.x % _WARP
    warp = cuda.threadIdx.x // _WARP
    i = cuda.blockIdx.x * _ROWS_A_BLOCK + warp
    partial = cuda.shared.array((_ROWS_A_BLOCK, _WARP), X.dtype)
    n, d = X.shape
    r = idx[0]
    acc = ZERO
    if i < n:
        for k in range(lane, d, _WARP):
            acc += X[i, k] * X[r, k]
    partial[warp, lane] = acc
    cuda.syncthreads()
    if lane == 0 and i < n:
        dot = acc
        for l in range(1, _WARP):
            dot += partial[warp, l]
        if rbf:
            dot = math.exp(neg_gamma * max(sq_x[i] + sq_x[r] - TWO * dot, ZERO))
        out[i] = c[i] + y[i] * (w[0] * dot)


@cuda.jit(cache=True)
def _csr_rows_dense(data, indices, indptr, rows, out):
    """``out[j, indices[p]] = data[p]`` for the stored entries p of CSR row
    ``rows[j]``, on a zeroed ``out`` (:func:`grid_2d` over (rows, 32): y strides
    over the rows, x over a row's entries; a canonical row has no duplicate
    column, so no two threads write one element)."""
    x, y = cuda.grid(2)
    sx, sy = cuda.gridsize(2)
    for j in range(y, rows.shape[0], sy):
        r = rows[j]
        for p in range(indptr[r] + x, indptr[r + 1], sx):
            out[j, indices[p]] = data[p]


PTX_SIGNATURES = {
    "_rbf_response": [
        f"void({t}[:, ::1], {t}[::1], {t}[::1], {t}[::1], {t}, {t}[::1], {t}[::1], {t}[::1])"
        for t in ("float32", "float64")
    ],
    "_one_row_response": [
        f"void({t}[:, ::1], int64[::1], {t}[::1], {t}[::1], {t}, boolean, {t}[::1], {t}[::1], {t}[::1])"
        for t in ("float32", "float64")
    ],
    # cupyx CSR: int32 indices and row pointers; the rows an int64 device array
    "_csr_rows_dense": [f"void({t}[::1], int32[::1], int32[::1], int64[::1], {t}[:, ::1])"
                        for t in ("float32", "float64")],
}


def csr_rows_dense(X, rows, *, xp):
    """Rows ``rows`` (a 1-D integer device array) of the canonical CSR ``X`` as a dense
    (len(rows), d) array of X's dtype, on the device, with no host synchronisation."""
    m = rows.shape[0]
    out = xp.zeros((m, X.shape[1]), dtype=X.dtype)
    if m == 0 or X.nnz == 0:
        return out
    rows = xp.astype(xp.asarray(rows), xp.int64, copy=False)
    grid, block = launch.grid_2d(m, 32)
    with launch.launch_context(xp) as stream:
        launch.run_kernel(_csr_rows_dense, grid, block, stream, X.data, X.indices, X.indptr, rows, out)
    return out


def _squares(xp, A):
    return xp.sum(A * A, axis=1)


def _sparse_update(X, idx, w, y, c, *, xp, kernel, gamma, sq_norms):
    n, m = X.shape[0], idx.shape[0]
    dtype = X.dtype
    w, y = xp.astype(w, dtype), xp.astype(y, c.dtype)
    if n == 0 or m == 0:
        return c + y * xp.zeros_like(c)
    S = csr_rows_dense(X, idx, xp=xp)  # (m, d), the model's size
    if KERNEL_CODES[kernel] != 0:  # linear: one SpMV
        return c + y * (X @ xp.matmul(w, S))
    c, y = launch.contiguous(xp, c, y)
    if sq_norms is None:
        sq_norms = xp.reshape(xp.asarray(X.multiply(X).sum(axis=1), dtype=dtype), (-1,))
    sq_x = xp.ascontiguousarray(xp.astype(sq_norms, dtype, copy=False))
    sq_s = _squares(xp, S)
    St = xp.ascontiguousarray(S.T)  # (d, m): the SpMM's dense operand
    neg_gamma = np.dtype(dtype).type(-gamma)
    out = xp.empty_like(c)
    step = launch.chunk_rows(n, 2 * m * np.dtype(dtype).itemsize)  # the product and its transpose
    with launch.launch_context(xp) as stream:
        for start in range(0, n, step):
            stop = min(n, start + step)
            Xc = X if (start == 0 and stop == n) else X[start:stop]
            Dt = xp.ascontiguousarray(xp.asarray(Xc @ St).T)  # (m, rows): row i's products down column i
            blocks, threads = launch.grid_1d(stop - start)
            launch.run_kernel(_rbf_response, blocks, threads, stream,
                              Dt, sq_x[start:stop], sq_s, w, neg_gamma, c[start:stop], y[start:stop], out[start:stop])
    return out


def kernel_response_update(X, idx, w, y, c, *, xp, kernel, gamma, sq_norms=None):
    if hasattr(X, "tocsr"):  # canonical CSR (the op checked it)
        return _sparse_update(X, idx, w, y, c, xp=xp, kernel=kernel, gamma=gamma, sq_norms=sq_norms)
    if idx.shape[0] == 1 and X.shape[0]:
        return _one_row_update(X, idx, w, y, c, xp=xp, kernel=kernel, gamma=gamma, sq_norms=sq_norms)
    S = xp.take(X, idx, axis=0)
    dtype = X.dtype
    X, S = launch.contiguous(xp, X, S)
    w, y = xp.astype(w, dtype, copy=False), xp.astype(y, c.dtype, copy=False)  # no copy where they are already
    n, m = X.shape[0], S.shape[0]
    if n == 0 or m == 0:
        return c + y * xp.zeros_like(c)
    if KERNEL_CODES[kernel] != 0:  # linear
        return c + y * xp.matmul(X, xp.matmul(w, S))
    c, y = launch.contiguous(xp, c, y)
    sq_s = xp.sum(S * S, axis=1)
    neg_gamma = np.dtype(dtype).type(-gamma)  # a scalar of X's dtype: float32 stays float32
    out = xp.empty_like(c)
    step = launch.chunk_rows(n, m * np.dtype(dtype).itemsize)
    with launch.launch_context(xp) as stream:
        for start in range(0, n, step):
            stop = min(n, start + step)
            Xc = X[start:stop]
            blocks, threads = launch.grid_1d(stop - start)
            sq_x = xp.sum(Xc * Xc, axis=1) if sq_norms is None else sq_norms[start:stop]
            launch.run_kernel(_rbf_response, blocks, threads, stream,
                xp.matmul(S, Xc.T), sq_x, sq_s, w, neg_gamma,
                c[start:stop], y[start:stop], out[start:stop],
            )
    return out


def _one_row_update(X, idx, w, y, c, *, xp, kernel, gamma, sq_norms):
    """Dense batch 1 (SBP's default iteration): :func:`_one_row_response`, one launch
    where the general path makes a gather, the row's norm, a product and the epilogue."""
    dtype = X.dtype
    rbf = KERNEL_CODES[kernel] == 0
    X, c = launch.contiguous(xp, X, c)
    w, y = xp.astype(w, dtype, copy=False), xp.astype(y, c.dtype, copy=False)
    idx = xp.astype(idx, xp.int64, copy=False)
    if rbf:
        sq_x = xp.sum(X * X, axis=1) if sq_norms is None else xp.astype(sq_norms, dtype, copy=False)
    else:
        sq_x = xp.zeros((1,), dtype=dtype)  # not read
    w, y, idx, sq_x = launch.contiguous(xp, w, y, idx, sq_x)
    out = xp.empty_like(c)
    blocks = -(-X.shape[0] // _ROWS_A_BLOCK)
    with launch.launch_context(xp) as stream:
        launch.run_kernel(_one_row_response, blocks, _ROWS_A_BLOCK * _WARP, stream, X, idx, sq_x, w,
                          np.dtype(dtype).type(-gamma), rbf, c, y, out)
    return out
