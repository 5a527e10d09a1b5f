"""Numba CPU kernels for random Fourier features.

The products ``X @ omega.T`` are formed row by row in a per-thread scratch
vector and consumed at once (cos, then the dot with ``coef`` or the
accumulation into the gradient), so nothing of size (n, m) is written to
memory. The cosine is a polynomial after Cody-Waite reduction
modulo pi that the compiler vectorises: absolute error ~2e-7 in float32 (the
float32 rounding of the argument already costs more), ~4e-16 in float64. An
argument beyond the reduction's domain (|t| > 8192 in float32, 2^20 in float64)
is first replaced by its angle in [-pi, pi] from the C library's ``cos`` and
``sin`` (rare, scalar), so every finite argument gets a correct value and inf or
NaN gives NaN.
"""

import math

import numpy as np
from numba import njit, prange, types
from numba.extending import overload

from ._shapes import as_matrix_shape as _as_matrix_shape

# float32: least-squares polynomial fits on [0, pi/2], in r^2 (even for cos, odd
# for sin), computed once at import in float64 and rounded to float32.
_grid = np.linspace(0.0, math.pi / 2, 4097)
_COS_C = np.linalg.lstsq(np.stack([_grid ** (2 * i) for i in range(7)], 1), np.cos(_grid), rcond=None)[0]
_SIN_C = np.linalg.lstsq(np.stack([_grid ** (2 * i + 1) for i in range(7)], 1), np.sin(_grid), rcond=None)[0]
C0, C1, C2, C3, C4, C5, C6 = (np.float32(c) for c in _COS_C)
S0, S1, S2, S3, S4, S5, S6 = (np.float32(c) for c in _SIN_C)
# float64: Taylor series to r^22 / r^23; the first term left out is below 1e-19 on [-pi/2, pi/2].
D0, D1, D2, D3, D4, D5, D6, D7, D8, D9, D10, D11 = ((-1) ** k / math.factorial(2 * k) for k in range(12))
E0, E1, E2, E3, E4, E5, E6, E7, E8, E9, E10, E11 = ((-1) ** k / math.factorial(2 * k + 1) for k in range(12))

# Cody-Waite: pi = P1 + P2 + P3, P1 and P2 with few significant bits (12 for
# float32, 32 for float64) so that k * P1 and k * P2 are exact for |k| < 2^12
# (2^21) without relying on fused multiply-adds. The reduced argument is then
# accurate to a few ulps of pi/2 for |t| <= REDUCE_LIMIT; a larger argument is
# first brought into [-pi, pi] by `_reduce_row` (the C library's full range
# reduction, correct for every finite input).
INV_PI32 = np.float32(1.0 / math.pi)
PI1_32 = np.float32(3.1416015625)  # 12 bits
PI2_32 = np.float32(-8.907169103622437e-06)  # 12 bits
PI3_32 = np.float32(-1.7411031505432106e-09)
HALF32 = np.float32(0.5)
REDUCE_LIMIT32 = np.float32(8192.0)  # |k| <= 2608 < 2^12
INV_PI64 = 1.0 / math.pi
PI1_64 = 3.1415926534682512  # 32 bits
PI2_64 = 1.2154201012607932e-10  # 32 bits
PI3_64 = 4.044532497591901e-21
REDUCE_LIMIT64 = 1048576.0  # 2^20: |k| <= 333780 < 2^21

_FASTMATH = {"reassoc", "contract", "nsz", "arcp"}
_ROW_TILE = 64  # rows per parallel task; one scratch vector per task


# The reductions are compiled without "reassoc": with it, LLVM folds the three
# products into t - k*(P1 + P2 + P3) = t - k*fl(pi), an error of k ulps (measured
# 4e-15 at t = 100 in float64). Their instructions keep these flags when
# inlined into the vectorised loops.
_NO_REASSOC = {"contract", "nsz", "arcp"}


@njit(fastmath=_NO_REASSOC)
def _reduce_by_pi32(t):
    """``t = k*pi + r`` with ``|r| <= pi/2``; returns ``(r, (-1)^k)`` so that
    cos(t) = sign cos(r), sin(t) = sign sin(r). Valid for |t| <= REDUCE_LIMIT32."""
    k = np.floor(t * INV_PI32 + HALF32)
    r = ((t - k * PI1_32) - k * PI2_32) - k * PI3_32
    return r, np.float32(1 - 2 * (np.int32(k) & 1))


