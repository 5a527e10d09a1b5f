"""Water levels warm-started from a previous level, written once for the Numba kernels.

A loop that moves its heights a little an iteration (SBP: one kernel row) moves its
level a little too. Around the old surface ``t`` and a half-width ``delta``, one pass
counts and sums the values below ``t - delta`` and copies the few inside the band
``[t - delta, t + delta]``; sorting the band gives the order statistics near the
level, and the exact rule of the sort-based reference (Cotter et al. 2012,
Appendix B: the first k whose level does not reach the (k + 1)-th value) runs on
them. The pass also proves the answer: the level must lie inside the band (water
below it short of the volume, water at its top at least the volume); when it does
not, the call reports a miss and the caller widens the band or runs the cold
selection.

State, a float64 array of ``WARM_STATE`` entries: the surfaces of the two basins,
their half-widths, a validity flag (0: no previous level; the next call is cold)
and whether the last call's band answered (1) or the cold selection did (0). After a warm call the half-width of a basin
becomes the distance that covers ``_RANKS`` ranks either side of its new surface
plus twice the surface's last move (its error, where the caller follows the
heights); after a cold call, one band pass around the new surfaces refits it the
same way. The band follows the heights' density and the level's speed.

A caller that knows how its heights moved since the last level (SBP: by one kernel
row, which shifts a whole basin coherently, so the level moves by many ranks while
the heights near it move nearly together) sums, per basin, the moves of the heights
inside the band (:func:`warm_bands`) and hands the sums to :func:`warm_follow`: the
band is centred on the surface plus the mean move, where the level nearly always is.

The same machinery for one segment (plain or with widths) is in :mod:`._warm_plain`,
for the two basins with widths in :mod:`._warm_widths`.
"""

import numpy as np
from numba import njit
from numba.extending import register_jitable

from ._core import biased_level

WARM_STATE = 6  # surfaces and half-widths of both basins, valid, answered
_VALID = 4
_ANSWERED = 5  # 1 after a call its band answered, 0 after a cold one
_RANKS = 24
_FAST = {"reassoc", "contract", "nsz", "arcp"}  # the sums below the band in any order: SIMD
_WIDEN = 4.0  # a miss widens the band this much for the retry
_TRIES = 3  # then the cold selection
_MAX_BAND_FRACTION = 8  # a band over 1/8 of the heights (and 8 _RANKS): the cold selection


