"""The fused random-feature products for dense rows of few dimensions: the product
``x . omega_j``, its cos / sin and the sum over features (``rff_predict``) or over
rows (``rff_weighted_sum``) in one Numba-CUDA kernel, with no (rows, m) product in
device memory; ``rff_features`` writes each feature once, where it is computed.

Why: with the product from cuBLAS (:mod:`._cuda`), each (row, feature) pair costs 8
bytes of HBM traffic (the product written, then read by the epilogue) besides its
``2 d`` flops and its cos; for ``d`` of a few dozen the traffic, not the arithmetic,
sets the time (docs/benchmarks.md, "GPU: what each kernel must cost"). Here each
thread holds ``R`` rows (``rff_predict``) or ``R`` frequencies (``rff_weighted_sum``)
of ``D = d`` values in registers: the kernels are compiled once per ``(D, R)``, the
number ``G`` of targets a pass and the form (cos or cossin), so that the loops run to
constants, unroll and keep those values in registers; the other operand is read one row at a time, the same address across a
warp (a broadcast from L1). Per (row, feature) pair: ``D`` multiply-adds, ``D / R``
loads and one cos.

Sums: ``x . omega_j`` over the dimensions in order; ``rff_predict`` sums segments of
:data:`SEGMENT` features per thread and adds the segments in order
(``_cuda._sum_segments``), ``rff_weighted_sum`` blocks of :data:`ROW_BLOCK` rows per
thread and adds the blocks in order. No atomics: a result repeats bit for bit on
one device. Used for dense ``X`` with ``d <= MAX_DIMS`` unless
``kbackends.launch_settings(fused=False)``.
"""

from functools import lru_cache

from numba import cuda

from .. import _cuda_launch as launch
from .._cuda_math import ZERO, cos, sincos

# Features one thread sums in rff_predict, rows in rff_weighted_sum and rff_features:
# an H100 sweep of the launch shape (docs/benchmarks.md, "GPU") found 256 a few percent
# faster than 128 / 64 for both, and 4 rows a thread, 128 threads a block the fastest.
SEGMENT = 256
ROW_BLOCK = 256
GROUP = 4  # targets (classes) accumulated at once at most, in registers
THREADS = 128  # threads a block, all on x
# SEGMENT, ROW_BLOCK and THREADS are read at call time (tests shrink them).
# The widest rows the fused kernels take. On an H100 (float32, n = 10^6, m = 4,096) the
# fused rff_predict took 0.58x cuBLAS's path at d = 28 and 1.40x at d = 64
# (docs/benchmarks.md, "GPU"): past a few dozen dimensions the product's 2 d flops a
# pair outweigh the 8 bytes a pair the fused kernel saves.
MAX_DIMS = 32


