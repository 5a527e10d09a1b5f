"""The warm-started two-basin level on one block of CUDA threads: :mod:`._warm`'s
``biased_level_warm`` for a kernel that runs many iterations in one launch.

The pass over the heights (the counts and sums below each basin's band, the band's
values copied) runs on every thread of the block; each band is then sorted by the
block in shared memory (a bitonic sort) and thread 0 applies the same functions as
the Numba kernels to the sorted bands (:func:`._warm._biased_from_band`,
:func:`._warm.answered`, :func:`._warm.refit_sorted`). a9a's bands hold a few hundred
values (398 both together at the median of a 4,000-iteration fit, up to 3,636): one
thread sorting them in device memory waits on a load at each step. A band longer than
the shared arrays (:data:`SHARED_BAND` values) is sorted that way all the same. The
sums below the bands are added in the block's tree order: the level equals the Numba
kernels' to rounding (the sorted bands are the same).

The cold selection is not here: :func:`biased_level_warm_block` reports a miss (no
valid state, or ``_TRIES`` bands without the level) and the caller finds the level
by the cold kernel, then hands it to :func:`refit_warm_block`, which fits the bands
around it as the Numba kernels do after a cold level.

Every thread of the block calls these functions (they hold barriers). Scratch:
``band_p``, ``band_n`` float64 arrays of the heights' length; ``sort_p``, ``sort_n``
shared float64 arrays of :data:`SHARED_BAND` values; ``red`` a shared float64 array
of ``4 * width`` values, ``cnt`` a shared int64 array of 2, ``share`` a shared
float64 array of 4 (the answers broadcast to the block).
"""

import math

from numba import cuda, float64

from .._cuda_block import tree_sum
from ._warm import (
    _ANSWERED,
    _TRIES,
    _VALID,
    _WIDEN,
    _band_limit,
    _biased_from_band,
    _remember,
    answered,
    refit_sorted,
)

# Each band is sorted in shared memory up to this many values: two float64 arrays, 32 KB of
# a block's 48 KB of static shared memory.
SHARED_BAND = 2048


@cuda.jit(device=True)
def _band_pass_block(c, y, t_pos, t_neg, d_pos, d_neg, band_p, band_n, red, cnt, tid, width):
    """Every thread's share of ``_warm._band_pass``: ``(m_p, m_n, n_p, s_p, n_n, s_n)``
    to all threads, the bands' values (unsorted) in ``band_p[:m_p]``, ``band_n[:m_n]``."""
    lo_p, hi_p, lo_n, hi_n = t_pos - d_pos, t_pos + d_pos, t_neg - d_neg, t_neg + d_neg
    if tid == 0:
        cnt[0] = 0
        cnt[1] = 0
    cuda.syncthreads()
    n_p, s_p, n_n, s_n = _sort_into_bands(c, y, lo_p, hi_p, lo_n, hi_n, band_p, band_n, cnt, tid, width)
    red[tid] = n_p
    red[width + tid] = s_p
    red[2 * width + tid] = n_n
    red[3 * width + tid] = s_n
    tree_sum(red, tid, width, 4)
    result = (cnt[0], cnt[1], red[0], red[width], red[2 * width], red[3 * width])
    cuda.syncthreads()  # everyone has read before the next pass resets them
    return result


@cuda.jit(device=True)
def _sort_into_bands(c, y, lo_p, hi_p, lo_n, hi_n, band_p, band_n, cnt, start, stride):
    """Values ``start, start + stride, ...``: counted and summed below their basin's band,
    or appended to its band through ``cnt`` (atomics); returns ``(n_p, s_p, n_n, s_n)``."""
    n_p = 0.0
    s_p = 0.0
    n_n = 0.0
    s_n = 0.0
    for i in range(start, c.shape[0], stride):
        v = float64(c[i])
        if y[i] > 0:
            if v < lo_p:
                n_p += 1.0
                s_p += v
            elif v <= hi_p:
                band_p[cuda.atomic.add(cnt, 0, 1)] = v
        elif v < lo_n:
            n_n += 1.0
            s_n += v
        elif v <= hi_n:
            band_n[cuda.atomic.add(cnt, 1, 1)] = v
    return n_p, s_p, n_n, s_n


