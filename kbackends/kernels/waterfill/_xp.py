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
    if offsets.shape[0] <= 1:
        return xp.zeros((0,), dtype=c.dtype)
    f64 = xp.float64
    offsets, pos, ends, seg, order = _segment_order(c, offsets, xp)
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


def _segment_order(c, offsets, xp):
    """``(offsets, pos, ends, seg, order)``: int64 offsets, each position's index and
    segment, and the permutation that sorts ``c`` within each segment (a stable sort
    by value, then a stable sort by segment)."""
    i64 = xp.int64
    offsets = xp.astype(offsets, i64)
    pos = xp.arange(c.shape[0], dtype=i64)
    ends = offsets[1:]
    seg = xp.searchsorted(ends, pos, side="right")  # segment of each position
    order = xp.argsort(c, stable=True)
    order = xp.take(order, xp.argsort(xp.take(seg, order), stable=True))
    return offsets, pos, ends, seg, order


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


def _weighted_first_fit(xp, sorted_c, sorted_w, volume, starts, ends, seg, pos):
    """Level of each segment of ``sorted_c`` (sorted within segments) when column i
    has width ``sorted_w[i] >= 0``: the first k (with positive width so far) whose
    level ``(V + sum w c) / sum w`` over the k lowest does not reach the next value."""
    f64 = xp.float64
    wc = xp.where(sorted_w > 0, sorted_c, 0.0) * sorted_w  # 0 * inf is NaN: width-0 columns hold no water
    total_w = xp.concat((xp.zeros((1,), dtype=f64), xp.cumulative_sum(sorted_w)))
    total_s = xp.concat((xp.zeros((1,), dtype=f64), xp.cumulative_sum(wc)))
    width = xp.take(total_w, pos + 1) - xp.take(total_w, starts)
    prefix = xp.take(total_s, pos + 1) - xp.take(total_s, starts)
    positive = width > 0
    candidate = (volume + prefix) / xp.where(positive, width, 1.0)
    last = (pos + 1) == ends
    upper = xp.concat((sorted_c[1:], xp.asarray([float("inf")], dtype=f64)))
    fits = positive & (candidate <= xp.where(last, float("inf"), upper))
    return candidate, fits


def water_level_weighted(c, weights, volume, offsets, *, xp):
    """Weighted levels of the segments: ``sum_i w_i max(0, gamma - c_i) = V`` (column i
    has width ``w_i >= 0``; each segment needs a positive total width), float64.

    Integer weights give the level of the heights repeated that many times; volume 0
    gives the lowest height of positive width. Sort-based: the oracle of the Numba
    kernel and, through the registry's fallback, the cuda engine's (device sorts,
    scans and searches, no host round trip).
    """
    if offsets.shape[0] <= 1:
        return xp.zeros((0,), dtype=c.dtype)
    f64 = xp.float64
    offsets, pos, ends, seg, order = _segment_order(c, offsets, xp)
    sorted_c = xp.astype(xp.take(c, order), f64)
    sorted_w = xp.astype(xp.take(weights, order), f64)
    starts = xp.take(offsets, seg)
    volume_at = xp.take(xp.astype(volume, f64), seg)
    candidate, fits = _weighted_first_fit(xp, sorted_c, sorted_w, volume_at, starts, xp.take(ends, seg), seg, pos)
    # volume 0: the lowest height of positive width, exactly (no rounding of V + w c over w)
    candidate = xp.where(volume_at <= 0, sorted_c, candidate)
    return xp.take(candidate, _first_true(xp, fits, offsets[:-1]))


def water_level_biased_weighted(c, y, weights, volume, *, xp):
    """Two basins with widths (SBP's bias with sample weights): gamma, b with
    ``sum_i w_i max(0, gamma - (c_i + y_i b)) = V`` and gamma largest over b.

    With W_P(u), W_N(v) the widths of the positives below u and of the negatives
    below v, the optimum has equal widths under water in both basins (the
    derivative in b vanishes). Writing the water as an integral over that common
    width m, ``int (u - q_P(m))_+ + (v - q_N(m))_+ dm`` with q the quantile
    functions, 2 gamma is the weighted level of the merged columns
    ``Q(m) = q_P(m) + q_N(m)``: one column per interval between consecutive
    cumulative widths of either class (up to the smaller class's total), its width
    the interval's length. Unit widths give Q_j = P_(j) + N_(j), the unweighted
    rule. b: the middle of the interval of optimal biases, from the quantiles at
    the width m* under water. Sort-based, static shapes (no host round trip).
    """
    f64, i64 = xp.float64, xp.int64
    inf = float("inf")
    n = c.shape[0]
    w = xp.astype(weights, f64)
    c64 = xp.astype(c, f64)

    def basin(mask):
        order = xp.argsort(xp.where(mask, c64, inf), stable=True)
        values = xp.take(xp.where(mask, c64, inf), order)
        widths = xp.take(xp.where(mask, w, 0.0), order)
        return values, xp.cumulative_sum(widths)

    P, WP = basin(y > 0)
    N, WN = basin(y < 0)
    cap = xp.minimum(WP[-1], WN[-1])
    marks = xp.sort(xp.concat((WP, WN)))  # every cumulative width of either class (2n)
    valid = (marks > 0) & (marks <= cap)
    pad = xp.concat((P, xp.asarray([inf], dtype=f64)))
    pad_n = xp.concat((N, xp.asarray([inf], dtype=f64)))
    Q = xp.take(pad, xp.searchsorted(WP, marks, side="left")) + xp.take(pad_n, xp.searchsorted(WN, marks, side="left"))
    Q = xp.where(valid, Q, inf)
    widths = xp.where(valid, marks - xp.concat((xp.zeros((1,), dtype=f64), marks[:-1])), 0.0)
    pos = xp.arange(2 * n, dtype=i64)
    zero = xp.zeros((2 * n,), dtype=i64)
    candidate, fits = _weighted_first_fit(xp, Q, widths, float(volume), zero, xp.full((2 * n,), 2 * n, dtype=i64),
                                          zero, pos)
    if float(volume) <= 0:
        candidate = Q
    first = _first_true(xp, fits, xp.zeros((1,), dtype=i64))
    level = xp.take(candidate, first)[0]
    m_star = xp.take(marks, first)
    pick = lambda values, cum, side: xp.take(values, xp.searchsorted(cum, m_star, side=side))[0]  # noqa: E731
    lower = xp.maximum(pick(pad, WP, "left"), level - pick(pad_n, WN, "right"))
    upper = xp.minimum(pick(pad, WP, "right"), level - pick(pad_n, WN, "left"))
    u = 0.5 * (lower + upper)
    gamma = level / 2.0
    return gamma, gamma - u