def rows_per_thread(d, itemsize=4):
    """``R``: the rows (or frequencies) one thread holds: ``R * d`` values in registers,
    at most 112 float32 or 56 float64 (the registers of a thread stop at 255)."""
    return max(1, min(4, (112 if itemsize == 4 else 56) // max(d, 1)))


def targets_per_pass(k):
    """``G``: the targets (classes) one pass sums at once, ``min(k, GROUP)``."""
    return max(1, min(k, GROUP))


@cuda.jit(device=True, inline="always")
def _load_rows(src, base, step, out):
    """``out[r, :] = src[base + r * step, :]`` for every ``r`` (zeros past ``src``'s rows):
    a thread's ``R`` rows (or frequencies) into its registers (``out`` is a local array
    of constant shape: inlined, the loops unroll)."""
    for r in range(out.shape[0]):
        i = base + r * step
        for q in range(out.shape[1]):
            out[r, q] = src[i, q] if i < src.shape[0] else ZERO


@cuda.jit(device=True, inline="always")
def _load_values(src, base, step, out):
    """``out[r] = src[base + r * step]`` for every ``r`` (zero past ``src``'s end)."""
    for r in range(out.shape[0]):
        i = base + r * step
        out[r] = src[i] if i < src.shape[0] else ZERO


@cuda.jit(device=True, inline="always")
def _row_dot(a, r, v):
    """``sum_q a[r, q] v[q]``, the dimensions in order (``v`` a local array of constant length)."""
    z = ZERO
    for q in range(v.shape[0]):
        z += a[r, q] * v[q]
    return z


@cuda.jit(device=True, inline="always")
def _zero(acc):
    """Every entry of the 2-D local array ``acc`` to zero."""
    for r in range(acc.shape[0]):
        for c in range(acc.shape[1]):
            acc[r, c] = ZERO


@lru_cache(maxsize=None)
def predict_kernel(D, R, G, cossin, SEG):
    """The fused ``rff_predict`` partial-sum kernel for rows of ``D`` values, ``R`` rows a
    thread, ``G`` targets a pass, the cos or the cossin form, segments of ``SEG`` features.

    ``partial[s, i, c] = sum_{j in segment s} cos_j(x_i) coef_c[j, c] + sin_j(x_i) coef_s[j, c]``;
    launched by :func:`predict_partial`: block x covers ``THREADS * R`` rows, the
    segments on y.
    """

    @cuda.jit
    def fused_predict_partial(X, omega, phase, coef_c, coef_s, partial):
        n = X.shape[0]
        m = omega.shape[0]
        k = coef_c.shape[1]
        base = cuda.blockIdx.x * cuda.blockDim.x * R + cuda.threadIdx.x
        if base >= n:
            return  # no row in the chunk's tail block
        x = cuda.local.array((R, D), dtype=X.dtype)
        _load_rows(X, base, cuda.blockDim.x, x)
        w = cuda.local.array(D, dtype=X.dtype)
        cc = cuda.local.array(G, dtype=X.dtype)
        cs = cuda.local.array(G, dtype=X.dtype)
        acc = cuda.local.array((R, G), dtype=X.dtype)
        for seg in range(cuda.blockIdx.y, partial.shape[0], cuda.gridDim.y):
            j0 = seg * SEG
            j1 = min(m, j0 + SEG)
            for c0 in range(0, k, G):
                _zero(acc)
                for j in range(j0, j1):
                    for q in range(D):
                        w[q] = omega[j, q]
                    for c in range(G):
                        cc[c] = coef_c[j, c0 + c] if c0 + c < k else ZERO
                        if cossin:
                            cs[c] = coef_s[j, c0 + c] if c0 + c < k else ZERO
                    p = phase[j]
                    for r in range(R):
                        z = _row_dot(x, r, w)
                        if cossin:
                            fs, fc = sincos(z)
                            for c in range(G):
                                acc[r, c] += fc * cc[c] + fs * cs[c]
                        else:
                            fc = cos(z + p)
                            for c in range(G):
                                acc[r, c] += fc * cc[c]
                for r in range(R):
                    i = base + r * cuda.blockDim.x
                    if i < n:
                        for c in range(G):
                            if c0 + c < k:
                                partial[seg, i, c0 + c] = acc[r, c]

    return fused_predict_partial


@lru_cache(maxsize=None)
def weighted_kernel(D, R, G, cossin, RB):
    """The fused ``rff_weighted_sum`` partial-sum kernel, ``R`` frequencies of ``D`` values a
    thread, ``G`` targets a pass, the cos or the cossin form, blocks of ``RB`` rows.

    ``partial[b, c, j] = sum_{i in block b} G[c, i] cos_j(x_i)`` (and ``partial[b, c, m + j]``
    with ``sin_j`` in the cossin form); launched by :func:`weighted_partial`: block x
    covers ``THREADS * R`` frequencies, the row blocks on y.
    """

    @cuda.jit
    def fused_weighted_partial(X, omega, phase, weights, partial):
        n = X.shape[0]
        m = omega.shape[0]
        k = weights.shape[0]
        base = cuda.blockIdx.x * cuda.blockDim.x * R + cuda.threadIdx.x
        if base >= m:
            return  # no frequency in the tail block
        om = cuda.local.array((R, D), dtype=X.dtype)
        _load_rows(omega, base, cuda.blockDim.x, om)
        ph = cuda.local.array(R, dtype=X.dtype)
        _load_values(phase, base, cuda.blockDim.x, ph)
        x = cuda.local.array(D, dtype=X.dtype)
        g = cuda.local.array(G, dtype=X.dtype)
        acc_c = cuda.local.array((R, G), dtype=X.dtype)
        acc_s = cuda.local.array((R, G), dtype=X.dtype)
        for blk in range(cuda.blockIdx.y, partial.shape[0], cuda.gridDim.y):
            i0 = blk * RB
            i1 = min(n, i0 + RB)
            for c0 in range(0, k, G):
                _zero(acc_c)
                _zero(acc_s)
                for i in range(i0, i1):
                    for q in range(D):
                        x[q] = X[i, q]
                    for c in range(G):
                        g[c] = weights[c0 + c, i] if c0 + c < k else ZERO
                    for r in range(R):
                        z = _row_dot(om, r, x)
                        if cossin:
                            fs, fc = sincos(z)
                            for c in range(G):
                                acc_c[r, c] += g[c] * fc
                                acc_s[r, c] += g[c] * fs
                        else:
                            fc = cos(z + ph[r])
                            for c in range(G):
                                acc_c[r, c] += g[c] * fc
                for r in range(R):
                    j = base + r * cuda.blockDim.x
                    if j < m:
                        for c in range(G):
                            if c0 + c < k:
                                partial[blk, c0 + c, j] = acc_c[r, c]
                                if cossin:
                                    partial[blk, c0 + c, m + j] = acc_s[r, c]

    return fused_weighted_partial


@lru_cache(maxsize=None)
def features_kernel(D, R, cossin, RB):
    """The fused ``rff_features`` kernel, ``R`` frequencies of ``D`` values a thread.

    ``out[i, j] = cos(x_i . omega_j + phase_j)`` (cos form), or ``cos(x_i . omega_j)``
    and ``sin(x_i . omega_j)`` into ``out[i, j]`` and ``out[i, m + j]`` (cossin);
    launched by :func:`features`, ``RB`` rows a block on y: a warp writes consecutive
    features of one row (coalesced), each feature written once.
    """

    @cuda.jit
    def fused_features(X, omega, phase, out):
        n = X.shape[0]
        m = omega.shape[0]
        base = cuda.blockIdx.x * cuda.blockDim.x * R + cuda.threadIdx.x
        if base >= m:
            return
        om = cuda.local.array((R, D), dtype=X.dtype)
        _load_rows(omega, base, cuda.blockDim.x, om)
        ph = cuda.local.array(R, dtype=X.dtype)
        _load_values(phase, base, cuda.blockDim.x, ph)
        x = cuda.local.array(D, dtype=X.dtype)
        for blk in range(cuda.blockIdx.y, -(-n // RB), cuda.gridDim.y):
            for i in range(blk * RB, min(n, blk * RB + RB)):
                for q in range(D):
                    x[q] = X[i, q]
                for r in range(R):
                    j = base + r * cuda.blockDim.x
                    z = _row_dot(om, r, x)
                    if j < m:
                        if cossin:
                            fs, fc = sincos(z)
                            out[i, j] = fc
                            out[i, m + j] = fs
                        else:
                            out[i, j] = cos(z + ph[r])

    return fused_features


def _geometry(n_x, n_y, R):
    """``((grid_x, grid_y), (THREADS, 1))``: ``n_x`` rows (or frequencies) on x, ``R`` a
    thread; ``n_y`` segments (or row blocks) on y, at most 65,535 blocks (the kernels stride)."""
    return (max(1, -(-n_x // (THREADS * R))), max(1, min(65535, n_y))), (THREADS, 1)


def predict_partial(X, omega, phase, coef_c, coef_s, cossin, partial, stream):
    """Launch the ``rff_predict`` partial sums into ``partial`` (segments of
    :data:`SEGMENT`, ``blocks_for(m, SEGMENT)`` of them, as the caller made it)."""
    d, k = X.shape[1], coef_c.shape[1]
    R = rows_per_thread(d, X.dtype.itemsize)
    kernel = predict_kernel(d, R, targets_per_pass(k), cossin, SEGMENT)
    grid, block = _geometry(X.shape[0], partial.shape[0], R)
    launch.run_kernel(kernel, grid, block, stream, X, omega, phase, coef_c, coef_s, partial)


def weighted_partial(X, omega, phase, weights, cossin, partial, stream):
    """Launch the ``rff_weighted_sum`` partial sums into ``partial`` (row blocks of
    :data:`ROW_BLOCK`, ``blocks_for(n, ROW_BLOCK)`` of them, as the caller made it)."""
    d = X.shape[1]
    R = rows_per_thread(d, X.dtype.itemsize)
    kernel = weighted_kernel(d, R, targets_per_pass(weights.shape[0]), cossin, ROW_BLOCK)
    grid, block = _geometry(omega.shape[0], partial.shape[0], R)
    launch.run_kernel(kernel, grid, block, stream, X, omega, phase, weights, partial)


def features(X, omega, phase, cossin, out, stream):
    """Launch ``rff_features`` into ``out``, every row at once (no scratch)."""
    d = X.shape[1]
    R = rows_per_thread(d, X.dtype.itemsize)
    grid, block = _geometry(omega.shape[0], launch.blocks_for(X.shape[0], ROW_BLOCK), R)
    launch.run_kernel(features_kernel(d, R, cossin, ROW_BLOCK), grid, block, stream, X, omega, phase, out)


# The PTX pass and the GPU check's probe compile one specialisation a kernel (d = 28, the
# scale problem's rows; one target, the cos form): the factory's arguments and the
# kernel's signature ({t}: the dtype).
SPECIALISATIONS = {
    "predict_kernel": ((28, rows_per_thread(28), 1, False, SEGMENT),
                       "void({t}[:, ::1], {t}[:, ::1], {t}[::1], {t}[:, ::1], {t}[:, ::1], {t}[:, :, ::1])"),
    "weighted_kernel": ((28, rows_per_thread(28), 1, False, ROW_BLOCK),
                        "void({t}[:, ::1], {t}[:, ::1], {t}[::1], {t}[:, ::1], {t}[:, :, ::1])"),
    "features_kernel": ((28, rows_per_thread(28), False, ROW_BLOCK),
                        "void({t}[:, ::1], {t}[:, ::1], {t}[::1], {t}[:, ::1])"),
}