@cuda.jit(device=True)
def block_sums(part, red, tid, width, a, b, c, d):
    """Four values of every thread summed over the block (in :func:`tree_sum`'s order)
    into ``part[4 * block:4 * block + 4]``; ``red`` a shared float64 array of ``4 * width``."""
    red[tid] = a
    red[width + tid] = b
    red[2 * width + tid] = c
    red[3 * width + tid] = d
    tree_sum(red, tid, width, 4)
    if tid == 0:
        for q in range(4):
            part[4 * cuda.blockIdx.x + q] = red[q * width]


@cuda.jit(device=True)
def parts_sum(part, n_parts):
    """The four sums of :func:`block_sums` over ``n_parts`` blocks, added in block order
    (the same value every run, whichever block finished first)."""
    a = 0.0
    b = 0.0
    c = 0.0
    d = 0.0
    for k in range(n_parts):
        a += part[4 * k]
        b += part[4 * k + 1]
        c += part[4 * k + 2]
        d += part[4 * k + 3]
    return a, b, c, d


@cuda.jit(device=True)
def _start_call(state, share, tid):
    """A level's call begins unanswered (thread 0 clears the flags; every thread past the barrier)."""
    if tid == 0:
        state[_ANSWERED] = 0.0
        share[2] = 0.0
    cuda.syncthreads()


@cuda.jit(device=True)
def _shell_sort(a, m):
    """``a[:m]`` sorted in place by one thread (Ciura's gaps; the bands hold few values)."""
    for gap in (57, 23, 10, 4, 1):
        for i in range(gap, m):
            v = a[i]
            j = i
            while j >= gap and a[j - gap] > v:
                a[j] = a[j - gap]
                j -= gap
            a[j] = v


@cuda.jit(device=True)
def _block_sort(a, m, tid, width):
    """``a[:m]`` sorted in place by the block's ``width`` threads (a bitonic sort over the
    next power of two, padded with +inf; ``a`` holds at least that many values)."""
    if m < 2:  # every thread returns: m is the block's
        return
    size = 2
    while size < m:
        size *= 2
    for i in range(m + tid, size, width):
        a[i] = math.inf
    cuda.syncthreads()
    k = 2
    while k <= size:
        j = k // 2
        while j > 0:
            for i in range(tid, size, width):
                other = i ^ j
                if other > i:
                    lo = a[i]
                    hi = a[other]
                    if (lo > hi) if (i & k) == 0 else (lo < hi):
                        a[i] = hi
                        a[other] = lo
            cuda.syncthreads()
            j //= 2
        k *= 2


@cuda.jit(device=True)
def _to_shared(band, m, shared, tid, width):
    """``band[:m]`` copied to ``shared`` and sorted there by the block."""
    for i in range(tid, m, width):
        shared[i] = band[i]
    cuda.syncthreads()
    _block_sort(shared, m, tid, width)