@njit(fastmath=_NO_REASSOC)
def _reduce_by_pi64(t):
    """As :func:`_reduce_by_pi32` in float64, valid for |t| <= REDUCE_LIMIT64."""
    k = np.floor(t * INV_PI64 + 0.5)
    r = ((t - k * PI1_64) - k * PI2_64) - k * PI3_64
    return r, np.float64(1 - 2 * (np.int64(k) & 1))


def fast_cos(t):
    return math.cos(t)


def fast_sin(t):
    return math.sin(t)


def reduce_limit(t):
    return REDUCE_LIMIT64


@overload(fast_cos, jit_options={"fastmath": _FASTMATH})
def _fast_cos_impl(t):
    """Polynomial cos, vectorisable; accurate to ~2e-7 (float32) or ~1e-15
    (float64) for |t| <= reduce_limit(t), meaningless beyond."""
    if t == types.float32:

        def impl32(t):
            r, sign = _reduce_by_pi32(t)
            r2 = r * r
            return sign * (((((((C6 * r2 + C5) * r2 + C4) * r2 + C3) * r2 + C2) * r2 + C1) * r2) + C0)

        return impl32

    def impl64(t):
        r, sign = _reduce_by_pi64(t)
        r2 = r * r
        p = ((((D11 * r2 + D10) * r2 + D9) * r2 + D8) * r2 + D7) * r2 + D6
        return sign * ((((((p * r2 + D5) * r2 + D4) * r2 + D3) * r2 + D2) * r2 + D1) * r2 + D0)

    return impl64


@overload(fast_sin, jit_options={"fastmath": _FASTMATH})
def _fast_sin_impl(t):
    """Polynomial sin, same domain and accuracy as :func:`fast_cos`."""
    if t == types.float32:

        def impl32(t):
            r, sign = _reduce_by_pi32(t)
            r2 = r * r
            return sign * ((((((((S6 * r2 + S5) * r2 + S4) * r2 + S3) * r2 + S2) * r2 + S1) * r2) + S0) * r)

        return impl32

    def impl64(t):
        r, sign = _reduce_by_pi64(t)
        r2 = r * r
        p = ((((E11 * r2 + E10) * r2 + E9) * r2 + E8) * r2 + E7) * r2 + E6
        return sign * (((((((p * r2 + E5) * r2 + E4) * r2 + E3) * r2 + E2) * r2 + E1) * r2 + E0) * r)

    return impl64


@overload(reduce_limit)
def _reduce_limit_impl(t):
    if t == types.float32:
        return lambda t: REDUCE_LIMIT32
    return lambda t: REDUCE_LIMIT64


def _n_rows(X):
    """Rows of a dense matrix or of a CSR triple ``(indptr, indices, data)``."""


@overload(_n_rows, inline="always")
def _n_rows_impl(X):
    if isinstance(X, types.Array):
        return lambda X: X.shape[0]
    return lambda X: X[0].shape[0] - 1


def _gather_row(X, i, nonzero, values):
    """Copy row i's non-zero inputs (column, value) into ``nonzero`` and
    ``values``; return their count. ``X`` is a dense matrix or a CSR triple
    ``(indptr, indices, data)``: the one place where the two layouts differ."""


@overload(_gather_row, inline="always")
def _gather_row_impl(X, i, nonzero, values):
    if isinstance(X, types.Array):

        def dense(X, i, nonzero, values):
            nnz = 0
            for k in range(X.shape[1]):
                if X[i, k] != 0:
                    nonzero[nnz] = k
                    values[nnz] = X[i, k]
                    nnz += 1
            return nnz

        return dense

    def csr(X, i, nonzero, values):
        indptr, indices, data = X
        start = indptr[i]
        nnz = indptr[i + 1] - start
        for t in range(nnz):
            nonzero[t] = indices[start + t]
            values[t] = data[start + t]
        return nnz

    return csr


