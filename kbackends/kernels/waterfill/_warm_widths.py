"""The two-basin water level with widths (sample weights), warm-started from a previous level.

The band machinery of :mod:`._warm` with widths: around each basin's old surface,
one pass sums, per basin, the widths and the width-weighted values below the band,
the basin's total width, and copies the band's values and widths; the bands, sorted
with their widths turned into cumulative widths (from the width below), give the
quantile functions ``q_P``, ``q_N`` over the band's range of widths. The rule of the
sort-based reference (``water_level_biased_weighted``: 2 gamma is the weighted level
of the columns ``Q(m) = q_P(m) + q_N(m)``, the first column whose level does not
reach the next) runs on them from ``m0``, the larger of the two widths below the
bands, where the water under the columns so far is the two sums below plus the
bands' share up to ``m0``. Proved as the unweighted level is: the columns up to
``m0`` must fall short of the volume at the next column's value (the water function
is monotone, so no earlier column fits) and every quantile the rule and the bias
read must lie inside the bands; otherwise the bands widen, then the cold kernel
answers. The state is :mod:`._warm`'s (``warm_bands`` / ``warm_follow`` apply).
"""

import numpy as np
from numba import njit
from numba.extending import register_jitable

from ._core import biased_level_weighted
from ._warm import _ANSWERED, _FAST, _TRIES, _VALID, _WIDEN, _band_limit, _refit, _remember, answered


@register_jitable
def biased_level_weighted_cold(c, y, w, volume):
    """The cold kernel: both basins sorted (stable), their cumulative widths, the merge
    of :func:`._core.biased_level_weighted`."""
    pos = np.flatnonzero(y > 0)
    neg = np.flatnonzero(y <= 0)
    op = pos[np.argsort(c[pos], kind="mergesort")]
    on = neg[np.argsort(c[neg], kind="mergesort")]
    P = c[op].astype(np.float64)
    N = c[on].astype(np.float64)
    WP = np.cumsum(w[op].astype(np.float64))
    WN = np.cumsum(w[on].astype(np.float64))
    return biased_level_weighted(P, WP, N, WN, volume)


@register_jitable
def _bands_pass(c, y, w, state, d_pos, d_neg, band_p, cum_p, band_n, cum_n, sp, sn):
    """Both basins' sums below their bands (:func:`_below_sums`) and their bands
    ``[t - d, t + d]`` copied (widths into ``cum_*``), with no branch on the values;
    returns the bands' sizes."""
    lo_p, hi_p, lo_n, hi_n = state[0] - d_pos, state[0] + d_pos, state[1] - d_neg, state[1] + d_neg
    _below_sums(c, y, w, lo_p, lo_n, sp, sn)
    m_p = 0
    m_n = 0
    for i in range(c.shape[0]):  # every value stored, the band's count advanced where it belongs
        v = np.float64(c[i])
        u = np.float64(w[i])
        pos = y[i] > 0
        band_p[m_p] = v
        cum_p[m_p] = u
        m_p += pos & (v >= lo_p) & (v <= hi_p)
        band_n[m_n] = v
        cum_n[m_n] = u
        m_n += (not pos) & (v >= lo_n) & (v <= hi_n)
    return m_p, m_n


@njit(fastmath=_FAST)
def _below_sums(c, y, w, lo_p, lo_n, sp, sn):
    """Per basin (``sp``, ``sn``): the count, width and width-weighted sum of the values
    below the band, the total width and count (a pass SIMD runs, in any order)."""
    n_p = w_p = s_p = t_p = c_p = 0.0
    n_n = w_n = s_n = t_n = c_n = 0.0
    for i in range(c.shape[0]):
        v = np.float64(c[i])
        u = np.float64(w[i])
        pos = 1.0 if y[i] > 0 else 0.0
        below_p = pos if v < lo_p else 0.0
        below_n = (1.0 - pos) if v < lo_n else 0.0
        n_p += below_p
        w_p += u * below_p
        s_p += u * v * below_p
        t_p += u * pos
        c_p += pos
        n_n += below_n
        w_n += u * below_n
        s_n += u * v * below_n
        t_n += u - u * pos
        c_n += 1.0 - pos
    sp[0], sp[1], sp[2], sp[3], sp[4] = n_p, w_p, s_p, t_p, c_p
    sn[0], sn[1], sn[2], sn[3], sn[4] = n_n, w_n, s_n, t_n, c_n


@register_jitable
def _cumulate(band, cum, m, below):
    """The band sorted (stable) and its widths made cumulative from ``below``."""
    order = np.argsort(band[:m], kind="mergesort")
    values = band[:m][order]
    widths = cum[:m][order]
    acc = below
    for j in range(m):
        band[j] = values[j]
        acc += widths[j]
        cum[j] = acc


@register_jitable
def _quantile(band, cum, m, sums, mark, right):
    """``q(mark)``: the first value whose cumulative width reaches ``mark`` (exceeds it
    when ``right``), +inf past the basin; (value, known)."""
    below, count, ended = sums[1], sums[0], sums[0] + m == sums[4]
    if (mark < below if right else (mark <= below and count > 0)):
        return 0.0, False
    j = np.searchsorted(cum[:m], mark, side="right") if right else np.searchsorted(cum[:m], mark, side="left")
    if j < m:
        return band[j], True
    return np.inf, ended