@cuda.jit(device=True)
def biased_level_warm_block(c, y, n_pos, volume, state, band_p, band_n, sort_p, sort_n, red, cnt, share, tid,
                            width):
    """``(gamma, b, ok)`` to every thread: the level and bias of the two-basin problem
    from the warm ``state`` (updated in place as ``_warm.biased_level_warm`` does), or
    ``ok`` False where it would run the cold selection (the caller's: then
    :func:`refit_warm_block` with the cold level). ``state[2:4]`` then hold the
    half-widths the cold refit starts from."""
    n = c.shape[0]
    n_neg = n - n_pos
    d_pos = state[2]
    d_neg = state[3]
    _start_call(state, share, tid)
    if state[_VALID] != 0.0 and volume > 0.0:
        for _ in range(_TRIES):
            m_p, m_n, n_p, s_p, n_n, s_n = _band_pass_block(c, y, state[0], state[1], d_pos, d_neg, band_p, band_n,
                                                             red, cnt, tid, width)
            if m_p + m_n > _band_limit(n):  # as the Numba kernel: narrower, then the cold selection
                d_pos /= _WIDEN
                d_neg /= _WIDEN
                break
            shared = m_p <= sort_p.shape[0] and m_n <= sort_n.shape[0]
            if shared:
                _to_shared(band_p, m_p, sort_p, tid, width)
                _to_shared(band_n, m_n, sort_n, tid, width)
            if tid == 0:
                red[0], red[1], red[2], red[3] = n_p, s_p, n_n, s_n  # the sums as _biased_from_band reads them
                if shared:
                    _band_rule(state, sort_p, m_p, n_p, sort_n, m_n, n_n, red, n_pos, n_neg, volume, share)
                else:
                    _shell_sort(band_p, m_p)
                    _shell_sort(band_n, m_n)
                    _band_rule(state, band_p, m_p, n_p, band_n, m_n, n_n, red, n_pos, n_neg, volume, share)
            cuda.syncthreads()
            if share[2] != 0.0:
                result = (share[0], share[1], True)
                cuda.syncthreads()
                return result
            d_pos *= _WIDEN
            d_neg *= _WIDEN
    if tid == 0:
        state[2] = d_pos
        state[3] = d_neg
    cuda.syncthreads()
    return 0.0, 0.0, False


@cuda.jit(device=True)
def _band_rule(state, band_p, m_p, below_p, band_n, m_n, below_n, sums, n_pos, n_neg, volume, share):
    """Thread 0: the two-basin rule on the sorted bands; a level found goes to the warm
    state and to ``share`` (``share[2]`` 1)."""
    gamma, b, ok = _biased_from_band(band_p, m_p, band_n, m_n, sums, n_pos, n_neg, volume)
    if ok:
        answered(state, gamma, b, band_p, m_p, below_p, band_n, m_n, below_n)
        share[0] = gamma
        share[1] = b
        share[2] = 1.0


@cuda.jit(device=True)
def refit_warm_block(c, y, n_pos, state, gamma, b, band_p, band_n, sort_p, sort_n, red, cnt, share, tid, width):
    """After a cold level ``(gamma, b)``: the surfaces remembered and each basin's band
    refitted around them (``_warm.biased_level_warm``'s lines after the cold
    selection), from the half-widths in ``state[2:4]`` (those a miss left), or, with no
    valid state, from a small fraction of the heights' spread."""
    n = c.shape[0]
    d_pos = state[2]
    d_neg = state[3]
    if state[_VALID] == 0.0:  # a first band: a small fraction of the heights' spread
        spread = 0.0
        for i in range(tid, n, width):
            spread = max(spread, abs(float64(c[i]) - (gamma - b * y[i])))
        red[tid] = spread
        cuda.syncthreads()
        if tid == 0:
            for k in range(1, width):
                spread = max(spread, red[k])
            share[3] = max(spread, 1e-300) * 1e-3
        cuda.syncthreads()
        d_pos = d_neg = share[3]
    cuda.syncthreads()
    if tid == 0:
        _remember(state, gamma, b)
    cuda.syncthreads()
    m_p, m_n, n_p, _, n_n, _ = _band_pass_block(c, y, state[0], state[1], d_pos, d_neg, band_p, band_n, red, cnt,
                                                tid, width)
    sortable = m_p <= _band_limit(n) and m_n <= _band_limit(n)  # else _refit only narrows the band
    shared = sortable and m_p <= sort_p.shape[0] and m_n <= sort_n.shape[0]
    if shared:
        _to_shared(band_p, m_p, sort_p, tid, width)
        _to_shared(band_n, m_n, sort_n, tid, width)
    if tid == 0:
        if shared:
            state[2] = _refit_block(sort_p, m_p, n_p, n_pos, state[0], d_pos, n, False)
            state[3] = _refit_block(sort_n, m_n, n_n, n - n_pos, state[1], d_neg, n, False)
        else:
            state[2] = _refit_block(band_p, m_p, n_p, n_pos, state[0], d_pos, n, True)
            state[3] = _refit_block(band_n, m_n, n_n, n - n_pos, state[1], d_neg, n, True)
    cuda.syncthreads()


