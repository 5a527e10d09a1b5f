"""Numba-CUDA water levels: every segment spread over many threads, no host round trip.

``water_level`` is a radix bracketing (a radix select whose rule is the water
equation instead of a rank). Heights map to unsigned keys that sort like the
floats (flip the sign bit of positives, every bit of negatives). With P the
chosen high digits so far, each pass (``_BITS`` bits a digit, high to low)

1. histograms, per tile of ``_TILE`` values of one segment, the values whose
   key starts with P by their next digit (count, sum and minimum per bin, in
   shared memory; a thread adds a run of one digit at once) and adds the tile's
   bins into the segment's (global atomics: counts and minima exact, the sums
   only decide bins);
2. keeps, per segment (a block: a fixed-order scan over the bins), the last
   non-empty bin j whose minimum m_j is still under water,
   ``f(m_j) = m_j N_<j - S_<j <= V`` (N, S: count and sum of the values below
   m_j, those under earlier digits included; f rises with its argument, so the
   bins after it are above the level, those before it under water), appends j
   to P and empties the bins.

After 32 (float32) or 64 (float64) bits P is the key of the highest value under
water, t: everything with key <= P is under water. A last pass counts and sums
those in a fixed order (block trees, then a tree over the segment's tiles), so
the level ``(V + S) / N`` repeats bit for bit whatever order the atomics of the
histograms took; those only decide bins, where a rounding flip can only swap a
value lying at the level itself (the level moves by rounding). Volume 0 gives
t, the minimum, exactly; an empty segment gives NaN.

Subnormal float32 heights (below 1.2e-38 in magnitude) may count as zero on a
GPU: float32 atomic adds to global memory flush them (a hardware rule, whatever
the compiler's flags), so the level can be off by that much absolutely. The
simulator computes them exactly; the test says so.

Cost: 4 (float32) or 8 (float64) histogram passes plus one counting pass, each
one read of the heights; two launches a pass, 10 (float32) in all plus a few
CuPy ones. float32 kernels compute in float32 (tile sums are trees over at
most ``_TILE`` values, so rounding grows with log2 of the segment length, not
with it). The simulator runs the same kernels with 32-thread blocks.

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
from numba import config, cuda, int32, int64, uint64
from numba.extending import register_jitable

from .._cuda_launch import contiguous, grid_1d, launch_context, run_kernel
from .._cuda_math import INF

# Threads of a block. The simulator runs the same kernels with 32: it pays
# per simulated thread and block, and the code does not depend on the width.
_THREADS = 32 if config.ENABLE_CUDASIM else 256
_LEVEL_THREADS = 32 if config.ENABLE_CUDASIM else 1024  # the two-basin level's one block
_TILE = _THREADS * 32  # values of one segment per block
_BITS = 8
_BINS = 1 << _BITS
_DIGIT = np.uint64(_BINS - 1)

# float32 kernels take (uint32 keys, float32 values), float64 ones (uint64, float64).
_SIGS = {
    "_histogram": "void({u}[::1], {f}[::1], int64[::1], int64[::1], uint64[::1], uint64, uint64, uint64, uint64,"
    " int64[:, ::1], {f}[:, ::1], {f}[:, ::1])",
    "_choose": "void(int64[:, ::1], {f}[:, ::1], {f}[:, ::1], {f}[::1], uint64, uint64[::1], int64[::1], {f}[::1],"
    " {f}[::1])",
    "_below": "void({u}[::1], {f}[::1], int64[::1], int64[::1], uint64[::1], uint64, uint64, int32[::1], {f}[::1])",
    "_finish": "void(int32[::1], {f}[::1], int64[::1], {f}[::1], {f}[::1], {f}[::1])",
}
PTX_SIGNATURES = {
    name: [sig.format(u="uint32", f="float32"), sig.format(u="uint64", f="float64")] for name, sig in _SIGS.items()
}
# the two basins: labels as SBP holds them (the responses' dtype) or as integers
PTX_SIGNATURES["_basins"] = [f"void({f}[::1], {y}[::1], {f}[::1], {f}[::1])"
                             for f in ("float32", "float64") for y in (f, "int64")]
PTX_SIGNATURES["_two_basin_level"] = [f"void({f}[::1], {f}[::1], float64[::1], {f}[::1])" for f in ("float32", "float64")]
PTX_FLOAT64_BY_DESIGN = {
    "_two_basin_level": "reads the volume in float64 (SBP's V / s) and converts it once; the scan is in the "
    "input's dtype",
}


@register_jitable
def _key(u, top, every):
    """Order-preserving unsigned key of a float's bits ``u`` (``top``: the sign bit)."""
    u = uint64(u)
    if u & top:
        return u ^ every
    return u | top


