"""Numba-CUDA level and bias of the two-basin water-fill, no host round trip.

``water_level_biased`` (the two basins of the SBP's bias, Section 3.6 of Cotter
et al.) uses device sorts and one scan: :func:`_basins` writes the positives and
the negatives apart (the other class as +inf so shapes do not depend on the labels:
no boolean mask, no host round trip), CuPy sorts each (CUB radix sorts), and ONE
block, :func:`_two_basin_level`, forms the pairwise sums Q_j = P_(j) + N_(j), their
prefix sums (a run of Q a thread, a scan of the runs' sums), the first k whose level
fits below Q_(k+1), and the level and the bias, as the xp reference does. Four
launches where the array form was about 25 (SBP calls it every iteration). The
volume (a float64 device scalar in SBP) is never read on the host; the results are
0-d device arrays in the input's dtype (float32 in, float32 scan). One block reads
2n values once: a9a's n = 32,561 is ~0.3 MB, a few microseconds; the sorts are
O(n log n) work in ~10 reads of the data, under the response update they precede.
"""

import math

import numpy as np
from numba import config, cuda, int64

from .._cuda_launch import contiguous, grid_1d, launch_context, run_kernel
from .._cuda_math import INF

_LEVEL_THREADS = 32 if config.ENABLE_CUDASIM else 1024  # the level's one block (the simulator's: 32)

# the two basins: labels as SBP holds them (the responses' dtype) or as integers
PTX_SIGNATURES = {
    "_basins": [f"void({f}[::1], {y}[::1], {f}[::1], {f}[::1])" for f in ("float32", "float64") for y in (f, "int64")],
    "_two_basin_level": [f"void({f}[::1], {f}[::1], float64[::1], {f}[::1])" for f in ("float32", "float64")],
}
PTX_FLOAT64_BY_DESIGN = {
    "_two_basin_level": "reads the volume in float64 (SBP's V / s) and converts it once; the scan is in the "
    "input's dtype",
}


@cuda.jit
def _basins(c, y, P, N):
    """``P[i] = c[i]`` for a positive label else +inf, ``N[i]`` the same for a negative
    one (the two basins, unsorted, each of length n); one thread an entry."""
    i = cuda.grid(1)
    if i < c.shape[0]:
        P[i] = c[i] if y[i] > 0 else INF
        N[i] = c[i] if y[i] < 0 else INF


@cuda.jit
def _two_basin_level(P, N, volume, out):
    """ONE block: ``out = (gamma, b)`` from the sorted basins ``P``, ``N`` (see the module
    docstring). Thread t owns the run ``[t r, (t + 1) r)`` of ``Q = P + N``; a
    sequential scan of the runs' sums (thread 0, ``_LEVEL_THREADS`` values) gives each run's
    prefix; each thread then walks its run for the first k that fits, and thread 0
    takes the first run that has one and finishes."""
    run_sum = cuda.shared.array(_LEVEL_THREADS, P.dtype)
    first_at = cuda.shared.array(_LEVEL_THREADS, int64)
    first_level = cuda.shared.array(_LEVEL_THREADS, P.dtype)
    typed = cuda.local.array(1, P.dtype)  # conversions to P's dtype (no float64 in a float32 kernel)
    typed[0] = 0
    zero = typed[0]
    typed[0] = 2
    two = typed[0]
    typed[0] = volume[0]
    v = typed[0]
    tid = cuda.threadIdx.x
    n = P.shape[0]
    run = (n + _LEVEL_THREADS - 1) // _LEVEL_THREADS
    lo = min(tid * run, n)
    hi = min(lo + run, n)
    acc = zero
    for j in range(lo, hi):
        acc += P[j] + N[j]
    run_sum[tid] = acc
    cuda.syncthreads()
    if tid == 0:  # exclusive prefix of the runs, in run order
        total = zero
        for t in range(_LEVEL_THREADS):
            here = run_sum[t]
            run_sum[t] = total
            total += here
    cuda.syncthreads()
    running = run_sum[tid]
    first_at[tid] = n
    first_level[tid] = zero
    for j in range(lo, hi):
        running += P[j] + N[j]
        typed[0] = j + 1
        level = (v + running) / typed[0]
        upper = P[j + 1] + N[j + 1] if j + 1 < n else INF
        if level <= upper:
            first_at[tid] = j
            first_level[tid] = level
            break
    cuda.syncthreads()
    if tid == 0:
        k = 0
        level = v + (P[0] + N[0]) if n else INF  # no fit anywhere (an empty basin): the first candidate
        for t in range(_LEVEL_THREADS):  # runs in order: the first that has a fit
            if first_at[t] < n:
                k = first_at[t]
                level = first_level[t]
                break
        p_k = P[k] if k < n else INF
        p_next = P[k + 1] if k + 1 < n else INF
        n_k = N[k] if k < n else INF
        n_next = N[k + 1] if k + 1 < n else INF
        lower = max(p_k, level - n_next)  # u = gamma - b keeps exactly k + 1 of each under water
        upper = min(p_next, level - n_k)
        gamma = level / two
        out[0] = gamma
        out[1] = gamma - (lower + upper) / two


