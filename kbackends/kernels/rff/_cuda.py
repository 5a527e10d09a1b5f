"""Numba-CUDA kernels for random Fourier features, launched on CuPy's current stream.

Straightforward mappings (one thread per output element or per row, atomics to
reduce over rows); each is checked against the ``_xp`` oracle under the CUDA
simulator and on a real GPU when one is lent.
"""

import math

import numpy as np
from numba import cuda

from .._cuda_launch import blocks_for, contiguous, launch_stream
from ._shapes import as_matrix_shape as _as_matrix_shape

_THREADS = 128
_TILE = 16  # 16 x 16 threads for 2-D grids
_ROWS_PER_THREAD = 256  # rows one thread reduces in rff_weighted_sum
_GROUP = 8  # outputs (classes) one thread accumulates at once in rff_weighted_sum


@cuda.jit(device=True)
def _project(X, omega, i, j, z):
    for k in range(X.shape[1]):
        z += X[i, k] * omega[j, k]
    return z


@cuda.jit
def _features_kernel(X, omega, phase, cossin, out):
    j, i = cuda.grid(2)
    m = omega.shape[0]
    if i >= X.shape[0] or j >= m:
        return
    if cossin:
        z = _project(X, omega, i, j, phase[j] * 0)
        out[i, j] = math.cos(z)
        out[i, m + j] = math.sin(z)
    else:
        out[i, j] = math.cos(_project(X, omega, i, j, phase[j]))


@cuda.jit
def _predict_kernel(X, omega, phase, coef, cossin, out):
    i = cuda.grid(1)
    if i >= X.shape[0]:
        return
    m = omega.shape[0]
    n_out = coef.shape[1]
    for c in range(n_out):
        out[i, c] = 0
    acc = out[i, 0]
    for j in range(m):
        if cossin:
            z = _project(X, omega, i, j, phase[j] * 0)
            fc = math.cos(z)
            fs = math.sin(z)
            if n_out == 1:
                acc += fc * coef[j, 0] + fs * coef[m + j, 0]
            else:
                for c in range(n_out):
                    out[i, c] += fc * coef[j, c] + fs * coef[m + j, c]
        else:
            f = math.cos(_project(X, omega, i, j, phase[j]))
            if n_out == 1:
                acc += f * coef[j, 0]
            else:
                for c in range(n_out):
                    out[i, c] += f * coef[j, c]
    if n_out == 1:
        out[i, 0] = acc


@cuda.jit
def _weighted_sum_kernel(X, omega, phase, G, cossin, total):
    """total[c, j] += sum over this thread's rows of G[c, i] * feature_j(X[i])."""
    j, chunk = cuda.grid(2)
    m = omega.shape[0]
    n = X.shape[0]
    if j >= m:
        return
    start = chunk * _ROWS_PER_THREAD
    stop = min(n, start + _ROWS_PER_THREAD)
    if start >= stop:
        return
    acc_cos = cuda.local.array(_GROUP, dtype=np.float64)
    acc_sin = cuda.local.array(_GROUP, dtype=np.float64)
    for c0 in range(0, G.shape[0], _GROUP):
        n_c = min(_GROUP, G.shape[0] - c0)
        for c in range(n_c):
            acc_cos[c] = 0.0
            acc_sin[c] = 0.0
        for i in range(start, stop):
            if cossin:
                z = _project(X, omega, i, j, phase[j] * 0)
                fc = math.cos(z)
                fs = math.sin(z)
                for c in range(n_c):
                    acc_cos[c] += G[c0 + c, i] * fc
                    acc_sin[c] += G[c0 + c, i] * fs
            else:
                f = math.cos(_project(X, omega, i, j, phase[j]))
                for c in range(n_c):
                    acc_cos[c] += G[c0 + c, i] * f
        for c in range(n_c):
            cuda.atomic.add(total, (c0 + c, j), acc_cos[c])
            if cossin:
                cuda.atomic.add(total, (c0 + c, m + j), acc_sin[c])


def rff_features(X, omega, phase, *, xp, form):
    X, omega, phase = contiguous(xp, X, omega, phase)
    cossin = form == "cossin"
    m = omega.shape[0]
    n = X.shape[0]
    out = xp.empty((n, 2 * m if cossin else m), dtype=X.dtype)
    if n and m:
        grid = (blocks_for(m, _TILE), blocks_for(n, _TILE))
        _features_kernel[grid, (_TILE, _TILE), launch_stream(xp)](X, omega, phase, cossin, out)
    return out


def rff_predict(X, omega, phase, coef, *, xp, form):
    n = X.shape[0]
    X, omega, phase, coef2 = contiguous(xp, X, omega, phase, xp.reshape(coef, _as_matrix_shape(coef, rows_last=False)))
    out = xp.zeros((n, coef2.shape[1]), dtype=X.dtype)
    if n and omega.shape[0] and coef2.shape[1]:
        _predict_kernel[blocks_for(n, _THREADS), _THREADS, launch_stream(xp)](
            X, omega, phase, coef2, form == "cossin", out
        )
    return xp.reshape(out, (n,) + tuple(coef.shape[1:]))


def rff_weighted_sum(X, omega, phase, g, *, xp, form):
    cossin = form == "cossin"
    m = omega.shape[0]
    n = X.shape[0]
    X, omega, phase, G = contiguous(xp, X, omega, phase, xp.reshape(g, _as_matrix_shape(g, rows_last=True)))
    n_out = 2 * m if cossin else m
    total = xp.zeros((G.shape[0], n_out), dtype=xp.float64)
    if n and m and G.shape[0]:
        grid = (blocks_for(m, _TILE), blocks_for(blocks_for(n, _ROWS_PER_THREAD), _TILE))
        _weighted_sum_kernel[grid, (_TILE, _TILE), launch_stream(xp)](X, omega, phase, G, cossin, total)
    return xp.reshape(xp.astype(total, X.dtype), tuple(g.shape[:-1]) + (n_out,))