@register_jitable
def _tile(offsets, tile_cum, b):
    """Segment and value range of tile ``b`` (tiles of a segment are consecutive;
    ``tile_cum[s]`` is the first tile of segment s). Empty range past the last tile."""
    k = tile_cum.shape[0] - 1
    if b >= tile_cum[k]:
        return 0, 0, 0
    lo = 0
    hi = k
    while hi - lo > 1:  # the last s with tile_cum[s] <= b (a segment with tiles)
        mid = (lo + hi) // 2
        if tile_cum[mid] <= b:
            lo = mid
        else:
            hi = mid
    start = offsets[lo] + (b - tile_cum[lo]) * _TILE
    return lo, start, min(start + _TILE, offsets[lo + 1])


@cuda.jit
def _histogram(bits, values, offsets, tile_cum, prefix, high, shift, top, every, s_cnt, s_tot, s_low):
    """Per tile: count, sum and minimum of the values whose key's ``high`` bits
    equal their segment's prefix, by the digit at ``shift``, added into the
    segment's bins (count and minimum exactly; the sum only decides bins)."""
    c_s = cuda.shared.array(_BINS, int32)
    t_s = cuda.shared.array(_BINS, values.dtype)
    l_s = cuda.shared.array(_BINS, values.dtype)
    tid = cuda.threadIdx.x
    for j in range(tid, _BINS, _THREADS):
        c_s[j] = 0
        t_s[j] = 0
        l_s[j] = math.inf
    cuda.syncthreads()
    seg, start, end = _tile(offsets, tile_cum, cuda.blockIdx.x)
    pfx = prefix[seg]
    # a thread's values often share a digit (the high digits of similar heights):
    # it aggregates runs and flushes them, one shared atomic per run, not per value
    acc = cuda.local.array(2, values.dtype)
    run = -1
    run_n = 0
    for i in range(start + tid, end, _THREADS):
        key = _key(bits[i], top, every)
        if (key & high) == pfx:
            d = int32((key >> shift) & _DIGIT)
            v = values[i]
            if d == run:
                run_n += 1
                acc[0] += v
                acc[1] = min(acc[1], v)
            else:
                if run_n:
                    cuda.atomic.add(c_s, run, run_n)
                    cuda.atomic.add(t_s, run, acc[0])
                    cuda.atomic.min(l_s, run, acc[1])
                run = d
                run_n = 1
                acc[0] = v
                acc[1] = v
    if run_n:
        cuda.atomic.add(c_s, run, run_n)
        cuda.atomic.add(t_s, run, acc[0])
        cuda.atomic.min(l_s, run, acc[1])
    cuda.syncthreads()
    for j in range(tid, _BINS, _THREADS):
        if c_s[j]:
            cuda.atomic.add(s_cnt, (seg, j), c_s[j])
            cuda.atomic.add(s_tot, (seg, j), t_s[j])
            cuda.atomic.min(s_low, (seg, j), l_s[j])


