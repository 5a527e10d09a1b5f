"""Numba-CUDA kernel-response update: one thread per row, on CuPy's current stream."""

import math

from numba import cuda

from .._cuda_launch import blocks_for, contiguous, launch_stream
from ._xp import KERNEL_CODES

_THREADS = 128


@cuda.jit
def _update(X, S, w, y, c, out, kernel_code, gamma):
    i = cuda.grid(1)
    if i >= X.shape[0]:
        return
    acc = 0.0
    for j in range(S.shape[0]):
        t = 0.0
        for k in range(X.shape[1]):
            if kernel_code == 0:
                diff = X[i, k] - S[j, k]
                t += diff * diff
            else:
                t += X[i, k] * S[j, k]
        acc += w[j] * (math.exp(-gamma * t) if kernel_code == 0 else t)
    out[i] = c[i] + y[i] * acc


def kernel_response_update(X, idx, w, y, c, *, xp, kernel, gamma):
    S = xp.take(X, idx, axis=0)
    X, S, w, y, c = contiguous(xp, X, S, w, xp.astype(y, c.dtype), c)
    out = xp.empty_like(c)
    if X.shape[0]:
        _update[blocks_for(X.shape[0], _THREADS), _THREADS, launch_stream(xp)](
            X, S, w, y, c, out, KERNEL_CODES[kernel], float(gamma)
        )
    return out
