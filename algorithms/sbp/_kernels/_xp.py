"""Array-API reference of the binary SBP iteration's two steps around the response
update (the oracle; the cpu engine runs it on NumPy, array_api_strict under the
transfer guard). Cotter, Shalev-Shwartz and Srebro, Algorithm 1 (Appendix B), with
the bias of Section 3.6; the loop and its storage are in ``algorithms/sbp/``:
responses ``C`` unscaled with one scale factor ``s`` (``c = s C``), ``||w||^2`` as
``r2`` in true units, both float64 (1,) arrays.

``sbp_draw_step``: one point drawn uniformly from under the water (the heights
``C + b y`` strictly below the level ``gamma``; when none is, those at or below
it), then ``||w + eta y_i phi(x_i)||^2`` from the point's response and its self
kernel value, the coefficient the response update adds (``eta y_i / s``), the
projection onto the unit ball (``s <- s / ||w||`` when ``||w|| > 1``), and the
renormalisation flag (the scale below ``renormalise_below``: the loop multiplies
it into ``C`` and restarts ``s`` at 1).

``sbp_average``: the averaged responses' accumulator, ``C_bar + s C`` (float64),
and the renormalisation of ``C`` where flagged.
"""

from __future__ import annotations

import math

import numpy as np


def sbp_draw_step(C, Y, quad_self, level, offset, uniform, s, r2, idx_out, s_out, *, xp, step, renormalise_below):
    """One draw from under the water and the step's scalar bookkeeping.

    Parameters
    ----------
    C, Y : arrays (n,), the responses' dtype
        Unscaled responses and the labels (+1 / -1).
    quad_self : array (n,) float64
        ``k(x_i, x_i)``.
    level, offset : 0-d arrays, the responses' dtype
        The water level of the heights ``C + offset * Y`` (the bias's two-basin level).
    uniform : array (1,) float64 in [0, 1)
        The draw.
    s, r2 : arrays (1,) float64
        Scale factor and ``||w||^2`` before the step.
    idx_out, s_out : arrays (1,) int64 and float64
        Written: the drawn row and the scale after the projection (the loop's logs).
    step : float
        ``eta_t`` (host).
    renormalise_below : float

    Returns
    -------
    idx : (1,) int64
    w : (1,) the responses' dtype, the response update's coefficient ``step y_i / s``
    scale : (s_avg, s_cast), the scale after the projection, (1,) float64 and (1,)
        in the responses' dtype (what :func:`sbp_average` takes)
    s_next, r2_next : (1,) float64, ``s_avg`` or 1 when renormalised, and ``||w||^2``
    count : (1,) int64, the rows the draw was among
    """
    f64, i64 = xp.float64, xp.int64
    on_host = isinstance(C, np.ndarray)  # NumPy: a Python branch is cheaper than computing both sides
    heights = C + offset * Y
    under = heights < level
    count = xp.reshape(xp.sum(xp.astype(under, i64)), (1,))
    empty = count == 0  # the volume covers nothing strictly: the minima
    if not on_host or bool(empty[0]):
        at_most = heights <= level
        under = xp.where(empty, at_most, under)
        count = xp.where(empty, xp.sum(xp.astype(at_most, i64)), count)
    rank = xp.minimum(xp.astype(uniform * xp.astype(count, f64), i64), count - 1)
    # the (rank + 1)-th row under water: a search on the running count
    idx = xp.searchsorted(xp.cumulative_sum(xp.astype(under, i64)), rank + 1)
    c_at = xp.astype(xp.take(C, idx), f64) * s
    r2 = r2 + 2.0 * step * c_at + step * step * xp.take(quad_self, idx)
    w = xp.astype(step / s * xp.astype(xp.take(Y, idx), f64), C.dtype)
    over = r2 > 1.0
    s_avg = xp.where(over, s / xp.sqrt(xp.maximum(r2, 1.0)), s)
    r2 = xp.where(over, xp.ones_like(r2), r2)
    s_next = xp.where(s_avg < renormalise_below, xp.ones_like(s_avg), s_avg)
    idx_out[...] = idx
    s_out[...] = s_avg
    return idx, w, (s_avg, xp.astype(s_avg, C.dtype)), s_next, r2, count


def sbp_average(C_bar, C, scale, *, xp, renormalise_below):
    """``(C_bar + s_avg C, C renormalised)``: ``C_bar`` (n,) float64 accumulates the
    scaled responses; ``C`` (n,) is multiplied by the scale in its dtype when
    ``s_avg`` is below ``renormalise_below``. ``scale``: ``sbp_draw_step``'s
    ``(s_avg, s_cast)``. The cuda kernel updates both arrays in place."""
    s_avg, s_cast = scale
    C_bar = C_bar + s_avg * xp.astype(C, xp.float64)
    renormalise = s_avg < renormalise_below
    if not isinstance(C, np.ndarray) or bool(renormalise[0]):
        C = xp.where(renormalise, C * s_cast, C)
    return C_bar, C


def sbp_biased_level(cold, n, n_out, xp):
    """The step-by-step loop's two-basin level kernel for a fit: the cold one, as it is."""
    return cold


def sbp_replay(idx_log, s_log, *, xp, n, eta0, batch_size, renormalise_below):
    """The averaged coefficients ``alpha_bar`` (K, n) from the loop's log (NumPy arrays:
    ``idx_log`` (T, K, batch) int64, ``s_log`` (T, K) float64), on the host.

    Iteration t added ``raw_step = (eta_t / batch_size) / s`` (s at its start) to the
    unscaled coefficient ``a`` of each drawn row (``idx_log[t - 1]``) and
    ``raw_step * S`` to the averaging correction ``B``; then ``s`` became
    ``s_log[t - 1]`` and ``S`` grew by it; a renormalisation (any ``s`` below the
    threshold) flushed ``S a - B`` and rescaled ``a``. ``sum_t alpha_t = S a - B``
    plus what was flushed: the same float64 operations in the same order as the
    host bookkeeping inside the loop did before.
    """
    n_done, n_out, _ = idx_log.shape
    rows_k = np.repeat(np.arange(n_out), batch_size)
    a = np.zeros((n_out, n))
    B = np.zeros((n_out, n))
    flushed = np.zeros((n_out, n))
    S = np.zeros(n_out)
    s = np.ones(n_out)
    for t in range(1, n_done + 1):
        eta = eta0 / math.sqrt(t)
        raw_step = (eta / batch_size) / s
        rows = idx_log[t - 1].ravel()
        np.add.at(a, (rows_k, rows), np.repeat(raw_step, batch_size))
        np.add.at(B, (rows_k, rows), np.repeat(raw_step * S, batch_size))
        s = s_log[t - 1]
        S = S + s
        if np.any(s < renormalise_below):
            flushed += S[:, None] * a - B
            a *= s[:, None]
            B[:] = 0.0
            S[:] = 0.0
            s = np.ones(n_out)
    return (flushed + S[:, None] * a - B) / n_done
