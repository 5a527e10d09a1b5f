"""The water level of one segment by expected-linear selection, written once.

Cotter, Shalev-Shwartz, Srebro (2012), Appendix B: pick a pivot p among the
candidates; if the water needed to reach p, ``f(p) = sum over values below p of
(p - c)``, is at least the volume, the level is at or below p and only the
values below p stay candidates; otherwise every value up to p is under water
and the search continues above p. No full sort. ``register_jitable``, compiled
by the Numba CPU kernels (the CUDA ones spread a segment over many threads
instead: ``_cuda.py``).
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
    state = np.uint64(seed) * _LCG_A + _LCG_C
    return _refine(a, 0, n, 0, 0.0, volume, state)


@register_jitable
def _refine(a, lo, hi, n_below, s_below, volume, state):
    """The selection on candidates ``a[lo:hi]``, with ``n_below`` values summing
    to ``s_below`` known to be under water and all candidates above them."""
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


@register_jitable
def segment_level_sampled(c, scratch, volume, seed):
    """:func:`segment_level` with one streaming pass over ``c`` for large segments
    (``c`` is only read; ``scratch`` has c's length).

    Random pivots cost several passes over the whole segment, each one a trip
    to memory once the segment outgrows the cache (ns per element tripled from
    1e5 to 1e6 elements). Instead (Floyd-Rivest style): the level of a random
    sample of s ~ n^(2/3) values, with the volume scaled by s/n, estimates the
    level's rank; two sample values a few sqrt(s) ranks either side bracket it;
    one pass sums the values below the bracket and copies the few inside it;
    the selection then runs on those alone. If the bracket missed (checked
    exactly from the pass's sums), the plain selection runs on a full copy.
    """
    n = c.shape[0]
    if volume <= 0.0 or n < 4096:
        for i in range(n):
            scratch[i] = c[i]
        return segment_level(scratch, volume, seed)
    state = np.uint64(seed) * _LCG_A + _LCG_C
    s = int(n ** (2.0 / 3.0))
    sample = np.empty(s, dtype=np.float64)
    for i in range(s):
        state = state * _LCG_A + _LCG_C
        sample[i] = c[int((state >> _SHIFT) % np.uint64(n))]
    sample.sort()
    v_sample = volume * s / n
    k = s  # values of the sample under water at its own level
    acc = 0.0
    for j in range(s):
        acc += sample[j]
        if j + 1 == s or (v_sample + acc) / (j + 1) <= sample[j + 1]:
            k = j + 1
            break
    spread = 3 * int(np.sqrt(s)) + 8
    inf = np.inf
    p_lo = sample[k - 1 - spread] if k - 1 - spread >= 0 else -inf
    p_hi = sample[k + spread] if k + spread < s else inf
    n_below = 0
    s_below = 0.0
    m = 0
    s_cand = 0.0
    for i in range(n):
        v = c[i]
        if v < p_lo:
            n_below += 1
            s_below += v
        elif v <= p_hi:
            scratch[m] = v
            m += 1
            s_cand += v
    water_lo = p_lo * n_below - s_below if n_below > 0 else 0.0
    water_hi = p_hi * (n_below + m) - (s_below + s_cand) if p_hi < inf else inf
    if water_lo < volume <= water_hi:
        return _refine(scratch, 0, m, n_below, s_below, volume, state)
    for i in range(n):  # the bracket missed: the plain selection on a full copy
        scratch[i] = c[i]
    return _refine(scratch, 0, n, 0, 0.0, volume, state)


@register_jitable
def _select(a, lo, hi, k, state):
    """Rearrange ``a[lo:hi]`` so ``a[k]`` holds the value of rank k there, smaller
    values before it and larger after (quickselect, three-way for ties). Returns
    the generator state."""
    while hi - lo > 1:
        state = state * _LCG_A + _LCG_C
        p = a[lo + int((state >> _SHIFT) % np.uint64(hi - lo))]
        lt = lo
        i = lo
        gt = hi
        while i < gt:
            v = a[i]
            if v < p:
                a[i] = a[lt]
                a[lt] = v
                lt += 1
                i += 1
            elif v > p:
                gt -= 1
                a[i] = a[gt]
                a[gt] = v
            else:
                i += 1
        if k < lt:
            hi = lt
        elif k >= gt:
            lo = gt
        else:
            return state
    return state


@register_jitable
def biased_level(P, N, volume, seed):
    """Level gamma and bias b of the two-basin problem (Section 3.6, Appendix B).

    ``P`` and ``N`` are scratch copies of the positive and negative examples'
    responses (permuted in place). With m = min(len(P), len(N)), Q_j = P_(j) +
    N_(j) (the j-th smallest of each) and S_k = sum_{j<=k} Q_j, 2 gamma is the
    water level of the Q's: the smallest k in [1, m] with ``k Q_(k+1) - S_k >=
    volume`` (Q_(m+1) = inf) gives 2 gamma = (volume + S_k) / k.

    The search over k is a bisection whose probes are quickselects in both
    arrays at once: a probe at rank k places P_(k+1) and N_(k+1) and sums the
    ranks below it inside the current window; then either everything below k
    is known to be under water (its sums are kept and the window starts after
    k) or nothing above k is needed (the window ends at k). The window halves
    each probe and a quickselect is expected linear in its window, so the whole
    search is expected O(len(P) + len(N)): no sort.

    Returns (gamma, b) with b the middle of the interval of optimal biases, as
    the sort-based reference does.
    """
    nP = P.shape[0]
    nN = N.shape[0]
    m = min(nP, nN)
    state = np.uint64(seed) * _LCG_A + _LCG_C
    klo = 1
    khi = m
    lo = 0  # P[:lo], N[:lo] hold the lo smallest of each, with sums below
    hiP = nP
    hiN = nN
    sum_below = 0.0
    while klo < khi:
        k = (klo + khi) // 2  # probe rank position k (0-based): Q_(k+1), k < m
        state = _select(P, lo, hiP, k, state)
        state = _select(N, lo, hiN, k, state)
        s = sum_below
        for i in range(lo, k):
            s += P[i] + N[i]
        if k * (P[k] + N[k]) - s >= volume:
            khi = k
            hiP = k + 1
            hiN = k + 1
        else:
            sum_below = s + P[k] + N[k]
            lo = k + 1
            klo = k + 1
    k = klo
    # sums of the k smallest, the k-th and (k+1)-th of each class
    if lo < k:
        state = _select(P, lo, hiP, k - 1, state)
        state = _select(N, lo, hiN, k - 1, state)
        for i in range(lo, k):
            sum_below += P[i] + N[i]
    p_k = P[k - 1]
    n_k = N[k - 1]
    inf = np.inf
    p_next = inf
    if k < nP:
        p_next = P[k]
        for i in range(k + 1, hiP):
            p_next = min(p_next, P[i])
    n_next = inf
    if k < nN:
        n_next = N[k]
        for i in range(k + 1, hiN):
            n_next = min(n_next, N[i])
    level = (volume + sum_below) / k
    if volume <= 0.0:
        level = p_k + n_k  # k = 1 here; avoids rounding in (0 + S_1) / 1
    lower = max(p_k, level - n_next)
    upper = min(p_next, level - n_k)
    u = 0.5 * (lower + upper)
    gamma = 0.5 * level
    return gamma, gamma - u


@register_jitable
def segment_level_weighted(a, wts, volume, seed):
    """Level gamma with ``sum_i wts_i max(0, gamma - a_i) = volume`` (widths
    ``wts >= 0``, some positive) by the same expected-linear selection as
    :func:`segment_level`, the widths permuted with the values (both scratch
    copies). Volume 0 gives the lowest value of positive width."""
    n = a.shape[0]
    if volume <= 0.0:
        m = np.inf
        for i in range(n):
            if wts[i] > 0.0:
                m = min(m, a[i])
        return m
    state = np.uint64(seed) * _LCG_A + _LCG_C
    lo = 0
    hi = n
    w_below = 0.0
    s_below = 0.0
    while lo < hi:
        state = state * _LCG_A + _LCG_C
        p = a[lo + int((state >> _SHIFT) % np.uint64(hi - lo))]
        j = lo
        w_low = 0.0
        s_low = 0.0
        for i in range(lo, hi):  # values below p (and their widths) to the front of [lo, hi)
            if a[i] < p:
                t = a[i]
                a[i] = a[j]
                a[j] = t
                u = wts[i]
                wts[i] = wts[j]
                wts[j] = u
                w_low += u
                s_low += u * t
                j += 1
        if p * (w_below + w_low) - (s_below + s_low) >= volume:
            hi = j
        else:
            w_below += w_low
            s_below += s_low
            k = j
            for i in range(j, hi):  # values equal to p are under water too
                if a[i] == p:
                    u = wts[i]
                    a[i] = a[k]
                    wts[i] = wts[k]
                    a[k] = p
                    wts[k] = u
                    w_below += u
                    s_below += u * p
                    k += 1
            lo = k
    return (volume + s_below) / w_below


@register_jitable
def biased_level_weighted(P, WP, N, WN, volume):
    """Two-basin level and bias with widths (see ``_xp.water_level_biased_weighted``):
    ``P``, ``N`` the sorted values of each class, ``WP``, ``WN`` their cumulative
    widths. A merge of the cumulative widths walks the columns Q(m) = q_P(m) + q_N(m)
    in order; the first that fits gives 2 gamma. O(n) after the sorts."""
    nP = P.shape[0]
    nN = N.shape[0]
    cap = min(WP[nP - 1], WN[nN - 1])
    inf = np.inf
    ip = 0  # first index with WP[ip] >= mark
    i_n = 0
    prev = 0.0
    w_acc = 0.0
    s_acc = 0.0
    level = inf
    m_star = 0.0
    while True:
        # the next mark: the smaller of the next cumulative widths of either class
        while ip < nP and WP[ip] <= prev:
            ip += 1
        while i_n < nN and WN[i_n] <= prev:
            i_n += 1
        mark = min(WP[ip] if ip < nP else inf, WN[i_n] if i_n < nN else inf)
        if mark > cap or mark == inf:
            break
        q = P[ip] + N[i_n]
        if volume <= 0.0:
            level = q
            m_star = mark
            break
        if w_acc > 0.0 and (volume + s_acc) / w_acc <= q:
            break  # the previous column fitted
        width = mark - prev
        w_acc += width
        s_acc += width * q
        level = (volume + s_acc) / w_acc
        m_star = mark
        prev = mark
    if volume > 0.0:
        level = (volume + s_acc) / w_acc
    # quantiles at m*: first index with cumulative width >= m* (left) and > m* (right)
    a_l = np.searchsorted(WP, m_star, side="left")
    a_r = np.searchsorted(WP, m_star, side="right")
    b_l = np.searchsorted(WN, m_star, side="left")
    b_r = np.searchsorted(WN, m_star, side="right")
    p_l = P[a_l] if a_l < nP else inf
    p_r = P[a_r] if a_r < nP else inf
    n_l = N[b_l] if b_l < nN else inf
    n_r = N[b_r] if b_r < nN else inf
    lower = max(p_l, level - n_r)
    upper = min(p_r, level - n_l)
    gamma = 0.5 * level
    return gamma, gamma - 0.5 * (lower + upper)
