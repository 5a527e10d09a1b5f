"""Sort-based water level in any array-API namespace: the test oracle.

For sorted values c_(1) <= ... <= c_(m) and prefix sums S_k, the level with k
values under water is (V + S_k) / k; the answer is the first k whose level does
not reach c_(k+1) (Cotter et al. 2012, Appendix B).

No value crosses to the host (SBP calls these inside its sync-free loop on
namespaces without a compiled kernel): the segments are sorted together, and
per-segment positions are found by searches on cumulative counts rather than by
Python integers read from the device.
"""


def water_level(c, volume, offsets, *, xp):
    """Levels of the segments ``c[offsets[s]:offsets[s + 1]]`` (non-empty), float64."""
    n_seg = offsets.shape[0] - 1
    if n_seg <= 0:
        return xp.zeros((0,), dtype=c.dtype)
    f64, i64 = xp.float64, xp.int64
    n = c.shape[0]
    offsets = xp.astype(offsets, i64)
    pos = xp.arange(n, dtype=i64)
    ends = offsets[1:]
    seg = xp.searchsorted(ends, pos, side="right")  # segment of each position
    # Sorted within segments: a stable sort by value, then a stable sort by segment.
    order = xp.argsort(c, stable=True)
    order = xp.take(order, xp.argsort(xp.take(seg, order), stable=True))
    sorted_c = xp.astype(xp.take(c, order), f64)
    start = xp.take(offsets, seg)
    # Prefix sums within each segment, from one running sum (in float64: the
    # subtraction of the sums of earlier segments keeps their rounding small).
    total = xp.concat((xp.zeros((1,), dtype=f64), xp.cumulative_sum(sorted_c)))
    prefix = xp.take(total, pos + 1) - xp.take(total, start)
    candidate = (xp.take(xp.astype(volume, f64), seg) + prefix) / xp.astype(pos - start + 1, f64)
    last = (pos + 1) == xp.take(ends, seg)
    upper = xp.concat((sorted_c[1:], xp.asarray([float("inf")], dtype=f64)))
    fits = candidate <= xp.where(last, float("inf"), upper)
    return xp.take(candidate, _first_true(xp, fits, offsets[:-1]))


def _first_true(xp, mask, starts):
    """Index of the first True of ``mask`` at or after each of ``starts`` (one exists)."""
    count = xp.concat((xp.zeros((1,), dtype=xp.int64), xp.cumulative_sum(xp.astype(mask, xp.int64))))
    # count[i] = Trues before i; the first True p >= s has count[p + 1] = count[s] + 1.
    return xp.searchsorted(count, xp.take(count, starts) + 1, side="left") - 1


def _level(xp, sorted_c, v):
    """Level of one sorted segment and the number k under water, as 0-d arrays."""
    m = sorted_c.shape[0]
    k = xp.arange(1, m + 1, dtype=sorted_c.dtype)
    candidate = (v + xp.cumulative_sum(sorted_c)) / k
    upper = xp.concat((sorted_c[1:], xp.asarray([float("inf")], dtype=sorted_c.dtype)))
    first = _first_true(xp, candidate <= upper, xp.zeros((1,), dtype=xp.int64))
    return xp.take(candidate, first)[0], first[0] + 1


def water_level_biased(c, y, volume, *, xp):
    """Two basins (Section 3.6, Appendix B): heights c_i + y_i b, one level gamma.

    At the optimal b both basins have the same number k of values under water, and
    the water, 2 k gamma - sum of the k lowest positives - sum of the k lowest
    negatives, does not depend on b. So 2 gamma is the ordinary water level of the
    pairwise sums Q_j = P_(j) + N_(j) of the sorted positive and negative values,
    and b is any value keeping exactly k of each under water; we return the middle
    of that interval. Sort-based: O(n log n). The basins are sorted with the other
    class's entries as +inf after them (no boolean mask: shapes stay static), so
    Q_j is +inf past the smaller basin and never under water.
    """
    f64 = xp.float64
    inf = float("inf")
    n = c.shape[0]
    P = xp.sort(xp.where(y > 0, c, inf))
    N = xp.sort(xp.where(y < 0, c, inf))
    level, k = _level(xp, P + N, volume)
    gamma = level / 2.0

    def at(a, i):  # a[i] as a float64 0-d array, +inf past the end
        got = xp.astype(xp.take(a, xp.reshape(xp.minimum(i, n - 1), (1,)))[0], f64)
        return xp.where(i < n, got, inf)

    # u = gamma - b is the surface over the positives' own heights, w = 2 gamma - u over the negatives'.
    level64 = xp.astype(level, f64)
    lower = xp.maximum(at(P, k - 1), level64 - at(N, k))
    upper = xp.minimum(at(P, k), level64 - at(N, k - 1))
    u = 0.5 * (lower + upper)
    return gamma, gamma - xp.astype(u, gamma.dtype)
