"""The water level of one segment by expected-linear selection, written once.

Cotter, Shalev-Shwartz, Srebro (2012), Appendix B: pick a pivot p among the
candidates; if the water needed to reach p, ``f(p) = sum over values below p of
(p - c)``, is at least the volume, the level is at or below p and only the
values below p stay candidates; otherwise every value up to p is under water
and the search continues above p. No full sort. ``register_jitable``: the Numba
CPU kernel and the Numba-CUDA kernel compile this same function.
"""

import numpy as np
from numba.extending import register_jitable

_LCG_A = np.uint64(6364136223846793005)
_LCG_C = np.uint64(1442695040888963407)
_SHIFT = np.uint64(33)


@register_jitable
def segment_level(a, volume, seed):
    """Level gamma with ``sum_i max(0, gamma - a_i) = volume`` for a non-empty
    segment ``a`` (a scratch copy: it is permuted). Volume 0 gives min(a)."""
    n = a.shape[0]
    if volume <= 0.0:
        m = a[0]
        for i in range(1, n):
            m = min(m, a[i])
        return m
    lo = 0
    hi = n
    n_below = 0
    s_below = 0.0
    state = np.uint64(seed) * _LCG_A + _LCG_C
    while lo < hi:
        state = state * _LCG_A + _LCG_C
        p = a[lo + int((state >> _SHIFT) % np.uint64(hi - lo))]
        j = lo
        s_low = 0.0
        for i in range(lo, hi):  # values below p to the front of [lo, hi)
            if a[i] < p:
                t = a[i]
                a[i] = a[j]
                a[j] = t
                s_low += t
                j += 1
        n_low = j - lo
        if p * (n_below + n_low) - (s_below + s_low) >= volume:
            hi = j  # the level is at or below p
        else:
            n_below += n_low
            s_below += s_low
            k = j
            for i in range(j, hi):  # values equal to p are under water too
                if a[i] == p:
                    a[i] = a[k]
                    a[k] = p
                    k += 1
            n_below += k - j
            s_below += (k - j) * p
            lo = k
    return (volume + s_below) / n_below