@register_jitable
def _band_pass(c, y, t_pos, t_neg, d_pos, d_neg, band_p, band_n, sums):
    """Counts and sums below each basin's band (into ``sums``: n_p, s_p, n_n, s_n) and
    the band's values copied in the heights' order; returns the band sizes.

    A band holds a small share of the heights, in no order: a SIMD pass marks them (and
    sums below), then eight marks at a time are read as one word and only a word with a
    mark is looked into, so the copy costs a few instructions per eight heights."""
    n = c.shape[0]
    inside = np.zeros(-(-n // 8) * 8, dtype=np.uint8)
    _below_sums(c, y, t_pos - d_pos, t_pos + d_pos, t_neg - d_neg, t_neg + d_neg, sums, inside)
    marks = inside.view(np.uint64)
    m_p = 0
    m_n = 0
    for k in range(marks.shape[0]):
        if marks[k] != 0:
            for i in range(8 * k, min(8 * k + 8, n)):
                if inside[i]:
                    if y[i] > 0:
                        band_p[m_p] = c[i]
                        m_p += 1
                    else:
                        band_n[m_n] = c[i]
                        m_n += 1
    return m_p, m_n


@njit(fastmath=_FAST)
def _below_sums(c, y, lo_p, hi_p, lo_n, hi_n, sums, inside):
    """The counts and sums of each basin's values below its band ``[lo, hi]``, and
    ``inside[i]`` 1 where value i is in its basin's band (a pass SIMD runs)."""
    n_p = 0.0
    s_p = 0.0
    n_n = 0.0
    s_n = 0.0
    for i in range(c.shape[0]):
        v = np.float64(c[i])
        pos = y[i] > 0
        below_p = 1.0 if pos & (v < lo_p) else 0.0
        below_n = 1.0 if (not pos) & (v < lo_n) else 0.0
        n_p += below_p
        s_p += v * below_p
        n_n += below_n
        s_n += v * below_n
        inside[i] = (pos & (v >= lo_p) & (v <= hi_p)) | ((not pos) & (v >= lo_n) & (v <= hi_n))
    sums[0] = n_p
    sums[1] = s_p
    sums[2] = n_n
    sums[3] = s_n


@register_jitable
def _rank_value(band, below, m, total, j):
    """The j-th smallest (1-based) of a basin whose ``below`` lowest values are under
    the band and whose band (sorted) holds ``m``: (value, known); +inf past the end."""
    if j > total:
        return np.inf, True
    if j <= below or j > below + m:
        return 0.0, False
    return band[j - below - 1], True


@register_jitable
def _biased_from_band(band_p, m_p, band_n, m_n, sums, n_pos, n_neg, volume):
    """The two-basin rule on the bands (sorted): (gamma, b, ok). ok False when the
    level is not proved inside the bands."""
    b_p = int(sums[0])
    b_n = int(sums[2])
    m = min(n_pos, n_neg)
    k = max(b_p, b_n)  # S_k known from here on: k >= each basin's count below its band
    if k > m or k > b_p + m_p or k > b_n + m_n:
        return 0.0, 0.0, False
    s_k = sums[1] + sums[3]
    for j in range(b_p, k):
        s_k += band_p[j - b_p]
    for j in range(b_n, k):
        s_k += band_n[j - b_n]
    if k == 0:  # the first rank needs no proof from below
        p1, ok_p = _rank_value(band_p, b_p, m_p, n_pos, 1)
        n1, ok_n = _rank_value(band_n, b_n, m_n, n_neg, 1)
        if not (ok_p and ok_n):
            return 0.0, 0.0, False
        s_k = p1 + n1
        k = 1
    else:  # the water below the band's first rank must fall short of the volume
        p_next, ok_p = _rank_value(band_p, b_p, m_p, n_pos, k + 1)
        n_next, ok_n = _rank_value(band_n, b_n, m_n, n_neg, k + 1)
        if not (ok_p and ok_n) or k * (p_next + n_next) - s_k >= volume:
            return 0.0, 0.0, False
        s_k += p_next + n_next
        k += 1
    while True:  # the first k whose level does not reach Q_(k+1) (Q past m is +inf)
        p_next, ok_p = _rank_value(band_p, b_p, m_p, n_pos, k + 1)
        n_next, ok_n = _rank_value(band_n, b_n, m_n, n_neg, k + 1)
        if not (ok_p and ok_n):
            return 0.0, 0.0, False
        if k >= m or k * (p_next + n_next) - s_k >= volume:
            break
        s_k += p_next + n_next
        k += 1
    p_k, ok_p = _rank_value(band_p, b_p, m_p, n_pos, k)
    n_k, ok_n = _rank_value(band_n, b_n, m_n, n_neg, k)
    if not (ok_p and ok_n):
        return 0.0, 0.0, False
    level = (volume + s_k) / k
    lower = max(p_k, level - n_next)
    upper = min(p_next, level - n_k)
    gamma = 0.5 * level
    return gamma, gamma - 0.5 * (lower + upper), True


@register_jitable
def biased_level_warm(c, y, n_pos, volume, state, band_p, band_n):
    """Level gamma and bias b of the two-basin problem (``biased_level``'s answer, to
    rounding), warm-started from ``state`` (updated in place for the next call).

    ``band_p``, ``band_n``: float64 scratch of c's length; ``n_pos``: the positives'
    count. The cold selection (:func:`biased_level_cold`) runs when there is no
    previous level, the volume is 0 or the band misses ``_TRIES`` times (or grows past ``1 / _MAX_BAND_FRACTION`` of
    the heights and ``8 _RANKS`` values).
    """
    n_neg = c.shape[0] - n_pos
    sums = np.empty(4)
    d_pos, d_neg = state[2], state[3]
    state[_ANSWERED] = 0.0
    if state[_VALID] != 0.0 and volume > 0.0:
        for _ in range(_TRIES):
            m_p, m_n = _band_pass(c, y, state[0], state[1], d_pos, d_neg, band_p, band_n, sums)
            if m_p + m_n > _band_limit(c.shape[0]):  # sorting it would cost more than the cold selection
                d_pos /= _WIDEN
                d_neg /= _WIDEN
                break
            band_p[:m_p].sort()
            band_n[:m_n].sort()
            gamma, b, ok = _biased_from_band(band_p, m_p, band_n, m_n, sums, n_pos, n_neg, volume)
            if ok:
                answered(state, gamma, b, band_p, m_p, sums[0], band_n, m_n, sums[2])
                return gamma, b
            d_pos *= _WIDEN
            d_neg *= _WIDEN
    gamma, b = biased_level_cold(c, y, volume)
    if state[_VALID] == 0.0:  # a first band: a small fraction of the heights' spread
        spread = 0.0
        for i in range(c.shape[0]):
            spread = max(spread, abs(np.float64(c[i]) - (gamma - b * y[i])))
        d_pos = d_neg = max(spread, 1e-300) * 1e-3
    _remember(state, gamma, b)
    m_p, m_n = _band_pass(c, y, state[0], state[1], d_pos, d_neg, band_p, band_n, sums)  # the bands around it
    state[2] = _refit(band_p, m_p, sums[0], n_pos, state[0], d_pos, c.shape[0])
    state[3] = _refit(band_n, m_n, sums[2], n_neg, state[1], d_neg, c.shape[0])
    return gamma, b


@register_jitable
def answered(state, gamma, b, band_p, m_p, below_p, band_n, m_n, below_n):
    """A level the bands proved: each basin's next half-width from its (sorted) band
    (``below_*`` values under it, ``m_*`` in it) around the new surfaces, which are
    remembered, and the call marked answered."""
    k = _under_count(band_p, m_p, below_p, gamma - b)
    state[2] = _next_width(band_p, m_p, k - int(below_p), gamma - b, abs(gamma - b - state[0]))
    k = _under_count(band_n, m_n, below_n, gamma + b)
    state[3] = _next_width(band_n, m_n, k - int(below_n), gamma + b, abs(gamma + b - state[1]))
    _remember(state, gamma, b)
    state[_ANSWERED] = 1.0


@register_jitable
def _band_limit(n):
    """The most values a band may hold (both basins) before the cold selection is cheaper."""
    return max(n // _MAX_BAND_FRACTION, 8 * _RANKS)


@register_jitable
def _refit(band, m, below, total, surface, width, n):
    """After a cold level: the half-width covering ``_RANKS`` ranks either side of the
    basin's surface, from its band of half-width ``width`` (``below`` values under it,
    ``m`` in it, ``total`` in the basin); a band too wide to sort shrinks, one that
    holds too few ranks grows."""
    if m > _band_limit(n):
        return width / _WIDEN
    band[:m].sort()
    return refit_sorted(band, m, below, total, surface, width)


@register_jitable
def refit_sorted(band, m, below, total, surface, width):
    """:func:`_refit` on a band already sorted (and no wider than :func:`_band_limit`)."""
    j = _under_count(band, m, below, surface) - int(below)
    low_covered = j >= _RANKS or below == 0
    high_covered = m - j > _RANKS or below + m == total
    if not (low_covered and high_covered):
        return width * _WIDEN
    return _next_width(band, m, j, surface, 0.0)


@register_jitable
def warm_bands(state):
    """The bands the next call starts from, ``(t_pos, d_pos, t_neg, d_neg)``: each
    basin's surface and half-width (meaningless before a first level)."""
    return state[0], state[2], state[1], state[3]


@register_jitable
def warm_follow(state, n_pos, sum_pos, n_neg, sum_neg):
    """Moves the bands with the heights: per basin, the count of heights that were
    inside its band (:func:`warm_bands`) and the sum of their moves. Each surface moves
    by the mean move (a basin with no height in its band keeps its band); the
    half-widths stay, as they hold twice the last prediction's error."""
    state[0], state[1] = followed_surfaces(state, n_pos, sum_pos, n_neg, sum_neg)


@register_jitable
def followed_surfaces(state, n_pos, sum_pos, n_neg, sum_neg):
    """The surfaces :func:`warm_follow` moves the bands to, ``(t_pos, t_neg)``, without
    storing them (a grid's blocks read them while one block will store them)."""
    t_pos = state[0] + sum_pos / n_pos if n_pos > 0 else state[0]
    t_neg = state[1] + sum_neg / n_neg if n_neg > 0 else state[1]
    return t_pos, t_neg


@register_jitable
def _under_count(band, m, below, surface):
    """Values of a basin under ``surface``: ``below`` under its band plus the band's (sorted;
    a bisection as ``searchsorted(side="left")``, written out so CUDA compiles it too)."""
    lo = 0
    hi = m
    while lo < hi:
        mid = (lo + hi) // 2
        if band[mid] < surface:
            lo = mid + 1
        else:
            hi = mid
    return int(below) + lo


@register_jitable
def _next_width(band, m, j, surface, move):
    """The half-width covering ``_RANKS`` ranks either side of the band's position j
    around ``surface`` (the band's ends where it holds fewer), plus twice ``move``."""
    if m == 0:
        return 2.0 * move + 1e-300
    lo = band[max(0, min(m - 1, j - _RANKS))]
    hi = band[max(0, min(m - 1, j + _RANKS))]
    width = max(surface - lo, hi - surface, 0.0)
    return max(width + 2.0 * move, 1e-12 * (1.0 + abs(surface)))


@register_jitable
def biased_level_cold(c, y, volume):
    """:func:`biased_level` on scratch copies of the two classes' heights (float64)."""
    n_pos = 0
    for i in range(c.shape[0]):
        if y[i] > 0:
            n_pos += 1
    P = np.empty(n_pos, dtype=np.float64)
    N = np.empty(c.shape[0] - n_pos, dtype=np.float64)
    i_p = 0
    i_n = 0
    for i in range(c.shape[0]):  # the two classes' scratch copies in one pass
        if y[i] > 0:
            P[i_p] = c[i]
            i_p += 1
        else:
            N[i_n] = c[i]
            i_n += 1
    return biased_level(P, N, volume, 1)


@register_jitable
def _remember(state, gamma, b):
    """The surfaces of both basins (positives under water below gamma - b, negatives
    below gamma + b) for the next call."""
    state[0] = gamma - b
    state[1] = gamma + b
    state[_VALID] = 1.0
