"""Sort-based water level in any array-API namespace: the test oracle.

For sorted values c_(1) <= ... <= c_(m) and prefix sums S_k, the level with k
values under water is (V + S_k) / k; the answer is the first k whose level does
not reach c_(k+1) (Cotter et al. 2012, Appendix B).
"""


def water_level(c, volume, offsets, *, xp):
    levels = []
    for s in range(offsets.shape[0] - 1):
        lo, hi = int(offsets[s]), int(offsets[s + 1])
        levels.append(_level(xp, xp.sort(c[lo:hi]), volume[s])[0])
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
    return candidate[first], first + 1


def water_level_biased(c, y, volume, *, xp):
    """Two basins (Section 3.6, Appendix B): heights c_i + y_i b, one level gamma.

    At the optimal b both basins have the same number k of values under water, and
    the water, 2 k gamma - sum of the k lowest positives - sum of the k lowest
    negatives, does not depend on b. So 2 gamma is the ordinary water level of the
    pairwise sums Q_j = P_(j) + N_(j) of the sorted positive and negative values,
    and b is any value keeping exactly k of each under water; we return the middle
    of that interval. Sort-based: O(n log n).
    """
    P = xp.sort(c[y > 0])
    N = xp.sort(c[y < 0])
    m = min(P.shape[0], N.shape[0])
    level, k = _level(xp, P[:m] + N[:m], volume)
    gamma = level / 2.0
    inf = float("inf")
    next_p = float(P[k]) if k < P.shape[0] else inf
    next_n = float(N[k]) if k < N.shape[0] else inf
    # u = gamma - b is the surface over the positives' own heights, w = 2 gamma - u over the negatives'.
    lower = max(float(P[k - 1]), float(level) - next_n)
    upper = min(next_p, float(level) - float(N[k - 1]))
    u = 0.5 * (lower + upper)
    return gamma, gamma - u
