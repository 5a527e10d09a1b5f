"""One-segment water levels warm-started from a previous level: plain and with widths.

The band machinery of :mod:`._warm` on one segment (no bias): around the old level
``t`` and a half-width ``delta``, one pass sums the widths and the width-weighted
values below ``t - delta`` and copies the band ``[t - delta, t + delta]``; the band,
sorted, gives the order statistics near the level and the exact rule of the
sort-based reference (the first k whose level ``(V + S_k) / W_k`` does not reach the
(k + 1)-th value; ``W_k = k`` without widths) runs on them. The answer is proved:
the water at the band's low end must fall short of the volume (no earlier k fits:
the water function is monotone) and the rule must stop inside the band (or at the
segment's last value); otherwise the half-width widens (``_TRIES`` times) and then
the cold selection answers.

State: the layout of :mod:`._warm` (``WARM_STATE`` float64 entries) with one basin:
entry 0 the surface, entry 2 its half-width, then the validity and answered flags.
The half-width is refit after each call as there. A caller that knows how its
heights moved hands them to :func:`segment_follow`, which moves the surface by the
mean move of the heights inside the band.
"""

import numpy as np
from numba.extending import register_jitable

from ._core import segment_level_sampled, segment_level_weighted
from ._warm import _ANSWERED, _TRIES, _VALID, _WIDEN, _band_limit, _next_width, _refit, _under_count


@register_jitable
def _width(w, i):
    """The width of column i: 1 without widths (``w`` None; the branch is pruned)."""
    if w is None:
        return 1.0
    return np.float64(w[i])


@register_jitable
def _segment_pass(c, w, lo, hi, band, band_w, sums):
    """Sums below the band (into ``sums``: count, width, width-weighted values) and the
    band's values and widths copied; returns the band's size."""
    count = 0
    wb = 0.0
    sb = 0.0
    m = 0
    for i in range(c.shape[0]):
        v = np.float64(c[i])
        u = _width(w, i)
        if v < lo:
            count += 1
            wb += u
            sb += u * v
        elif v <= hi:
            band[m] = v
            band_w[m] = u
            m += 1
    sums[0] = count
    sums[1] = wb
    sums[2] = sb
    return m


@register_jitable
def _sort_band(w, band, band_w, m):
    """The band sorted by value, its widths carried along (stable, as the reference)."""
    if w is None:
        band[:m].sort()
        return
    order = np.argsort(band[:m], kind="mergesort")
    values = band[:m][order]
    widths = band_w[:m][order]
    band[:m] = values
    band_w[:m] = widths


@register_jitable
def _level_from_band(band, band_w, m, sums, n, volume, lo):
    """The reference's rule on the sorted band: (level, ok); ok False when the band
    does not prove it."""
    k = int(sums[0])
    width = sums[1]
    s = sums[2]
    if k > 0 and width * lo - s >= volume:  # the water at the band's low end: an earlier k may fit
        return 0.0, False
    j = 0
    while True:
        if k > 0 and width > 0.0:
            if k == n:  # the (k + 1)-th value is +inf
                return (volume + s) / width, True
            if j >= m:  # the (k + 1)-th value lies above the band
                return 0.0, False
            level = (volume + s) / width
            if level <= band[j]:
                return level, True
        elif j >= m:
            return 0.0, False
        u = band_w[j]
        width += u
        s += u * band[j] if u > 0.0 else 0.0
        k += 1
        j += 1


@register_jitable
def level_warm(c, w, volume, state, band, band_w, seed):
    """Level gamma of one segment, ``sum_i w_i max(0, gamma - c_i) = volume`` (``w``
    None: unit widths), warm-started from ``state`` (updated in place).

    The sort-based reference's answer (``water_level`` / ``water_level_weighted``) to
    rounding: the band's sums run in another order. ``band``, ``band_w``: float64
    scratch of c's length; ``seed``: the cold selection's (the cold kernel's own, so a
    cold call returns the cold kernel's value to the bit). Cold when there is no
    previous level, the volume is 0 or the band misses ``_TRIES`` times.
    """
    n = c.shape[0]
    sums = np.empty(3)
    width = state[2]
    state[_ANSWERED] = 0.0
    if state[_VALID] != 0.0 and volume > 0.0:
        for _ in range(_TRIES):
            lo = state[0] - width
            m = _segment_pass(c, w, lo, state[0] + width, band, band_w, sums)
            if m > _band_limit(n):  # sorting it would cost more than the cold selection
                width /= _WIDEN
                break
            _sort_band(w, band, band_w, m)
            level, ok = _level_from_band(band, band_w, m, sums, n, volume, lo)
            if ok:
                j = _under_count(band, m, sums[0], level) - int(sums[0])
                state[2] = _next_width(band, m, j, level, abs(level - state[0]))
                state[0] = level
                state[_ANSWERED] = 1.0
                return level
            width *= _WIDEN
    level = _level_cold(c, w, volume, band, band_w, seed)
    if state[_VALID] == 0.0:  # a first band: a small fraction of the heights' spread
        spread = 0.0
        for i in range(n):
            spread = max(spread, abs(np.float64(c[i]) - level))
        width = max(spread, 1e-300) * 1e-3
    state[0] = level
    state[_VALID] = 1.0
    m = _segment_pass(c, w, level - width, level + width, band, band_w, sums)  # the band around it
    state[2] = _refit(band, m, sums[0], n, level, width, n)
    return level


@register_jitable
def _level_cold(c, w, volume, band, band_w, seed):
    """The cold kernels' selection (``band``, ``band_w`` as their scratch copies)."""
    if w is None:
        return segment_level_sampled(c, band[:c.shape[0]], volume, seed)
    n = c.shape[0]
    for i in range(n):
        band[i] = c[i]
        band_w[i] = w[i]
    return segment_level_weighted(band[:n], band_w[:n], volume, seed)


@register_jitable
def segment_follow(state, c_old, c_new):
    """Moves the band with the heights: the surface by the mean move of the heights
    that were inside the band (none inside: it stays)."""
    if state[_VALID] == 0.0:
        return
    t, d = state[0], state[2]
    count = 0.0
    total = 0.0
    for i in range(c_old.shape[0]):
        old = np.float64(c_old[i])
        inside = 1.0 if abs(old - t) <= d else 0.0
        count += inside
        total += inside * (np.float64(c_new[i]) - old)
    if count > 0.0:
        state[0] += total / count
