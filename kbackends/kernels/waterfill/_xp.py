"""Sort-based water level in any array-API namespace: the test oracle.

For sorted values c_(1) <= ... <= c_(m) and prefix sums S_k, the level with k
values under water is (V + S_k) / k; the answer is the first k whose level does
not reach c_(k+1) (Cotter et al. 2012, Appendix B).
"""


def water_level(c, volume, offsets, *, xp):
    levels = []
    for s in range(offsets.shape[0] - 1):
        lo, hi = int(offsets[s]), int(offsets[s + 1])
        levels.append(_level(xp, xp.sort(c[lo:hi]), volume[s]))
    if not levels:
        return xp.zeros((0,), dtype=c.dtype)
    return xp.stack(levels)


def _level(xp, sorted_c, v):
    m = sorted_c.shape[0]
    k = xp.arange(1, m + 1, dtype=sorted_c.dtype)
    candidate = (v + xp.cumulative_sum(sorted_c)) / k
    upper = xp.concat((sorted_c[1:], xp.asarray([float("inf")], dtype=sorted_c.dtype)))
    fits = candidate <= upper
    first = int(xp.argmax(xp.astype(fits, xp.int8)))
    return candidate[first]