@cuda.jit
def _choose(s_cnt, s_tot, s_low, volume, shift, prefix, n_below, s_below, tie):
    """One block per segment: append to its prefix the last non-empty bin whose
    minimum m is under water, ``m N - S <= V`` with N, S the count and sum of
    the values below m (those under earlier digits included); empty the bins
    for the next pass.

    Each thread owns ``_BINS / _THREADS`` consecutive bins; a fixed-order scan
    gives it the count and sum below its first bin. The water rises with the
    level, so the answer is the last non-empty bin before the first one not
    under water (taken over the block, so a rounding flip past it is ignored)."""
    c_s = cuda.shared.array(_THREADS, int64)
    t_s = cuda.shared.array(_THREADS, s_tot.dtype)
    best = cuda.shared.array(_THREADS, int32)
    s = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    lo = tid * (_BINS // _THREADS)
    hi = lo + _BINS // _THREADS
    acc = cuda.local.array(4, s_tot.dtype)  # running S; S below my first bin; S below the chosen bin; N as float
    n = int64(0)
    acc[0] = 0
    for j in range(lo, hi):
        n += s_cnt[s, j]
        acc[0] += s_tot[s, j]
    c_s[tid] = n
    t_s[tid] = acc[0]
    cuda.syncthreads()
    step = 1
    while step < _THREADS:  # inclusive scan (Hillis-Steele), the same order every run
        c = c_s[tid - step] if tid >= step else 0
        acc[3] = t_s[tid - step] if tid >= step else t_s[tid] - t_s[tid]
        cuda.syncthreads()
        c_s[tid] += c
        t_s[tid] += acc[3]
        cuda.syncthreads()
        step *= 2
    base = n_below[s]
    acc[1] = s_below[s]
    if tid:
        base += c_s[tid - 1]
        acc[1] += t_s[tid - 1]
    v = volume[s]
    first_out = _BINS  # my first non-empty bin not under water
    n = base
    acc[0] = acc[1]
    for j in range(lo, hi):
        c = s_cnt[s, j]
        if c:
            acc[3] = n
            if n and s_low[s, j] * acc[3] - acc[0] > v:
                first_out = j
                break
            n += c
            acc[0] += s_tot[s, j]
    best[tid] = first_out
    _reduce(best, tid, False)
    limit = best[0]
    cuda.syncthreads()  # everyone has read best[0]
    chosen = -1  # my last non-empty bin before the block's first one not under water
    n = base
    n_chosen = base
    acc[0] = acc[1]
    for j in range(lo, min(hi, limit)):
        c = s_cnt[s, j]
        if c:
            chosen = j
            n_chosen = n
            acc[2] = acc[0]
            n += c
            acc[0] += s_tot[s, j]
    best[tid] = chosen
    _reduce(best, tid, True)
    if chosen >= 0 and chosen == best[0]:  # the one thread owning the chosen bin
        prefix[s] |= uint64(chosen) << shift
        n_below[s] = n_chosen
        s_below[s] = acc[2]
        tie[s] = s_low[s, chosen]
    for j in range(lo, hi):  # my bins only: no other thread reads them
        s_cnt[s, j] = 0
        s_tot[s, j] = 0
        s_low[s, j] = math.inf


@register_jitable
def _reduce(best, tid, largest):
    """The largest (or smallest) of the block's ``best`` entries into entry 0."""
    cuda.syncthreads()
    step = _THREADS // 2
    while step:
        if tid < step:
            other = best[tid + step]
            if (other > best[tid]) if largest else (other < best[tid]):
                best[tid] = other
        cuda.syncthreads()
        step //= 2


@cuda.jit
def _below(bits, values, offsets, tile_cum, prefix, top, every, cnt, tot):
    """Per tile: count and sum of the values with key <= their segment's final
    prefix, each thread in order, then a fixed tree over the block."""
    c_s = cuda.shared.array(_THREADS, int32)
    t_s = cuda.shared.array(_THREADS, values.dtype)
    tid = cuda.threadIdx.x
    b = cuda.blockIdx.x
    seg, start, end = _tile(offsets, tile_cum, b)
    last = prefix[seg]
    n = 0
    acc = cuda.local.array(1, values.dtype)
    acc[0] = 0
    for i in range(start + tid, end, _THREADS):
        if _key(bits[i], top, every) <= last:
            n += 1
            acc[0] += values[i]
    c_s[tid] = n
    t_s[tid] = acc[0]
    _tree(c_s, t_s, tid)
    if tid == 0:
        cnt[b] = c_s[0]
        tot[b] = t_s[0]


@register_jitable
def _tree(c_s, t_s, tid):
    """Sum the block's ``_THREADS`` entries of ``c_s`` and ``t_s`` into entry 0, in a fixed order."""
    cuda.syncthreads()
    step = _THREADS // 2
    while step:
        if tid < step:
            c_s[tid] += c_s[tid + step]
            t_s[tid] += t_s[tid + step]
        cuda.syncthreads()
        step //= 2


@cuda.jit
def _finish(cnt, tot, tile_cum, volume, tie, out):
    """One block per segment: its tiles' counts and sums (strided, then a fixed
    tree), then (V + S) / N; volume 0 gives the minimum, an empty segment NaN."""
    c_s = cuda.shared.array(_THREADS, int32)
    t_s = cuda.shared.array(_THREADS, tot.dtype)
    s = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    n = 0
    acc = cuda.local.array(3, tot.dtype)  # running sum; n as a float; a typed zero (a literal compares in float64)
    acc[0] = 0
    for t in range(tile_cum[s] + tid, tile_cum[s + 1], _THREADS):
        n += cnt[t]
        acc[0] += tot[t]
    c_s[tid] = n
    t_s[tid] = acc[0]
    _tree(c_s, t_s, tid)
    if tid == 0:
        acc[1] = c_s[0]
        acc[2] = 0
        if c_s[0] == 0:
            out[s] = math.nan
        elif volume[s] <= acc[2]:
            out[s] = tie[s]
        else:
            out[s] = (volume[s] + t_s[0]) / acc[1]


def water_level(c, volume, offsets, *, xp):
    """Water level of every segment (see the module docstring); NaN for an empty one."""
    k = offsets.shape[0] - 1
    n = c.shape[0]
    dtype = c.dtype
    if k == 0:
        return xp.zeros((0,), dtype=dtype)
    width = 32 if dtype == xp.float32 else 64
    values, offsets, volume = contiguous(xp, c, xp.astype(offsets, xp.int64), xp.astype(volume, dtype))
    bits = values.view(np.uint32 if width == 32 else np.uint64)
    top, every = np.uint64(1 << (width - 1)), np.uint64((1 << width) - 1)
    tiles = (offsets[1:] - offsets[:-1] + (_TILE - 1)) // _TILE
    tile_cum = xp.concat((xp.zeros((1,), dtype=xp.int64), xp.cumulative_sum(tiles)))
    n_tiles = n // _TILE + k  # >= the tiles used, known without reading the offsets
    prefix = xp.zeros((k,), dtype=xp.uint64)
    n_below, s_below, tie = xp.zeros((k,), dtype=xp.int64), xp.zeros((k,), dtype=dtype), xp.zeros((k,), dtype=dtype)
    s_cnt, s_tot = xp.zeros((k, _BINS), dtype=xp.int64), xp.zeros((k, _BINS), dtype=dtype)
    s_low = xp.full((k, _BINS), math.inf, dtype=dtype)
    cnt, tot = xp.empty((n_tiles,), dtype=xp.int32), xp.empty((n_tiles,), dtype=dtype)
    out = xp.empty((k,), dtype=dtype)
    with launch_context(xp) as stream:
        for shift in range(width - _BITS, -1, -_BITS):
            high = np.uint64(~((1 << (shift + _BITS)) - 1) & ((1 << 64) - 1))
            run_kernel(_histogram, n_tiles, _THREADS, stream, bits, values, offsets, tile_cum, prefix, high,
                       np.uint64(shift), top, every, s_cnt, s_tot, s_low)
            run_kernel(_choose, k, _THREADS, stream, s_cnt, s_tot, s_low, volume, np.uint64(shift), prefix, n_below,
                       s_below, tie)
        run_kernel(_below, n_tiles, _THREADS, stream, bits, values, offsets, tile_cum, prefix, top, every, cnt, tot)
        run_kernel(_finish, k, _THREADS, stream, cnt, tot, tile_cum, volume, tie, out)
    return out


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
