"""Numba (cpu) run of the binary SBP iteration: many iterations per compiled call.

``sbp_run`` runs iterations ``t0 + 1 .. t1`` of the binary default (one draw, the
bias, no weights) with the state in place: the two-basin level warm-started from
the previous iteration's (:func:`kbackends.kernel_tools.biased_level_warm`), the
draw and the step's bookkeeping in float64 as ``_xp.sbp_draw_step``, the response
update (one kernel row: the same arithmetic as the ``kernel_response_update``
kernel, the drawn row's squared norm from the norms computed once), and the
average as ``_xp.sbp_average``, fused into the update's pass.

Rows of zeros and ones (dense, or CSR holding only ones: one-hot columns such as the
LIBSVM ``a*a`` / ``w*a`` sets', a pandas ``get_dummies`` frame) run on their bits
(:func:`kbackends.kernel_tools.binary_rows`): each product a popcount, the RBF kernel's
value read from a table of ``exp(-gamma d)`` over the integer squared distances d: the
same values as the sparse or dense product's, in a few instructions a row where the
product reads every stored value and the exponential costs a polynomial.

The draw and bookkeeping compile without fast-math (the heights ``C + b y`` and the
float64 scalars round as NumPy rounds them); the update's passes with it.
"""

import math

import numpy as np
from numba import njit, prange
from numba.extending import register_jitable

from kbackends.kernel_tools import binary_rows, biased_level_warm, fast_exp, popcount, warm_bands, warm_follow

_FAST = {"reassoc", "contract", "nsz", "arcp"}
SCALARS = 5  # s, ||w||^2, the last level gamma, its bias b, the rows the last draw was among


PACK_FROM = 64  # iterations a call runs from which binary rows are packed as bits (a pass over X)
DRAW_CHUNK = 256  # rows a vectorised count covers before the draw's search looks inside


@njit(cache=True)
def _under(C, Y, g, b, lo, hi, strict):
    """Rows in ``[lo, hi)`` whose heights ``C + b y`` are under ``g`` (at most ``g`` when
    not ``strict``): a count with no branch, which SIMD runs (unsigned indices: Numba's
    test for negative ones would keep it from vectorising)."""
    count = 0
    if strict:
        for i in range(np.uint64(lo), np.uint64(hi)):
            count += C[i] + b * Y[i] < g
    else:
        for i in range(np.uint64(lo), np.uint64(hi)):
            count += C[i] + b * Y[i] <= g
    return count


@njit(cache=True)
def _draw(C, Y, g, b, uniform):
    """The (rank + 1)-th row strictly under the water (heights ``C + b y`` below ``g``;
    at or below when none is), rank drawn from ``uniform``: (row, count).

    Whether a row is under the water is as good as random in the row order, so a
    search that branches on it row by row mispredicts every other row: the search
    counts chunks of :data:`DRAW_CHUNK` rows without a branch and walks row by row
    only inside the chunk that holds the rank."""
    n = C.shape[0]
    count = _under(C, Y, g, b, 0, n, True)
    strict = count > 0
    if not strict:
        count = _under(C, Y, g, b, 0, n, False)
    rank = min(np.int64(uniform * np.float64(count)), count - 1)
    seen = 0
    for lo in range(0, n, DRAW_CHUNK):
        hi = min(lo + DRAW_CHUNK, n)
        inside = _under(C, Y, g, b, lo, hi, strict)
        if seen + inside > rank:
            for i in range(lo, hi):
                h = C[i] + b * Y[i]
                if (h < g) if strict else (h <= g):
                    if seen == rank:
                        return i, count
                    seen += 1
        seen += inside
    return n - 1, count  # not reached: count rows satisfy the test


