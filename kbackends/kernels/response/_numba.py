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


@njit(parallel=True, fastmath={"reassoc", "contract", "nsz", "arcp"}, cache=True)
def _update_from_dots(dots, sq_x, sq_s, w, y, c, out, kernel_code, gamma):
    n, m = dots.shape
    for i in prange(n):
        acc = 0.0
        for j in range(m):
            if kernel_code == 0:
                acc += w[j] * math.exp(-gamma * max(sq_x[i] + sq_s[j] - 2.0 * dots[i, j], 0.0))
            else:
                acc += w[j] * dots[i, j]
        out[i] = c[i] + y[i] * acc


# From this many changed rows on, the inner products come from one BLAS product
# per row chunk (X @ S.T, cache-blocked, all cores) and only the exp and the
# weighted sum stay in Numba: the direct loop reads X once per changed row.
_GEMM_FROM = 8
_CHUNK_ELEMENTS = 1 << 20


def kernel_response_update(X, idx, w, y, c, *, xp, kernel, gamma):
    S = np.ascontiguousarray(X[np.asarray(idx)])
    out = np.empty_like(c)
    n, m = X.shape[0], S.shape[0]
    y = y.astype(c.dtype, copy=False)
    if not n:
        return out
    if m < _GEMM_FROM:
        _update(X, S, w, y, c, out, KERNEL_CODES[kernel], float(gamma))
        return out
    sq_s = np.einsum("ij,ij->i", S, S)
    step = max(1, _CHUNK_ELEMENTS // m)
    for start in range(0, n, step):
        rows = slice(start, min(n, start + step))
        Xc = X[rows]
        sq_x = np.einsum("ij,ij->i", Xc, Xc)
        _update_from_dots(Xc @ S.T, sq_x, sq_s, w, y[rows], c[rows], out[rows], KERNEL_CODES[kernel], float(gamma))
    return out