@njit(fastmath=_FASTMATH, inline="always")
def _may_leave_domain(values, nnz, w_max, p_max, z):
    """Whether the row's arguments can exceed the reduction's domain:
    |z_j| <= sum_k |x_k| max|omega| + max|phase|, O(nnz) instead of O(m).
    (NaN rows answer False: NaN passes through the polynomial as NaN.)"""
    s = abs(z[0]) * 0
    for k in range(nnz):
        s += abs(values[k])
    return s * w_max + p_max > reduce_limit(z[0])


@njit(fastmath=_FASTMATH, inline="always")
def _reduce_row(z):
    """Bring every argument of the row into the polynomial's domain, in place.

    Almost always a no-op (one vectorised pass counting |z| > limit). An argument
    beyond the Cody-Waite domain is replaced by the angle in [-pi, pi] with the
    same cosine and sine, from the C library's cos and sin (full range
    reduction, exact for every finite input) in float64: about one ulp of pi
    of error, every finite argument correct. inf becomes NaN here, and NaN
    passes through the polynomial as NaN.
    """
    m = z.shape[0]
    limit = reduce_limit(z[0])
    n_big = 0
    for j in range(m):  # a count, not a max: max(.) kept the loop scalar (+30% on float32 features)
        n_big += abs(z[j]) > limit
    if n_big:
        for j in range(m):
            if abs(z[j]) > limit:
                t = np.float64(z[j])
                z[j] = math.atan2(math.sin(t), math.cos(t))


@njit(fastmath=_FASTMATH, inline="always")
def _project_row(X, Wt, phase, i, with_phase, z, nonzero, values):
    """``z[j] = X[i] . omega[j] (+ phase[j])`` with ``Wt = omega.T`` contiguous;
    returns the row's non-zero count (its values stay in ``values``).

    Only the row's non-zero inputs are swept (gathered by `_gather_row` from a
    dense row or a CSR row alike), four per sweep over z: the loop is bound by
    the loads and stores of z, so four dimensions per sweep cost about one, and
    the zeros of sparse-looking data (a9a: 14 of 123) cost nothing.
    """
    m = Wt.shape[1]
    if with_phase:
        for j in range(m):
            z[j] = phase[j]
    else:
        for j in range(m):
            z[j] = 0
    nnz = _gather_row(X, i, nonzero, values)
    n4 = nnz - nnz % 4
    for t in range(0, n4, 4):
        k0 = nonzero[t]
        k1 = nonzero[t + 1]
        k2 = nonzero[t + 2]
        k3 = nonzero[t + 3]
        x0 = values[t]
        x1 = values[t + 1]
        x2 = values[t + 2]
        x3 = values[t + 3]
        w0 = Wt[k0]
        w1 = Wt[k1]
        w2 = Wt[k2]
        w3 = Wt[k3]
        for j in range(m):
            z[j] += x0 * w0[j] + x1 * w1[j] + x2 * w2[j] + x3 * w3[j]
    rest = nnz - n4  # the last 1-3 inputs in one more sweep
    if rest == 1:
        x0 = values[n4]
        w0 = Wt[nonzero[n4]]
        for j in range(m):
            z[j] += x0 * w0[j]
    elif rest == 2:
        x0 = values[n4]
        x1 = values[n4 + 1]
        w0 = Wt[nonzero[n4]]
        w1 = Wt[nonzero[n4 + 1]]
        for j in range(m):
            z[j] += x0 * w0[j] + x1 * w1[j]
    elif rest == 3:
        x0 = values[n4]
        x1 = values[n4 + 1]
        x2 = values[n4 + 2]
        w0 = Wt[nonzero[n4]]
        w1 = Wt[nonzero[n4 + 1]]
        w2 = Wt[nonzero[n4 + 2]]
        for j in range(m):
            z[j] += x0 * w0[j] + x1 * w1[j] + x2 * w2[j]
    return nnz