# The update runs as tasks of rows on every core: each task computes its rows' kernel
# values (each row's as one thread computes it) and adds them, and the warm level's follow
# sums its part; the parts are summed in task order. A task holds UPDATE_CHUNK rows, fewer
# where rows are long (about TASK_WORK stored values a task, at least MIN_TASK_ROWS rows),
# so the models depend on the data's shape, never on the number of threads.
UPDATE_CHUNK = 4096
TASK_WORK = 1 << 16
MIN_TASK_ROWS = 256


def task_rows(values_per_row):
    """The rows of an update task for rows of ``values_per_row`` stored values."""
    return int(min(UPDATE_CHUNK, max(MIN_TASK_ROWS, TASK_WORK // max(1, int(values_per_row)))))


@njit(fastmath=_FAST, cache=True)
def _values_sparse(data, indices, indptr, sq_norms, row, w, kernel_code, gamma, S, dots, lo, hi):
    """``dots[i] = w K(x_i, x_row)``, i in ``[lo, hi)``, for CSR rows (``S``: the drawn row
    scattered dense). Unsigned indices: Numba's negative-index tests would keep the
    loops from vectorising."""
    for i in range(np.uint64(lo), np.uint64(hi)):
        dot = 0.0
        for p in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
            dot += data[p] * S[np.uint64(indices[p])]
        dots[i] = dot
    sq_s = sq_norms[row]
    if kernel_code == 0:
        for i in range(np.uint64(lo), np.uint64(hi)):
            dots[i] = w * fast_exp(-gamma * max(sq_norms[i] + sq_s - 2.0 * dots[i], 0.0))
    else:
        for i in range(np.uint64(lo), np.uint64(hi)):
            dots[i] = w * dots[i]


@njit(fastmath=_FAST, cache=True)
def _values_dense(X, row, w, kernel_code, gamma, dots, lo, hi):
    """``dots[i] = w K(x_i, x_row)``, i in ``[lo, hi)``, for dense X (RBF from
    ``||x_i - x_row||^2``, linear from ``x_i . x_row``)."""
    d = X.shape[1]
    for i in range(np.uint64(lo), np.uint64(hi)):
        acc = 0.0
        if kernel_code == 0:
            for k in range(d):
                diff = X[i, k] - X[row, k]
                acc += diff * diff
        else:
            for k in range(d):
                acc += X[i, k] * X[row, k]
        dots[i] = acc
    if kernel_code == 0:
        for i in range(np.uint64(lo), np.uint64(hi)):
            dots[i] = w * fast_exp(-gamma * dots[i])
    else:
        for i in range(np.uint64(lo), np.uint64(hi)):
            dots[i] = w * dots[i]


@njit(fastmath=_FAST, cache=True)
def _values_bits(bits, ones, row, w, kernel_code, exp_table, distances, dots, lo, hi):
    """``_values_sparse`` for binary rows (``kernel_tools.binary_rows``), the same values:
    the products as popcounts of the rows' bits, word by word (passes SIMD runs), the RBF
    kernel's value read from ``exp_table`` at the squared distance (an integer)."""
    if kernel_code == 0:  # |x_i|^2 + |x_row|^2 - 2 x_i . x_row
        sign = -2
        for i in range(np.uint64(lo), np.uint64(hi)):
            distances[i] = ones[i] + ones[row]
    else:  # x_i . x_row
        sign = 1
        for i in range(np.uint64(lo), np.uint64(hi)):
            distances[i] = 0
    for k in range(bits.shape[0]):
        word = bits[k, row]
        for i in range(np.uint64(lo), np.uint64(hi)):
            distances[i] += sign * popcount(bits[k, i] & word)
    if kernel_code == 0:
        for i in range(np.uint64(lo), np.uint64(hi)):
            dots[i] = w * exp_table[distances[i]]
    else:
        for i in range(np.uint64(lo), np.uint64(hi)):
            dots[i] = w * np.float64(distances[i])


@njit(cache=True, parallel=True)
def _update_sparse(data, indices, indptr, sq_norms, row, w, Y, C, C_bar, s_avg, kernel_code, gamma, S, dots, rows,
                   parts, warm):
    """``C += y w K(X, x_row)`` for CSR X (the row scattered into the dense ``S``, zeroed
    after), ``C_bar += s_avg C`` and the bands' follow, a task of rows at a time."""
    first, last = indptr[row], indptr[row + 1]
    for p in range(first, last):
        S[indices[p]] = data[p]
    t_pos, d_pos, t_neg, d_neg = warm_bands(warm)
    n = C.shape[0]
    for task in prange(parts.shape[0]):
        lo, hi = task * rows, min(n, (task + 1) * rows)
        _values_sparse(data, indices, indptr, sq_norms, row, w, kernel_code, gamma, S, dots, lo, hi)
        _add_and_follow(dots, Y, C, C_bar, s_avg, t_pos, d_pos, t_neg, d_neg, lo, hi, parts[task])
    for p in range(first, last):
        S[indices[p]] = 0.0
    _follow(parts, warm)


@njit(cache=True, parallel=True)
def _update_dense(X, row, w, Y, C, C_bar, s_avg, kernel_code, gamma, dots, rows, parts, warm):
    """``C += y w K(X, x_row)`` for dense X, ``C_bar += s_avg C`` and the bands' follow."""
    t_pos, d_pos, t_neg, d_neg = warm_bands(warm)
    n = C.shape[0]
    for task in prange(parts.shape[0]):
        lo, hi = task * rows, min(n, (task + 1) * rows)
        _values_dense(X, row, w, kernel_code, gamma, dots, lo, hi)
        _add_and_follow(dots, Y, C, C_bar, s_avg, t_pos, d_pos, t_neg, d_neg, lo, hi, parts[task])
    _follow(parts, warm)


@njit(cache=True, parallel=True)
def _update_bits(bits, ones, row, w, Y, C, C_bar, s_avg, kernel_code, exp_table, distances, dots, rows, parts, warm):
    """``_update_sparse`` for binary rows (:func:`_values_bits`)."""
    t_pos, d_pos, t_neg, d_neg = warm_bands(warm)
    n = C.shape[0]
    for task in prange(parts.shape[0]):
        lo, hi = task * rows, min(n, (task + 1) * rows)
        _values_bits(bits, ones, row, w, kernel_code, exp_table, distances, dots, lo, hi)
        _add_and_follow(dots, Y, C, C_bar, s_avg, t_pos, d_pos, t_neg, d_neg, lo, hi, parts[task])
    _follow(parts, warm)


@register_jitable
def band_move(old, new, pos, t_pos, d_pos, t_neg, d_neg):
    """One height's part in ``warm_follow``'s sums: ``(in the positives' band, in the
    negatives' band, its move)``, the band judged at its ``old`` value (float64)."""
    inside = abs(np.float64(old) - (t_pos if pos else t_neg)) <= (d_pos if pos else d_neg)
    return (1.0 if inside and pos else 0.0), (1.0 if inside and not pos else 0.0), np.float64(new) - np.float64(old)


@register_jitable
def follow_sums(n_p, s_p, n_n, s_n, old, new, pos, t_pos, d_pos, t_neg, d_neg):
    """``warm_follow``'s four sums (each basin's in-band count and moves) with one more
    height (the cuda kernels' loops; the cpu update adds them inline, where it vectorises)."""
    m_p, m_n, move = band_move(old, new, pos, t_pos, d_pos, t_neg, d_neg)
    return n_p + m_p, s_p + m_p * move, n_n + m_n, s_n + m_n * move


@njit(fastmath=_FAST, cache=True)
def _add_and_follow(acc, Y, C, C_bar, s_avg, t_pos, d_pos, t_neg, d_neg, lo, hi, part):
    """Rows ``[lo, hi)``: ``C += y acc``, ``C_bar += s_avg C``, and into ``part`` the
    task's share of ``warm_follow``'s sums (the count and the moves of the heights
    inside each basin's band)."""
    n_p = s_p = n_n = s_n = 0.0
    for i in range(np.uint64(lo), np.uint64(hi)):
        c_old = C[i]
        C[i] = c_old + Y[i] * acc[i]
        C_bar[i] += s_avg * np.float64(C[i])
        m_p, m_n, move = band_move(c_old, C[i], Y[i] > 0, t_pos, d_pos, t_neg, d_neg)
        n_p += m_p
        s_p += m_p * move
        n_n += m_n
        s_n += m_n * move
    part[0] = n_p
    part[1] = s_p
    part[2] = n_n
    part[3] = s_n


@njit(cache=True)
def _parts(n, rows):
    """The update's tasks' sums: one row of four a task of ``rows`` rows."""
    return np.zeros(((n + rows - 1) // rows, 4))


@njit(cache=True)
def _follow(parts, warm):
    """The bands moved with the heights (``warm_follow``) by the tasks' sums, in task order."""
    n_p = s_p = n_n = s_n = 0.0
    for task in range(parts.shape[0]):
        n_p += parts[task, 0]
        s_p += parts[task, 1]
        n_n += parts[task, 2]
        s_n += parts[task, 3]
    warm_follow(warm, n_p, s_p, n_n, s_n)


@njit(cache=True)
def _step(C, Y, quad_self, uniform, scalars, idx_log, s_log, warm, band_p, band_n, t, eta0, volume, n_pos):
    """Iteration t's level, draw and float64 bookkeeping (``_xp.sbp_draw_step``):
    (row, coefficient in C's dtype, scale after the projection)."""
    step = eta0 / math.sqrt(t)
    s = scalars[0]
    gamma, b = biased_level_warm(C, Y, n_pos, volume / s, warm, band_p, band_n)
    dt = C.dtype.type
    row, count = _draw(C, Y, dt(gamma), dt(b), uniform)
    w, s_avg = step_bookkeeping(scalars, idx_log, s_log, t, row, count, gamma, b, step, np.float64(C[row]),
                                np.float64(Y[row]), quad_self[row])
    return row, dt(w), s_avg


@register_jitable
def step_bookkeeping(scalars, idx_log, s_log, t, row, count, gamma, b, step, c_row, y_row, quad_row):
    """Iteration t's float64 bookkeeping after drawing ``row`` (``_xp.sbp_draw_step``'s; the
    cuda run's thread 0 calls it too): ``||w||^2`` grown by the draw and projected onto the
    unit ball, the logs and scalars written; returns the response update's coefficient
    ``step y / s`` and the scale after the projection."""
    s = scalars[0]
    r2 = scalars[1] + 2.0 * step * (c_row * s) + step * step * quad_row
    w = step / s * y_row
    s_avg = s
    if r2 > 1.0:
        s_avg = s / math.sqrt(max(r2, 1.0))
        r2 = 1.0
    idx_log[t - 1] = row
    s_log[t - 1] = s_avg
    scalars[1] = r2
    scalars[2] = gamma
    scalars[3] = b
    scalars[4] = count
    return w, s_avg


@njit(cache=True)
def _renormalise(C, scalars, s_avg, renormalise_below, warm):
    """The scale below the threshold: ``C *= s`` (C's dtype), ``s = 1``; the warm
    level's surfaces no longer hold (the next level is cold)."""
    if s_avg < renormalise_below:
        s_cast = C.dtype.type(s_avg)
        for i in range(C.shape[0]):
            C[i] = C[i] * s_cast
        scalars[0] = 1.0
        warm[:] = 0.0
    else:
        scalars[0] = s_avg


@njit(cache=True)
def _run_sparse(data, indices, indptr, sq_norms, Y, C, C_bar, quad_self, uniforms, scalars, idx_log, s_log, warm,
                band_p, band_n, S, dots, t0, t1, eta0, volume, n_pos, kernel_code, gamma, renormalise_below, rows):
    parts = _parts(C.shape[0], rows)
    for t in range(t0 + 1, t1 + 1):
        row, w, s_avg = _step(C, Y, quad_self, uniforms[t - t0 - 1], scalars, idx_log, s_log, warm, band_p, band_n,
                              t, eta0, volume, n_pos)
        _update_sparse(data, indices, indptr, sq_norms, row, w, Y, C, C_bar, s_avg, kernel_code, gamma, S, dots,
                       rows, parts, warm)
        _renormalise(C, scalars, s_avg, renormalise_below, warm)


@njit(cache=True)
def _run_bits(bits, ones, Y, C, C_bar, quad_self, uniforms, scalars, idx_log, s_log, warm, band_p, band_n, t0, t1,
              eta0, volume, n_pos, kernel_code, gamma, renormalise_below, rows):
    exp_table = np.empty(2 * ones.max() + 1)  # exp(-gamma d) for every squared distance d
    for d in range(exp_table.shape[0]):
        exp_table[d] = fast_exp(-gamma * np.float64(d))
    distances, dots, parts = np.empty(C.shape[0], dtype=np.int32), np.empty(C.shape[0]), _parts(C.shape[0], rows)
    for t in range(t0 + 1, t1 + 1):
        row, w, s_avg = _step(C, Y, quad_self, uniforms[t - t0 - 1], scalars, idx_log, s_log, warm, band_p, band_n,
                              t, eta0, volume, n_pos)
        _update_bits(bits, ones, row, w, Y, C, C_bar, s_avg, kernel_code, exp_table, distances, dots, rows, parts,
                     warm)
        _renormalise(C, scalars, s_avg, renormalise_below, warm)


@njit(cache=True)
def _run_dense(X, Y, C, C_bar, quad_self, uniforms, scalars, idx_log, s_log, warm, band_p, band_n, dots, t0, t1,
               eta0, volume, n_pos, kernel_code, gamma, renormalise_below, rows):
    parts = _parts(C.shape[0], rows)
    for t in range(t0 + 1, t1 + 1):
        row, w, s_avg = _step(C, Y, quad_self, uniforms[t - t0 - 1], scalars, idx_log, s_log, warm, band_p, band_n,
                              t, eta0, volume, n_pos)
        _update_dense(X, row, w, Y, C, C_bar, s_avg, kernel_code, gamma, dots, rows, parts, warm)
        _renormalise(C, scalars, s_avg, renormalise_below, warm)


def sbp_run(X, Y, C, C_bar, quad_self, uniforms, scalars, idx_log, s_log, warm, *, xp, t0, eta0, volume, kernel_code,
            gamma, renormalise_below, sq_norms=None, scratch=None):
    """Iterations ``t0 + 1 .. t0 + len(uniforms)`` of the binary default, in place.

    Parameters
    ----------
    X : (n, d) array or scipy.sparse CSR (canonical), the responses' dtype
    Y, C : (n,) labels (+1 / -1) and unscaled responses, the responses' dtype
    C_bar : (n,) float64, the averaged responses' accumulator
    quad_self : (n,) float64, ``k(x_i, x_i)``
    uniforms : (T,) float64, the iterations' draws
    scalars : (SCALARS,) float64: ``s``, ``||w||^2`` (read and written), the last
        level, bias and count under water (written)
    idx_log, s_log : (n_iter,) int64 and float64, the loop's logs (written at t - 1)
    warm : (WARM_STATE,) float64, the warm level's state (zeros: the first call is cold)
    t0 : int, the iterations done before
    eta0, volume, gamma, renormalise_below : float
    kernel_code : int, 0 RBF, 1 linear
    sq_norms : (n,) the rows' squared norms in the responses' dtype (CSR X)
    scratch : dict, optional, kept by the caller for the fit's calls: the rows' bits and the
        update's task size are made into it on the first call (without it, on each call; the
        bits only for a call of at least ``PACK_FROM`` iterations)
    """
    n = C.shape[0]
    n_pos = int(np.count_nonzero(Y > 0))
    band_p, band_n = np.empty(n), np.empty(n)
    t1 = t0 + uniforms.shape[0]
    packed, rows = _prepared(X, scratch, uniforms.shape[0] >= PACK_FROM)
    if packed is not None:
        _run_bits(*packed, Y, C, C_bar, quad_self, uniforms, scalars, idx_log, s_log, warm, band_p, band_n, t0, t1,
                  eta0, volume, n_pos, kernel_code, gamma, renormalise_below, rows)
    elif hasattr(X, "tocsr"):
        S, dots = np.zeros(X.shape[1], dtype=X.dtype), np.empty(n)
        _run_sparse(X.data, X.indices, X.indptr, sq_norms, Y, C, C_bar, quad_self, uniforms, scalars, idx_log, s_log,
                    warm, band_p, band_n, S, dots, t0, t1, eta0, volume, n_pos, kernel_code, gamma,
                    renormalise_below, rows)
    else:
        _run_dense(X, Y, C, C_bar, quad_self, uniforms, scalars, idx_log, s_log, warm, band_p, band_n, np.empty(n), t0,
                   t1, eta0, volume, n_pos, kernel_code, gamma, renormalise_below, rows)


def _prepared(X, scratch, long_call):
    """``(bits, task rows)``: the rows' bits (None where they are not binary, or on a short
    call without ``scratch``) and the update's task size, made once a fit where the caller
    keeps ``scratch``. The task size comes from the rows' nonzeros, the same for dense and
    CSR copies of the rows and for their bits: copies whose kernel values agree exactly give
    the same model."""
    if scratch is not None and "rows" in scratch:
        return scratch["bits"], scratch["rows"]
    packed = binary_rows(X) if scratch is not None or long_call else None
    rows = task_rows(-(-np.count_nonzero(X.data if hasattr(X, "tocsr") else X) // max(1, X.shape[0])))
    if scratch is not None:
        scratch.update(bits=packed, rows=rows)
    return packed, rows


@njit(cache=True)
def _replay(idx_log, s_log, n, eta0, batch_size, renormalise_below):
    n_done, n_out, batch = idx_log.shape
    a = np.zeros((n_out, n))
    B = np.zeros((n_out, n))
    flushed = np.zeros((n_out, n))
    S = np.zeros(n_out)
    s = np.ones(n_out)
    for t in range(1, n_done + 1):
        eta = eta0 / math.sqrt(t)
        renormalise = False
        for k in range(n_out):
            raw_step = (eta / batch_size) / s[k]
            for j in range(batch):
                a[k, idx_log[t - 1, k, j]] += raw_step
                B[k, idx_log[t - 1, k, j]] += raw_step * S[k]
            s[k] = s_log[t - 1, k]
            S[k] = S[k] + s[k]
            renormalise |= s[k] < renormalise_below
        if renormalise:
            for k in range(n_out):
                for i in range(n):
                    flushed[k, i] += S[k] * a[k, i] - B[k, i]
                    a[k, i] *= s[k]
                    B[k, i] = 0.0
                S[k] = 0.0
                s[k] = 1.0
    return (flushed + S.reshape(n_out, 1) * a - B) / n_done


def sbp_replay(idx_log, s_log, *, xp, n, eta0, batch_size, renormalise_below):
    """``_xp.sbp_replay`` compiled: the same float64 operations in the same order (no
    fast-math), one loop over the log where the reference makes a few NumPy calls an
    iteration."""
    return _replay(np.ascontiguousarray(idx_log, dtype=np.int64), np.ascontiguousarray(s_log, dtype=np.float64),
                   int(n), float(eta0), int(batch_size), float(renormalise_below))
