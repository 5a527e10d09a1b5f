"""Numba kernel-response update: rows in parallel, the kernel row never stored."""

import math

import numpy as np
from numba import njit, prange

from ._xp import KERNEL_CODES


@njit(parallel=True, fastmath={"reassoc", "contract", "nsz", "arcp"}, cache=True)
def _update(X, S, w, y, c, out, kernel_code, gamma):
    n, d = X.shape
    m = S.shape[0]
    for i in prange(n):
        acc = 0.0
        for j in range(m):
            if kernel_code == 0:
                dist = 0.0
                for k in range(d):
                    diff = X[i, k] - S[j, k]
                    dist += diff * diff
                acc += w[j] * math.exp(-gamma * dist)
            else:
                dot = 0.0
                for k in range(d):
                    dot += X[i, k] * S[j, k]
                acc += w[j] * dot
        out[i] = c[i] + y[i] * acc


def kernel_response_update(X, idx, w, y, c, *, xp, kernel, gamma):
    S = np.ascontiguousarray(X[np.asarray(idx)])
    out = np.empty_like(c)
    if X.shape[0]:
        _update(X, S, w, y.astype(c.dtype, copy=False), c, out, KERNEL_CODES[kernel], float(gamma))
    return out