@njit(parallel=True, fastmath=_FASTMATH, cache=True)
def _features_kernel(X, Wt, phase, cossin, out):
    n = _n_rows(X)
    m = Wt.shape[1]
    w_max = np.max(np.abs(Wt))
    p_max = np.max(np.abs(phase)) if phase.shape[0] else 0.0
    n_tiles = (n + _ROW_TILE - 1) // _ROW_TILE
    for tile in prange(n_tiles):
        z = np.empty(m, dtype=out.dtype)
        nonzero = np.empty(Wt.shape[0], dtype=np.int64)
        values = np.empty(Wt.shape[0], dtype=Wt.dtype)
        for i in range(tile * _ROW_TILE, min(n, (tile + 1) * _ROW_TILE)):
            nnz = _project_row(X, Wt, phase, i, not cossin, z, nonzero, values)
            if _may_leave_domain(values, nnz, w_max, p_max, z):
                _reduce_row(z)
            for j in range(m):
                out[i, j] = fast_cos(z[j])
            if cossin:
                for j in range(m):
                    out[i, m + j] = fast_sin(z[j])


@njit(parallel=True, fastmath=_FASTMATH, cache=True)
def _predict_kernel(X, Wt, phase, coef, cossin, out):
    n = _n_rows(X)
    m = Wt.shape[1]
    n_out = coef.shape[1]
    w_max = np.max(np.abs(Wt))
    p_max = np.max(np.abs(phase)) if phase.shape[0] else 0.0
    n_tiles = (n + _ROW_TILE - 1) // _ROW_TILE
    for tile in prange(n_tiles):
        z = np.empty(m, dtype=out.dtype)
        nonzero = np.empty(Wt.shape[0], dtype=np.int64)
        values = np.empty(Wt.shape[0], dtype=Wt.dtype)
        for i in range(tile * _ROW_TILE, min(n, (tile + 1) * _ROW_TILE)):
            nnz = _project_row(X, Wt, phase, i, not cossin, z, nonzero, values)
            if _may_leave_domain(values, nnz, w_max, p_max, z):
                _reduce_row(z)
            if n_out == 1:
                out[i, 0] = 0
                acc = out[i, 0]
                for j in range(m):
                    acc += fast_cos(z[j]) * coef[j, 0]
                if cossin:
                    for j in range(m):
                        acc += fast_sin(z[j]) * coef[m + j, 0]
                out[i, 0] = acc
            else:
                for c in range(n_out):
                    out[i, c] = 0
                for j in range(m):
                    f = fast_cos(z[j])
                    for c in range(n_out):
                        out[i, c] += f * coef[j, c]
                if cossin:
                    for j in range(m):
                        f = fast_sin(z[j])
                        for c in range(n_out):
                            out[i, c] += f * coef[m + j, c]


@njit(parallel=True, fastmath=_FASTMATH, cache=True)
def _weighted_sum_kernel(X, Wt, phase, G, cossin, partial):
    """``partial[t] = sum over rows i of task t of G[:, i] * features(X[i])`` (float64)."""
    n = _n_rows(X)
    m = Wt.shape[1]
    n_g = G.shape[0]
    n_tasks = partial.shape[0]
    w_max = np.max(np.abs(Wt))
    p_max = np.max(np.abs(phase)) if phase.shape[0] else 0.0
    rows_per_task = (n + n_tasks - 1) // n_tasks
    for t in prange(n_tasks):
        z = np.empty(m, dtype=Wt.dtype)
        nonzero = np.empty(Wt.shape[0], dtype=np.int64)
        values = np.empty(Wt.shape[0], dtype=Wt.dtype)
        acc = partial[t]
        for i in range(t * rows_per_task, min(n, (t + 1) * rows_per_task)):
            nnz = _project_row(X, Wt, phase, i, not cossin, z, nonzero, values)
            if _may_leave_domain(values, nnz, w_max, p_max, z):
                _reduce_row(z)
            for j in range(m):
                f = fast_cos(z[j])
                for c in range(n_g):
                    acc[c, j] += G[c, i] * f
            if cossin:
                for j in range(m):
                    f = fast_sin(z[j])
                    for c in range(n_g):
                        acc[c, m + j] += G[c, i] * f


