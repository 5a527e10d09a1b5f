"""SBP's iteration: Algorithm 1 for K one-vs-rest problems sharing X, on the backend
inside ``kbackends.sync_free`` (:mod:`algorithms.sbp`; ``fit`` in ``_fit``)."""

from __future__ import annotations

import math
import time

import numpy as np

from kbackends import get_kernel, ops, sync_free, to_numpy

from .._boundary.sparse import is_sparse
from .._engine.progress import progress_bar
from ._steps import (
    batch_quad,
    block_response,
    dense_rows,
    replay,
    scalar_as,
    self_kernel,
    squared_norms,
)

# Renormalise the stored (unscaled) coefficients when the scale factor falls below
# this, so they never overflow; rare (each projection shrinks s by 1 / ||w||).
_RENORMALISE_BELOW = 1e-6
# The loop's uniform draws cross to the device this many iterations at a time (one
# host -> device copy, not one per iteration; the same numbers as drawn one by one).
_DRAW_BLOCK = 1024


def run(X, targets, bk, *, nu, kernel, gamma, bias, n_iter, batch_size, seed, callback, weights=None, verbose=0):
    """Algorithm 1 for ``K = targets.shape[0]`` one-vs-rest problems sharing X.

    The loop keeps everything on the backend, in ``kbackends.sync_free``: the
    unscaled responses ``C`` (X's dtype) and the averaged-response accumulator
    (float64), both (K, n); the scale factors ``s`` and ``||w||^2`` (float64, (K,));
    the water levels; the drawn rows (the host's uniforms cross to the device
    ``_DRAW_BLOCK`` iterations at a time, and the rank-th row under water is
    found by a search on the cumulative count of the mask). The rows and the scale factors of every
    iteration are logged on the device, and the coefficients (unscaled ``a``,
    averaging corrections ``B``, float64 on the host) are accumulated from the
    log after the loop, in the order the loop would have. With one problem the
    response update is the fused ``kernel_response_update`` kernel; with several,
    all classes' sampled rows share one kernel block ``K(X, X[rows])`` (a BLAS
    product per row chunk) and each class takes its own columns, so an
    iteration costs one pass over X, not K.

    ``weights`` (host, positive, not all equal) make each point a water column of
    its width and draw the rows under water with probability proportional to it:
    a search on the running sum of the weights under water instead of the count.
    """
    xp = bk.xp
    f64, i64 = xp.float64, xp.int64
    n = X.shape[0]
    n_out = targets.shape[0]
    volume = n * nu if weights is None else float(weights.sum()) * nu
    rng = np.random.default_rng(seed)
    self_k = self_kernel(X, xp, kernel)
    eta0 = 1.0 / math.sqrt(max(float(self_k.max()), 1e-300))
    quad_self = bk.asarray(self_k)  # float64 (n,)
    Y64 = bk.asarray(targets)  # (K, n) float64: the labels, encoded once on the device
    Y = xp.astype(Y64, X.dtype)
    Y_flat = xp.reshape(Y64, (n_out * n,))
    C = xp.zeros((n_out, n), dtype=X.dtype)
    C_bar = xp.zeros((n_out, n), dtype=f64)
    s = xp.ones((n_out,), dtype=f64)
    r2 = xp.zeros((n_out,), dtype=f64)  # ||w_k||^2, true units
    s_log = xp.zeros((n_iter, n_out), dtype=f64)
    idx_log = xp.zeros((n_iter, n_out, batch_size), dtype=i64)
    offsets = bk.asarray(np.arange(n_out + 1, dtype=np.int64) * n)
    class_start = offsets[:-1]
    # Block-diagonal pattern of the multi-class response update (row j of class j // batch_size).
    pattern = xp.astype(bk.asarray(np.repeat(np.eye(n_out), batch_size, axis=0)), f64)
    # On the host (NumPy) a Python branch is cheaper than computing both sides with `where`.
    on_host = isinstance(C, np.ndarray)
    # The inputs were validated once in ``fit``: the loop calls the registered
    # kernels directly (the public ops would re-validate every iteration, about
    # as long as the work itself at USPS size).
    if weights is None:
        level_kernel = get_kernel("water_level", bk)
        biased_kernel = get_kernel("water_level_biased", bk)
    else:
        W = bk.asarray(weights)  # (n,) float64
        W_flat = xp.reshape(xp.stack([W] * n_out), (n_out * n,))
        weighted_level = get_kernel("water_level_weighted", bk)
        weighted_biased = get_kernel("water_level_biased_weighted", bk)

        def level_kernel(c, volumes, offs, *, xp):
            return weighted_level(c, W_flat, volumes, offs, xp=xp)

        def biased_kernel(c, y, volume, *, xp):
            return weighted_biased(c, y, W, volume, xp=xp)
    respond = get_kernel("kernel_response_update", bk)
    # Binary, unweighted, one draw, with the bias (the default): the steps around the
    # response update as two kernels (kernels/sbp: one launch each on cuda, ~40 array calls else).
    fused = n_out == 1 and weights is None and batch_size == 1 and bias
    draw_step, average = get_kernel("sbp_draw_step", bk), get_kernel("sbp_average", bk)
    # CSR X: the rows' squared norms once (on its device), the kernel reads each row's non-zeros
    sparse_extra = {"sq_norms": xp.astype(squared_norms(X, xp), X.dtype)} if is_sparse(X) else {}
    start = time.perf_counter()
    t_done = 0
    bar = progress_bar(verbose, n_iter, "sbp")
    with sync_free():
        for t in range(1, n_iter + 1):
            eta = eta0 / math.sqrt(t)
            step = eta / batch_size
            if (t - 1) % _DRAW_BLOCK == 0:
                draws = bk.asarray(rng.random((min(_DRAW_BLOCK, n_iter - t + 1), n_out, batch_size)))
            uniform = draws[(t - 1) % _DRAW_BLOCK, ...]
            if fused:  # the binary default: the level, the draw's step, the update, the average
                levels, b = biased_kernel(C[0, :], Y[0, :], volume / s[0], xp=xp)
                idx, w, scale, s, r2, counts = draw_step(
                    C[0, :], Y[0, :], quad_self, scalar_as(xp, levels, X.dtype), scalar_as(xp, b, X.dtype),
                    uniform[0, :], s, r2, idx_log[t - 1, 0, :], s_log[t - 1, :], xp=xp, step=step,
                    renormalise_below=_RENORMALISE_BELOW)
                c = respond(X, idx, w, Y[0, :], C[0, :], xp=xp, kernel=kernel, gamma=float(gamma), **sparse_extra)
                c_bar, c = average(C_bar[0, :], c, scale, xp=xp, renormalise_below=_RENORMALISE_BELOW)
                C, C_bar = xp.reshape(c, (1, n)), xp.reshape(c_bar, (1, n))
            else:
                # water levels (raw units: level(s c, V) = s level(c, V / s)) of all classes
                if bias:
                    found = [biased_kernel(C[k, :], Y[k, :], volume / s[k], xp=xp) for k in range(n_out)]
                    levels = xp.stack([scalar_as(xp, g, f64) for g, _ in found])
                    offs = xp.stack([scalar_as(xp, b, f64) for _, b in found])
                    heights = C + offs[:, None] * Y if n_out > 1 else C + xp.astype(offs, X.dtype)[0] * Y
                else:
                    flat = xp.reshape(C, (n_out * n,))
                    levels = xp.astype(level_kernel(flat, volume / s, offsets, xp=xp), f64)
                    heights = C
                # batch_size uniform draws per class from under the water
                level_col = xp.astype(levels, X.dtype)[:, None]
                under = heights < level_col
                counts = xp.sum(xp.astype(under, i64), axis=1)
                # volume too small to cover anything strictly (in some class): the minima
                empty = xp.any(counts == 0)
                if not on_host or bool(empty):
                    at_most = heights <= level_col
                    under = xp.where(empty, at_most, under)
                    counts = xp.where(empty, xp.sum(xp.astype(at_most, i64), axis=1), counts)
                if weights is None:
                    ranks = xp.minimum(xp.astype(uniform * xp.astype(counts, f64)[:, None], i64), counts[:, None] - 1)
                    # the (rank + 1)-th row under water of class k: a search on the running count
                    running = xp.cumulative_sum(xp.reshape(xp.astype(under, i64), (n_out * n,)))
                    before = xp.cumulative_sum(counts) - counts  # rows under water in earlier classes
                    flat_at = xp.searchsorted(running, xp.reshape(before[:, None] + ranks + 1, (n_out * batch_size,)))
                else:
                    # the row where the running weight under water passes a uniform point of class k's total
                    running = xp.cumulative_sum(xp.where(xp.reshape(under, (n_out * n,)), W_flat, 0.0))
                    ends = xp.take(running, offsets[1:] - 1)
                    before = xp.concat((xp.zeros((1,), dtype=f64), ends[:-1]))
                    target = before[:, None] + uniform * (ends - before)[:, None]
                    flat_at = xp.searchsorted(running, xp.reshape(target, (n_out * batch_size,)), side="right")
                    flat_at = xp.minimum(flat_at, xp.reshape(xp.stack([offsets[1:] - 1] * batch_size, axis=1),
                                                             (n_out * batch_size,)))
                idx = xp.reshape(flat_at, (n_out, batch_size)) - class_start[:, None]
                idx_log[t - 1, :, :] = idx
                # ||w + step sum_j y_j phi(x_j)||^2 with c_j = s c_raw_j = y_j <w, phi(x_j)>
                C_at = xp.reshape(xp.astype(xp.take(xp.reshape(C, (n_out * n,)), flat_at), f64), (n_out, batch_size))
                C_at = C_at * s[:, None]
                if batch_size == 1:
                    quad = xp.take(quad_self, idx[:, 0])
                else:
                    quad = xp.stack([
                        batch_quad(dense_rows(X, idx[k, :], xp, bk), xp.take(Y64[k, :], idx[k, :]), xp, kernel, gamma)
                        for k in range(n_out)
                    ])
                r2 = r2 + 2.0 * step * xp.sum(C_at, axis=1) + step * step * quad
                raw_step = step / s  # (K,)
                coef = raw_step[:, None] * xp.reshape(xp.take(Y_flat, flat_at), (n_out, batch_size))  # step y / s
                if n_out == 1:
                    w = xp.astype(coef[0, :], X.dtype)
                    C = xp.reshape(respond(X, idx[0, :], w, Y[0, :], C[0, :], xp=xp, kernel=kernel, gamma=float(gamma),
                                           **sparse_extra), (1, n))
                else:
                    rows = xp.reshape(idx, (n_out * batch_size,))
                    C = C + Y * block_response(X, rows, coef, pattern, xp, kernel, gamma, bk)
                over = r2 > 1.0
                s = xp.where(over, s / xp.sqrt(xp.maximum(r2, 1.0)), s)
                r2 = xp.where(over, xp.ones_like(r2), r2)
                s_log[t - 1, :] = s
                C_bar = C_bar + s[:, None] * xp.astype(C, f64)
                # Renormalise (all classes) when a scale factor gets small; the host replays it on a, B.
                renormalise = xp.any(s < _RENORMALISE_BELOW)
                if not on_host or bool(renormalise):
                    C = xp.where(renormalise, C * xp.astype(s, X.dtype)[:, None], C)
                    s = xp.where(renormalise, xp.ones_like(s), s)
            t_done = t
            if bar is not None:  # the count only: every figure of the loop is on the device
                bar.update(t)
            if callback is not None:  # the callback's figures are read on the host: it syncs
                with sync_free(False):
                    info = {"iteration": t, "gamma": to_numpy(levels * s).tolist(),
                            "norm": to_numpy(xp.sqrt(r2)).tolist(), "n_under": int(xp.sum(counts)),
                            "elapsed_s": time.perf_counter() - start}
                    if callback(info):
                        break

    if bar is not None:
        bar.close()
    alpha_bar = replay(to_numpy(idx_log)[:t_done], to_numpy(s_log)[:t_done], n, eta0, batch_size,
                       _RENORMALISE_BELOW)
    levels = np.empty(n_out)
    biases = np.zeros(n_out)
    for k in range(n_out):
        cb = C_bar[k, :] / t_done  # float64: the averaged model's level and bias in full precision
        w = None if weights is None else W
        if bias:
            g, b = ops.water_level_biased(cb, Y64[k, :], volume, weights=w, check_finite=False)
            levels[k], biases[k] = float(g), float(b)
        else:
            levels[k] = float(ops.water_level(cb, volume, weights=w, check_finite=False))
    return {"alpha_bar": alpha_bar, "levels": levels, "biases": biases, "n_iter_done": t_done}