@register_jitable
def _total(cum, m, sums):
    """The basin's total width: its last cumulative width where the band reaches its top
    (the same sums as the marks, so the last column is not lost to rounding)."""
    if sums[0] + m < sums[4]:
        return sums[3]
    return cum[m - 1] if m > 0 else sums[1]


@register_jitable
def _share(band, cum, m, below, upto):
    """The integral of the band's quantile function from ``below`` to ``upto``: (sum, known)."""
    s = 0.0
    prev = below
    for j in range(m):
        if prev >= upto:
            return s, True
        s += (min(cum[j], upto) - prev) * band[j]
        prev = cum[j]
    return s, prev >= upto


@register_jitable
def _from_bands(band_p, cum_p, m_p, sp, band_n, cum_n, m_n, sn, volume):
    """The merge of the reference on the bands: (gamma, b, ok)."""
    cap = min(_total(cum_p, m_p, sp), _total(cum_n, m_n, sn))
    prev = max(sp[1], sn[1])
    if prev > cap:
        return 0.0, 0.0, False
    share_p, ok_p = _share(band_p, cum_p, m_p, sp[1], prev)
    share_n, ok_n = _share(band_n, cum_n, m_n, sn[1], prev)
    if not (ok_p and ok_n):
        return 0.0, 0.0, False
    w_acc = prev
    s_acc = sp[2] + sn[2] + share_p + share_n
    m_star = prev
    first = w_acc > 0.0  # the columns up to m0 must not fit: only then no earlier one does
    while True:
        p, ok_p = _quantile(band_p, cum_p, m_p, sp, prev, True)
        q_n, ok_n = _quantile(band_n, cum_n, m_n, sn, prev, True)
        mark_p, _ = _quantile(cum_p, cum_p, m_p, sp, prev, True)  # the next cumulative widths
        mark_n, _ = _quantile(cum_n, cum_n, m_n, sn, prev, True)
        if not (ok_p and ok_n):
            return 0.0, 0.0, False
        mark = min(mark_p, mark_n)
        q = p + q_n
        if mark > cap or mark == np.inf:
            break
        if w_acc > 0.0 and (volume + s_acc) / w_acc <= q:
            if first:
                return 0.0, 0.0, False
            break
        first = False
        width = mark - prev
        w_acc += width
        s_acc += width * q
        m_star = mark
        prev = mark
    if first:
        return 0.0, 0.0, False
    level = (volume + s_acc) / w_acc
    p_l, ok_1 = _quantile(band_p, cum_p, m_p, sp, m_star, False)
    p_r, ok_2 = _quantile(band_p, cum_p, m_p, sp, m_star, True)
    n_l, ok_3 = _quantile(band_n, cum_n, m_n, sn, m_star, False)
    n_r, ok_4 = _quantile(band_n, cum_n, m_n, sn, m_star, True)
    if not (ok_1 and ok_2 and ok_3 and ok_4):
        return 0.0, 0.0, False
    lower = max(p_l, level - n_r)
    upper = min(p_r, level - n_l)
    gamma = 0.5 * level
    return gamma, gamma - 0.5 * (lower + upper), True


@register_jitable
def biased_level_weighted_warm(c, y, w, volume, state, band_p, band_n, cum_p, cum_n):
    """Level gamma and bias b of the two-basin problem with widths ``w``
    (``water_level_biased_weighted``'s answer, to rounding), warm-started from
    ``state`` (:mod:`._warm`'s layout, updated in place).

    ``band_p``, ``band_n``, ``cum_p``, ``cum_n``: float64 scratch of c's length. The
    cold kernel (:func:`biased_level_weighted_cold`) answers when there is no previous
    level, the volume is 0 or the bands miss ``_TRIES`` times.
    """
    n = c.shape[0]
    sp = np.empty(5)
    sn = np.empty(5)
    d_pos, d_neg = state[2], state[3]
    state[_ANSWERED] = 0.0
    if state[_VALID] != 0.0 and volume > 0.0:
        for _ in range(_TRIES):
            m_p, m_n = _bands_pass(c, y, w, state, d_pos, d_neg, band_p, cum_p, band_n, cum_n, sp, sn)
            if m_p + m_n > _band_limit(n):  # sorting them would cost more than the cold kernel
                d_pos /= _WIDEN
                d_neg /= _WIDEN
                break
            _cumulate(band_p, cum_p, m_p, sp[1])
            _cumulate(band_n, cum_n, m_n, sn[1])
            gamma, b, ok = _from_bands(band_p, cum_p, m_p, sp, band_n, cum_n, m_n, sn, volume)
            if ok:
                answered(state, gamma, b, band_p, m_p, sp[0], band_n, m_n, sn[0])
                return gamma, b
            d_pos *= _WIDEN
            d_neg *= _WIDEN
    gamma, b = biased_level_weighted_cold(c, y, w, volume)
    if state[_VALID] == 0.0:  # a first band: a small fraction of the heights' spread
        spread = 0.0
        for i in range(n):
            spread = max(spread, abs(np.float64(c[i]) - (gamma - b * y[i])))
        d_pos = d_neg = max(spread, 1e-300) * 1e-3
    _remember(state, gamma, b)
    m_p, m_n = _bands_pass(c, y, w, state, d_pos, d_neg, band_p, cum_p, band_n, cum_n, sp, sn)
    state[2] = _refit(band_p, m_p, sp[0], sp[4], state[0], d_pos, n)
    state[3] = _refit(band_n, m_n, sn[0], sn[4], state[1], d_neg, n)
    return gamma, b