def _tasks(n):
    from numba import get_num_threads

    # A few tasks per thread balance the load; each holds one (k, m) float64 buffer.
    return max(1, min(4 * get_num_threads(), (n + _ROW_TILE - 1) // _ROW_TILE))


def _feature_tiles(m, n_dims, itemsize):
    """Feature ranges whose slice of omega.T, (n_dims, tile), fits in ~192 KiB of L2:
    the row loop sweeps that slice once per row, so it must stay cached
    (a9a, d = 123 and m = 4096: 3x faster tiled)."""
    tile = (192 * 1024) // max(1, n_dims * itemsize)
    tile = int(min(max(m, 1), max(64, tile - tile % 16)))
    return [(j0, min(m, j0 + tile)) for j0 in range(0, m, tile)]


def _tile(omega, phase, j0, j1):
    return np.ascontiguousarray(omega[j0:j1].T), np.ascontiguousarray(phase[j0:j1])


def _kernel_input(X):
    """The kernels' view of ``X``: a dense matrix as is, a scipy.sparse CSR matrix
    (canonical: sorted, no duplicates, as :mod:`kbackends.ops` hands it over) as
    its ``(indptr, indices, data)`` triple, never densified."""
    if isinstance(X, np.ndarray):
        return X, X.shape[0], X.shape[1], X.dtype
    return (X.indptr, X.indices, X.data), X.shape[0], X.shape[1], X.dtype


def rff_features(X, omega, phase, *, xp, form):
    Xk, n, d, dtype = _kernel_input(X)
    cossin = form == "cossin"
    m = omega.shape[0]
    out = np.empty((n, 2 * m if cossin else m), dtype=dtype)
    if n == 0:
        return out
    for j0, j1 in _feature_tiles(m, d, dtype.itemsize):
        Wt, ph = _tile(omega, phase, j0, j1)
        block = np.empty((n, 2 * (j1 - j0) if cossin else j1 - j0), dtype=dtype)
        _features_kernel(Xk, Wt, ph, cossin, block)
        out[:, j0:j1] = block[:, : j1 - j0]
        if cossin:
            out[:, m + j0 : m + j1] = block[:, j1 - j0 :]
    return out


def rff_predict(X, omega, phase, coef, *, xp, form):
    Xk, n, d, dtype = _kernel_input(X)
    cossin = form == "cossin"
    m = omega.shape[0]
    coef2 = coef.reshape(_as_matrix_shape(coef, rows_last=False))
    out = np.zeros((n, coef2.shape[1]), dtype=dtype)
    if n == 0:
        return out.reshape((n,) + coef.shape[1:])
    part = np.empty_like(out)
    for j0, j1 in _feature_tiles(m, d, dtype.itemsize):
        Wt, ph = _tile(omega, phase, j0, j1)
        c = coef2[j0:j1] if not cossin else np.concatenate((coef2[j0:j1], coef2[m + j0 : m + j1]))
        _predict_kernel(Xk, Wt, ph, np.ascontiguousarray(c), cossin, part)
        out += part
    return out.reshape((n,) + coef.shape[1:])


def rff_predict_add(X, omega, phase, coef, f, *, xp, form, shrink):
    """``f * shrink + rff_predict(X, omega, phase, coef)``: a cached prediction updated."""
    return f * shrink + rff_predict(X, omega, phase, coef, xp=xp, form=form)


def rff_weighted_sum(X, omega, phase, g, *, xp, form):
    Xk, n, d, dtype = _kernel_input(X)
    cossin = form == "cossin"
    m = omega.shape[0]
    G = np.ascontiguousarray(g.reshape(_as_matrix_shape(g, rows_last=True)))
    n_out = 2 * m if cossin else m
    total = np.zeros((G.shape[0], n_out), dtype=np.float64)
    if n:
        for j0, j1 in _feature_tiles(m, d, dtype.itemsize):
            Wt, ph = _tile(omega, phase, j0, j1)
            width = j1 - j0
            partial = np.zeros((_tasks(n), G.shape[0], 2 * width if cossin else width))
            _weighted_sum_kernel(Xk, Wt, ph, G, cossin, partial)
            summed = partial.sum(axis=0)
            total[:, j0:j1] = summed[:, :width]
            if cossin:
                total[:, m + j0 : m + j1] = summed[:, width:]
    return total.astype(dtype, copy=False).reshape(g.shape[:-1] + (n_out,))