# Up to this many values the two-basin level is four launches with one block's scan
# (SBP's sizes: a9a's 32,561 values, 32 a thread, ~0.3 MB for the block: a few
# microseconds); past it the array form's ~25 launches cost less than one SM reading
# the basins.
ONE_BLOCK_MAX = 1 << 16


def water_level_biased(c, y, volume, *, xp):
    """Level gamma and bias b of the two-basin problem as 0-d device arrays of ``c``'s
    dtype (see the module docstring): two sorts and one block's scan and search (up to
    :data:`ONE_BLOCK_MAX` values; array code past it), with no device -> host transfer.

    ``volume`` is a number or a 0-d array of any float dtype (SBP passes ``V / s``, a
    float64 device scalar): it is never read on the host.
    """
    dt = c.dtype
    n = c.shape[0]
    if n > ONE_BLOCK_MAX:
        return _biased_level_arrays(c, y, volume, xp)
    if isinstance(volume, (int, float, np.generic)):
        v = xp.asarray([float(volume)], dtype=xp.float64)  # host -> device: no wait
    else:
        v = xp.reshape(xp.astype(volume, xp.float64, copy=False), (1,))
    c, y = contiguous(xp, c, y)
    P, N = xp.empty((n,), dtype=dt), xp.empty((n,), dtype=dt)
    out = xp.empty((2,), dtype=dt)
    with launch_context(xp) as stream:
        if n:
            blocks, threads = grid_1d(n)
            run_kernel(_basins, blocks, threads, stream, c, y, P, N)
        P, N = xp.sort(P), xp.sort(N)
        run_kernel(_two_basin_level, 1, _LEVEL_THREADS, stream, P, N, v, out)
    return out[0], out[1]


def _biased_level_arrays(c, y, volume, xp):
    """The two-basin level as array code on the device (two sorts, CuPy's scan, an
    argmax, one gather: ~25 calls): for large n, where one block's pass over the
    basins would take longer than the calls' host time."""
    dt = c.dtype
    n = c.shape[0]
    if isinstance(volume, (int, float, np.generic)):
        v = xp.asarray(float(volume), dtype=dt)  # host -> device: no wait
    else:
        v = xp.astype(volume, dt)
    inf = xp.full((1,), math.inf, dtype=dt)
    # each class sorted with the other's values as +inf (static shapes, no mask): the
    # first n_P (n_N) entries are the class's, and one +inf more closes each
    P = xp.concat((xp.sort(xp.where(y > 0, c, inf)), inf))
    N = xp.concat((xp.sort(xp.where(y < 0, c, inf)), inf))
    Q = P[:n] + N[:n]  # rises; +inf past min(n_P, n_N)
    k = xp.arange(1, n + 1, dtype=dt)
    candidate = (v + xp.cumulative_sum(Q)) / k  # V = 0: (0 + Q_1) / 1 = Q_1 exactly
    # the first k whose level stays at or below Q_(k+1); k = min(n_P, n_N) always fits
    fits = candidate <= xp.concat((Q[1:], inf))
    first = xp.reshape(xp.argmax(xp.astype(fits, xp.int8)), (1,))  # k - 1
    level = xp.take(candidate, first)[0]
    pick = xp.concat((first, first + 1))
    p_at, n_at = xp.take(P, pick), xp.take(N, pick)  # the k-th and (k+1)-th of each class
    lower = xp.maximum(p_at[0], level - n_at[1])  # u = gamma - b keeps exactly k of each under water
    upper = xp.minimum(p_at[1], level - n_at[0])
    gamma = level / 2
    return gamma, gamma - (lower + upper) / 2
