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

``water_level_biased``, the two basins of the SBP's bias, is in ``_cuda_biased``.
"""

import math

import numpy as np
from numba import config, cuda, int32, int64, uint64
from numba.extending import register_jitable

from .._cuda_launch import contiguous, launch_context, run_kernel

# Threads of a block. The simulator runs the same kernels with 32: it pays
# per simulated thread and block, and the code does not depend on the width.
_THREADS = 32 if config.ENABLE_CUDASIM else 256
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
