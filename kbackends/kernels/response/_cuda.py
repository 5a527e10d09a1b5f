"""Kernel-response update on the GPU: ``c + y * (K(X, X[idx]) @ w)``.

- linear: ``K @ w = X @ (S.T @ w)`` with ``S = X[idx]``, two cuBLAS GEMVs
  through ``xp.matmul``: O(n d) instead of the O(n m d) of forming K.
- rbf: per row chunk (sized by :data:`.._cuda_launch.CHUNK_BYTES`) the inner
  products ``S @ X_chunk.T`` (m, rows) through ``xp.matmul`` (cuBLAS), then one
  fused Numba-CUDA kernel, one thread per row, reading its column (consecutive
  threads, consecutive addresses): ``c_i + y_i sum_j w_j exp(-gamma max(|x_i|^2
  + |s_j|^2 - 2 x_i.s_j, 0))``. The product is written once and read once; no
  atomics (each row is summed by one thread in index order).

float32 input is computed in float32 (typed constants, a float32 ``-gamma``).
"""

import math

import numpy as np
from numba import cuda

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


PTX_SIGNATURES = {
    "_rbf_response": [
        f"void({t}[:, ::1], {t}[::1], {t}[::1], {t}[::1], {t}, {t}[::1], {t}[::1], {t}[::1])"
        for t in ("float32", "float64")
    ],
}


def kernel_response_update(X, idx, w, y, c, *, xp, kernel, gamma):
    S = xp.take(X, idx, axis=0)
    dtype = X.dtype
    X, S = launch.contiguous(xp, X, S)
    w, y = xp.astype(w, dtype), xp.astype(y, c.dtype)
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
            _rbf_response[blocks, threads, stream](
                xp.matmul(S, Xc.T), xp.sum(Xc * Xc, axis=1), sq_s, w, neg_gamma,
                c[start:stop], y[start:stop], out[start:stop],
            )
    return out