@cuda.jit(device=True)
def _refit_block(band, m, below, total, surface, width, n, unsorted):
    """``_warm._refit`` by one thread: the band sorted here where ``unsorted``."""
    if m > _band_limit(n):
        return width / _WIDEN
    if unsorted:
        _shell_sort(band, m)
    return refit_sorted(band, m, below, total, surface, width)


@cuda.jit(device=True)
def band_pass_grid(c, y, t_pos, t_neg, d_pos, d_neg, band_p, band_n, cnt, part, red, tid, width):
    """A block's share of the band pass spread over a grid (a pass on one block waits on its
    loads: ~0.13 ms over a9a's 32,561 heights on an H100): the values inside each basin's band
    appended to ``band_p`` / ``band_n`` (``cnt``, int64 in device memory, zeroed before the
    launch), the block's counts and sums below the bands into ``part[4 * block:4 * block + 4]``
    (``n_p, s_p, n_n, s_n``); ``red`` a shared float64 array of ``4 * width``."""
    n_p, s_p, n_n, s_n = _sort_into_bands(c, y, t_pos - d_pos, t_pos + d_pos, t_neg - d_neg, t_neg + d_neg, band_p,
                                          band_n, cnt, cuda.blockIdx.x * width + tid, cuda.gridDim.x * width)
    block_sums(part, red, tid, width, n_p, s_p, n_n, s_n)


@cuda.jit(device=True)
def biased_level_after_pass(c, y, n_pos, volume, state, band_p, band_n, cnt, part, n_parts, sort_p, sort_n, red,
                            cnt_block, share, tid, width):
    """:func:`biased_level_warm_block` whose first band pass was made over a grid by
    :func:`band_pass_grid` (at the state's surfaces and half-widths; ``n_parts`` blocks'
    sums in ``part``, the bands' sizes in ``cnt``): the bands sorted and the rule applied
    by this block; where they miss, the block's own passes from the next width
    (``cnt_block`` a shared int64 array of 2)."""
    n = c.shape[0]
    d_pos = state[2]
    d_neg = state[3]
    m_p = cnt[0]
    m_n = cnt[1]
    _start_call(state, share, tid)
    if state[_VALID] == 0.0 or not volume > 0.0:
        return 0.0, 0.0, False
    if m_p + m_n > _band_limit(n):  # as the Numba kernel: narrower, then the cold selection
        if tid == 0:  # every thread read the widths before _start_call's barrier
            state[2] = d_pos / _WIDEN
            state[3] = d_neg / _WIDEN
        cuda.syncthreads()
        return 0.0, 0.0, False
    shared = m_p <= sort_p.shape[0] and m_n <= sort_n.shape[0]
    if shared:
        _to_shared(band_p, m_p, sort_p, tid, width)
        _to_shared(band_n, m_n, sort_n, tid, width)
    if tid == 0:
        n_p, s_p, n_n, s_n = parts_sum(part, n_parts)
        red[0], red[1], red[2], red[3] = n_p, s_p, n_n, s_n
        if shared:
            _band_rule(state, sort_p, m_p, n_p, sort_n, m_n, n_n, red, n_pos, n - n_pos, volume, share)
        else:
            _shell_sort(band_p, m_p)
            _shell_sort(band_n, m_n)
            _band_rule(state, band_p, m_p, n_p, band_n, m_n, n_n, red, n_pos, n - n_pos, volume, share)
    cuda.syncthreads()
    if share[2] != 0.0:
        result = (share[0], share[1], True)
        cuda.syncthreads()
        return result
    if tid == 0:
        state[2] = d_pos * _WIDEN
        state[3] = d_neg * _WIDEN
    cuda.syncthreads()
    return biased_level_warm_block(c, y, n_pos, volume, state, band_p, band_n, sort_p, sort_n, red, cnt_block, share,
                                   tid, width)
