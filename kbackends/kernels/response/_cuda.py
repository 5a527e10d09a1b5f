"""Kernel-response update on the GPU: ``c + y * (K(X, X[idx]) @ w)``.

Per row chunk (sized by :data:`.._cuda_launch.CHUNK_BYTES`): the inner products
``X_chunk @ S.T`` through ``xp.matmul`` (cuBLAS on a GPU), for the RBF kernel
one fused Numba-CUDA launch turning them into ``exp(-gamma * max(|x|^2 + |s|^2
- 2 x.s, 0))`` in place (float32 arithmetic for float32 input), then ``K @ w``
through ``xp.matmul`` (cuBLAS GEMV). No atomics: each output row is one GEMV
dot product.
"""

import math

import numpy as np
from numba import cuda

from .. import _cuda_launch as launch
from .._cuda_math import TWO, ZERO
from ._xp import KERNEL_CODES


@cuda.jit(cache=True)
def _rbf_inplace(D, sq_x, sq_s, neg_gamma):
    """``D[i, j] = exp(neg_gamma * max(sq_x[i] + sq_s[j] - 2 D[i, j], 0))``; a :func:`grid_2d` launch."""
    j, y = cuda.grid(2)
    n, m = D.shape
    if j >= m:
        return
    s = sq_s[j]
    for i in range(y, n, cuda.gridsize(2)[1]):
        D[i, j] = math.exp(neg_gamma * max(sq_x[i] + s - TWO * D[i, j], ZERO))


PTX_SIGNATURES = {
    "_rbf_inplace": [
        "void(float32[:, ::1], float32[::1], float32[::1], float32)",
        "void(float64[:, ::1], float64[::1], float64[::1], float64)",
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
    rbf = KERNEL_CODES[kernel] == 0
    sq_s = xp.sum(S * S, axis=1) if rbf else None
    neg_gamma = np.dtype(dtype).type(-gamma)  # a scalar of X's dtype: float32 stays float32
    step = launch.chunk_rows(n, m * np.dtype(dtype).itemsize)
    change = xp.empty((n,), dtype=dtype)
    with launch.launch_context(xp) as stream:
        for start in range(0, n, step):
            Xc = X[start : min(n, start + step)]
            D = xp.matmul(Xc, S.T)
            if rbf:
                grid, block = launch.grid_2d(D.shape[0], m)
                _rbf_inplace[grid, block, stream](D, xp.sum(Xc * Xc, axis=1), sq_s, neg_gamma)
            xp.matmul(D, w, out=change[start : start + D.shape[0]])
    return c + y * change
