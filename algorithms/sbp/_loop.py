"""SBP's iteration: Algorithm 1 for K one-vs-rest problems sharing X, on the backend
inside ``kbackends.sync_free`` (:mod:`algorithms.sbp`; ``fit`` in ``_fit``)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kbackends import get_kernel, ops, sync_free, to_numpy
from kbackends.kernel_tools import WARM_STATE
from kbackends.ops import RESPONSE_KERNELS

from .._boundary.sparse import is_sparse
from .._engine.progress import progress_bar
from ._kernels._numba import SCALARS
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

    The loop keeps everything on the backend, in ``kbackends.sync_free``: the unscaled
    responses ``C`` (X's dtype) and the averaged-response accumulator (float64), both
    (K, n); the scale factors ``s`` and ``||w||^2`` (float64, (K,)); the water levels;
    the drawn rows (the host's uniforms cross to the device ``_DRAW_BLOCK`` iterations at
    a time). The rows and scale factors of every iteration are logged on the device and
    the coefficients (unscaled ``a``, averaging corrections ``B``, float64 on the host)
    accumulated from the log after the loop, in the loop's order. With several problems
    all classes' sampled rows share one kernel block ``K(X, X[rows])`` and each class
    takes its own columns: an iteration costs one pass over X, not K. ``weights`` (host,
    positive, not all equal) make each point a water column of its width, drawn with
    probability proportional to it.

    An iteration, a step at a time (:func:`_iterate`): the water levels, a draw from
    under the water, ``||w||^2`` grown by the draw, the response update, the projection
    onto the unit ball, the average; the binary default runs them as the
    ``sbp_draw_step`` and ``sbp_average`` kernels around the update
    (:func:`_fused_iterate`), or many iterations a call (``sbp_run``: the cpu engine's
    compiled run; on cuda where :data:`WINDOW_RUN` or :data:`CUDA_RUN`). On the cpu
    engine the general loop's levels are warm-started (``st.warm``, one state a class:
    :func:`_warm_levels`). Returns the averaged coefficients, levels and biases
    (:func:`_averaged_result`) and the iterations run.
    """
    p = _problem(X, targets, bk, nu=nu, kernel=kernel, gamma=gamma, bias=bias, batch_size=batch_size,
                 weights=weights)
    st = _State.zeros(p, n_iter)
    uniforms = _Uniforms(bk, seed, n_iter, p.n_out, batch_size)
    start = time.perf_counter()
    bar = progress_bar(verbose, n_iter, "sbp")
    if p.compiled is not None:  # many iterations per compiled call (the cpu engine; cuda where CUDA_RUN)
        _compiled_run(p, st, uniforms, n_iter, bar, callback, start)
        if bar is not None:
            bar.close()
        return _averaged_result(p, st)
    with sync_free():
        for t in range(1, n_iter + 1):
            eta = p.eta0 / math.sqrt(t)
            step = eta / batch_size
            uniform = uniforms.at(t)
            if p.fused:  # the binary default: the level, the draw's step, the update, the average
                _fused_iterate(p, st, t, uniform, step)
            else:
                _iterate(p, st, t, uniform, step)
            st.t_done = t
            if bar is not None:  # the count only: every figure of the loop is on the device
                bar.update(t)
            if callback is not None and _report(callback, p, st, t, start):
                break
    if bar is not None:
        bar.close()
    return _averaged_result(p, st)


@dataclass
class _Problem:
    """What every iteration reads and none changes: the data and labels on the
    backend, the water's volume, the class layout of the flat (K * n) arrays, the
    registered kernels the loop calls, the options."""

    bk: Any
    xp: Any
    X: Any
    n: int
    n_out: int
    Y64: Any  # (K, n) float64 labels, encoded once on the device
    Y: Any  # Y64 in X's dtype
    Y_flat: Any  # Y64 flat, (K * n,)
    quad_self: Any  # K(x_i, x_i), float64 (n,)
    volume: float  # the slack volume nu * n (nu * sum(w) with weights)
    offsets: Any  # (K + 1,) class starts in the flat arrays
    class_start: Any
    pattern: Any  # block-diagonal pattern of the multi-class response update
    W: Any  # (n,) float64 weights on the device, or None
    W_flat: Any  # W once per class, (K * n,), or None
    level_kernel: Callable
    biased_kernel: Callable
    respond: Callable
    draw_step: Callable
    average: Callable
    response_extra: dict
    eta0: float
    kernel: str
    gamma: float
    bias: bool
    batch_size: int
    fused: bool
    compiled: Callable | None  # ``sbp_run`` where the backend has it (the binary default on cpu)
    warm: _WarmKernels | None  # the warm-started levels where the backend has them (the cpu engine)
    on_host: bool


def _problem(X, targets, bk, *, nu, kernel, gamma, bias, batch_size, weights):
    """The loop's fixed inputs, put on the backend once (:class:`_Problem`)."""
    xp = bk.xp
    f64 = xp.float64
    n = X.shape[0]
    n_out = targets.shape[0]
    volume = n * nu if weights is None else float(weights.sum()) * nu
    self_k = self_kernel(X, xp, kernel)
    eta0 = 1.0 / math.sqrt(max(float(self_k.max()), 1e-300))
    quad_self = bk.asarray(self_k)  # float64 (n,)
    Y64 = bk.asarray(targets)  # (K, n) float64: the labels, encoded once on the device
    Y = xp.astype(Y64, X.dtype)
    Y_flat = xp.reshape(Y64, (n_out * n,))
    offsets = bk.asarray(np.arange(n_out + 1, dtype=np.int64) * n)
    # Block-diagonal pattern of the multi-class response update (row j of class j // batch_size).
    pattern = xp.astype(bk.asarray(np.repeat(np.eye(n_out), batch_size, axis=0)), f64)
    W, W_flat, level_kernel, biased_kernel = _level_kernels(bk, weights, n, n_out)
    respond = get_kernel("kernel_response_update", bk)
    # Binary, unweighted, one draw, with the bias (the default): the steps around the
    # response update as two kernels (_kernels: one launch each on cuda, ~40 array calls else).
    fused = n_out == 1 and weights is None and batch_size == 1 and bias
    draw_step, average = get_kernel("sbp_draw_step", bk), get_kernel("sbp_average", bk)
    compiled = _compiled_kernel(bk) if fused else None
    # The rows' squared norms once (on X's device), not at every response update: the
    # sparse kernels need them, the cuda engine's dense kernel reads them (n d values an
    # iteration saved); the cpu engine's dense kernels square each row as they read it.
    response_extra = {"sq_norms": xp.astype(squared_norms(X, xp), X.dtype)} \
        if is_sparse(X) or (kernel == "rbf" and bk.name in ("cuda", "cudasim")) else {}
    return _Problem(
        bk=bk, xp=xp, X=X, n=n, n_out=n_out, Y64=Y64, Y=Y, Y_flat=Y_flat, quad_self=quad_self, volume=volume,
        offsets=offsets, class_start=offsets[:-1], pattern=pattern, W=W, W_flat=W_flat,
        level_kernel=level_kernel, biased_kernel=biased_kernel, respond=respond, draw_step=draw_step,
        average=average, response_extra=response_extra, eta0=eta0, kernel=kernel, gamma=gamma, bias=bias,
        batch_size=batch_size, fused=fused, compiled=compiled, warm=None if fused else _warm_kernels(bk),
        # On the host (NumPy) a Python branch is cheaper than computing both sides with `where`.
        on_host=isinstance(Y, np.ndarray),
    )


# The cuda engine's runs of many iterations a call, each off (the step-by-step iteration): CUDA_RUN
# the one-block sbp_run (_kernels/_cuda_run.py; 4x slower than the step-by-step iteration on an H100,
# docs/benchmarks.md "The SBP run"), WINDOW_RUN the windows without a host read (_cuda_window.py,
# not yet timed on a device).
CUDA_RUN = False
WINDOW_RUN = False


def _compiled_kernel(bk):
    """The backend's ``sbp_run`` (many iterations per call; on cuda ``sbp_window_run``
    where :data:`WINDOW_RUN`), or None where it has none or the switches say so."""
    if bk.name in ("cuda", "cudasim") and WINDOW_RUN:
        return get_kernel("sbp_window_run", bk)
    if bk.name in ("cuda", "cudasim") and not CUDA_RUN:
        return None
    try:
        return get_kernel("sbp_run", bk)
    except NotImplementedError:
        return None


@dataclass
class _WarmKernels:
    """The backend's warm-started levels (``algorithms/sbp/_kernels/_numba_levels.py``):
    the segmented level, the two-basin levels, the bands' follow of the responses."""

    levels: Callable
    biased: Callable
    follow: Callable


def _warm_kernels(bk):
    """The backend's warm-started level kernels, or None where it has none (the cuda
    engine keeps its cold kernels)."""
    try:
        return _WarmKernels(*(get_kernel(op, bk) for op in ("sbp_levels", "sbp_biased_levels", "sbp_levels_follow")))
    except NotImplementedError:
        return None


def _level_kernels(bk, weights, n, n_out):
    """The water-level kernels (segmented; two-basin with the bias), weighted when
    ``weights`` is given: (W, W flat per class, level kernel, biased kernel)."""
    xp = bk.xp
    # The inputs were validated once in ``fit``: the loop calls the registered
    # kernels directly (the public ops would re-validate every iteration, about
    # as long as the work itself at USPS size).
    if weights is None:
        level_kernel = get_kernel("water_level", bk)
        biased_kernel = get_kernel("sbp_biased_level", bk)(get_kernel("water_level_biased", bk), n, n_out, xp)
        return None, None, level_kernel, biased_kernel
    W = bk.asarray(weights)  # (n,) float64
    W_flat = xp.reshape(xp.stack([W] * n_out), (n_out * n,))
    weighted_level = get_kernel("water_level_weighted", bk)
    weighted_biased = get_kernel("water_level_biased_weighted", bk)

    def level_kernel(c, volumes, offs, *, xp):
        return weighted_level(c, W_flat, volumes, offs, xp=xp)

    def biased_kernel(c, y, volume, *, xp):
        return weighted_biased(c, y, W, volume, xp=xp)
    return W, W_flat, level_kernel, biased_kernel


@dataclass
class _State:
    """What the iterations thread, all on the device: the unscaled responses ``C``
    and the averaged-response accumulator ``C_bar`` (K, n), the scale factors ``s``
    and ``||w||^2`` ``r2`` (K,), the last levels and counts under water (for the
    callback), the log of drawn rows and scale factors; and the iterations done."""

    C: Any
    C_bar: Any
    s: Any
    r2: Any  # ||w_k||^2, true units
    s_log: Any
    idx_log: Any
    levels: Any = None
    counts: Any = None
    warm: Any = None  # (K, WARM_STATE) float64 states of the warm levels (the cpu engine)
    t_done: int = 0

    @classmethod
    def zeros(cls, p, n_iter):
        """The state before iteration 1: no coefficients, scale 1, empty logs."""
        xp, f64 = p.xp, p.xp.float64
        return cls(
            C=xp.zeros((p.n_out, p.n), dtype=p.X.dtype),
            C_bar=xp.zeros((p.n_out, p.n), dtype=f64),
            s=xp.ones((p.n_out,), dtype=f64),
            r2=xp.zeros((p.n_out,), dtype=f64),
            s_log=xp.zeros((n_iter, p.n_out), dtype=f64),
            idx_log=xp.zeros((n_iter, p.n_out, p.batch_size), dtype=xp.int64),
            warm=np.zeros((p.n_out, WARM_STATE)) if p.warm is not None else None,
        )


class _Uniforms:
    """The loop's uniform draws, (K, batch_size) an iteration, from the seed's stream:
    they cross to the device ``_DRAW_BLOCK`` iterations at a time (one host -> device
    copy a block, the same numbers as drawn one by one)."""

    def __init__(self, bk, seed, n_iter, n_out, batch_size):
        self.bk, self.n_iter, self.n_out, self.batch_size = bk, n_iter, n_out, batch_size
        self.rng = np.random.default_rng(seed)
        self.block = None

    def at(self, t):
        """Iteration t's draws (t from 1), copying the next block over when t starts one."""
        return self.block_of(t)[(t - 1) % _DRAW_BLOCK, ...]

    def block_of(self, t):
        """The block of draws holding iteration t's, (iterations, K, batch_size); drawn
        when t starts it."""
        if (t - 1) % _DRAW_BLOCK == 0:
            self.block = self.bk.asarray(
                self.rng.random((min(_DRAW_BLOCK, self.n_iter - t + 1), self.n_out, self.batch_size)))
        return self.block


def _compiled_run(p, st, uniforms, n_iter, bar, callback, start):
    """The binary default through ``sbp_run``: runs of iterations up to the end of a
    block of draws, one iteration a call with a callback (it sees every iteration);
    the progress bar moves after each run."""
    scalars = np.zeros(SCALARS)
    scalars[0] = 1.0  # s; ||w||^2 = 0
    warm, scratch = np.zeros(WARM_STATE), {}  # scratch: what the kernel prepares once a fit
    idx_log, s_log = st.idx_log.reshape(n_iter), st.s_log.reshape(n_iter)
    C, C_bar = st.C[0, :], st.C_bar[0, :]
    kernel_code = RESPONSE_KERNELS.index(p.kernel)
    t = 0
    while t < n_iter:
        block = uniforms.block_of(t + 1).reshape(-1)
        first = t % _DRAW_BLOCK  # iteration t + 1's place in its block
        end = t + (1 if callback is not None else block.shape[0] - first)
        p.compiled(p.X, p.Y[0, :], C, C_bar, p.quad_self, block[first:first + end - t],
                   scalars, idx_log, s_log, warm, xp=p.xp, t0=t, eta0=p.eta0, volume=p.volume,
                   kernel_code=kernel_code, gamma=float(p.gamma), renormalise_below=_RENORMALISE_BELOW,
                   scratch=scratch, **p.response_extra)
        t = st.t_done = end
        st.s, st.r2 = scalars[0:1].copy(), scalars[1:2].copy()
        st.levels, st.counts = np.float64(scalars[2]), np.array([int(scalars[4])])
        if bar is not None:
            bar.update(t)
        if callback is not None and _report(callback, p, st, t, start):
            break


def _fused_iterate(p, st, t, uniform, step):
    """The binary default's iteration: the level and bias, ``sbp_draw_step`` (the
    draw, ``||w||^2``, the projection, the log), the response update, ``sbp_average``."""
    xp, X, Y, C, C_bar, s, r2 = p.xp, p.X, p.Y, st.C, st.C_bar, st.s, st.r2
    kernel, gamma, response_extra, n = p.kernel, p.gamma, p.response_extra, p.n
    levels, b = p.biased_kernel(C[0, :], Y[0, :], p.volume / s[0], xp=xp)
    idx, w, scale, s, r2, counts = p.draw_step(
        C[0, :], Y[0, :], p.quad_self, scalar_as(xp, levels, X.dtype), scalar_as(xp, b, X.dtype),
        uniform[0, :], s, r2, st.idx_log[t - 1, 0, :], st.s_log[t - 1, :], xp=xp, step=step,
        renormalise_below=_RENORMALISE_BELOW)
    c = p.respond(X, idx, w, Y[0, :], C[0, :], xp=xp, kernel=kernel, gamma=float(gamma), **response_extra)
    c_bar, c = p.average(C_bar[0, :], c, scale, xp=xp, renormalise_below=_RENORMALISE_BELOW)
    st.C, st.C_bar = xp.reshape(c, (1, n)), xp.reshape(c_bar, (1, n))
    st.s, st.r2, st.levels, st.counts = s, r2, levels, counts


def _iterate(p, st, t, uniform, step):
    """One iteration of the general loop (several classes, weights, a batch or no bias),
    a step at a time; the drawn rows and the new scale factors go to the log."""
    heights = _water_levels(p, st)
    under = _under_water(p, st, heights)
    flat_at = _draw_rows(p, st.counts, under, uniform)
    idx = p.xp.reshape(flat_at, (p.n_out, p.batch_size)) - p.class_start[:, None]
    st.idx_log[t - 1, :, :] = idx
    _grow_norm(p, st, idx, flat_at, step)
    C_old = st.C
    _update_responses(p, st, idx, flat_at, step)
    if p.warm is not None:  # the warm levels' bands move with the responses
        p.warm.follow(C_old, st.C, p.Y, st.warm, xp=p.xp, bias=p.bias)
    _project(p, st)
    st.s_log[t - 1, :] = st.s
    _average(p, st)


def _water_levels(p, st):
    """The water levels of all classes into ``st.levels`` (raw units:
    ``level(s c, V) = s level(c, V / s)``); returns the heights they are measured
    against (the responses, shifted by each class's bias)."""
    xp, f64, X, C, Y, s = p.xp, p.xp.float64, p.X, st.C, p.Y, st.s
    if p.warm is not None:
        return _warm_levels(p, st)
    if p.bias:
        found = [p.biased_kernel(C[k, :], Y[k, :], p.volume / s[k], xp=xp) for k in range(p.n_out)]
        st.levels = xp.stack([scalar_as(xp, g, f64) for g, _ in found])
        offs = xp.stack([scalar_as(xp, b, f64) for _, b in found])
        return C + offs[:, None] * Y if p.n_out > 1 else C + xp.astype(offs, X.dtype)[0] * Y
    flat = xp.reshape(C, (p.n_out * p.n,))
    st.levels = xp.astype(p.level_kernel(flat, p.volume / s, p.offsets, xp=xp), f64)
    return C


def _warm_levels(p, st):
    """:func:`_water_levels` by the warm-started kernels (each the cold kernel's level to
    rounding), the states kept in ``st.warm``."""
    xp, C, Y = p.xp, st.C, p.Y
    volumes = p.volume / st.s
    if p.bias:
        st.levels, offs = p.warm.biased(C, Y, volumes, st.warm, xp=xp, weights=p.W)
        return C + offs[:, None] * Y if p.n_out > 1 else C + xp.astype(offs, p.X.dtype)[0] * Y
    st.levels = xp.astype(p.warm.levels(C, volumes, st.warm, xp=xp, weights=p.W), xp.float64)
    return C


def _under_water(p, st, heights):
    """The mask of the rows under each class's water and their counts (into
    ``st.counts``); a volume too small to cover anything strictly: the minima."""
    xp, i64 = p.xp, p.xp.int64
    level_col = xp.astype(st.levels, p.X.dtype)[:, None]
    under = heights < level_col
    counts = xp.sum(xp.astype(under, i64), axis=1)
    # volume too small to cover anything strictly (in some class): the minima
    empty = xp.any(counts == 0)
    if not p.on_host or bool(empty):
        at_most = heights <= level_col
        under = xp.where(empty, at_most, under)
        counts = xp.where(empty, xp.sum(xp.astype(at_most, i64), axis=1), counts)
    st.counts = counts
    return under


def _draw_rows(p, counts, under, uniform):
    """``batch_size`` rows per class from under the water, as indices into the flat
    (K * n) arrays: uniformly, or with probability proportional to the weights."""
    xp, f64, i64, n_out, batch_size = p.xp, p.xp.float64, p.xp.int64, p.n_out, p.batch_size
    if p.W is None:
        ranks = xp.minimum(xp.astype(uniform * xp.astype(counts, f64)[:, None], i64), counts[:, None] - 1)
        # the (rank + 1)-th row under water of class k: a search on the running count
        running = xp.cumulative_sum(xp.reshape(xp.astype(under, i64), (n_out * p.n,)))
        before = xp.cumulative_sum(counts) - counts  # rows under water in earlier classes
        return xp.searchsorted(running, xp.reshape(before[:, None] + ranks + 1, (n_out * batch_size,)))
    # the row where the running weight under water passes a uniform point of class k's total
    offsets = p.offsets
    running = xp.cumulative_sum(xp.where(xp.reshape(under, (n_out * p.n,)), p.W_flat, 0.0))
    ends = xp.take(running, offsets[1:] - 1)
    before = xp.concat((xp.zeros((1,), dtype=f64), ends[:-1]))
    target = before[:, None] + uniform * (ends - before)[:, None]
    flat_at = xp.searchsorted(running, xp.reshape(target, (n_out * batch_size,)), side="right")
    return xp.minimum(flat_at, xp.reshape(xp.stack([offsets[1:] - 1] * batch_size, axis=1),
                                          (n_out * batch_size,)))


def _grow_norm(p, st, idx, flat_at, step):
    """``||w||^2`` after the step, ``||w + step sum_j y_j phi(x_j)||^2``, from the drawn
    rows' responses (``c_j = s c_raw_j = y_j <w, phi(x_j)>``) and their kernel block."""
    xp, f64, X, C, s = p.xp, p.xp.float64, p.X, st.C, st.s
    C_at = xp.reshape(xp.astype(xp.take(xp.reshape(C, (p.n_out * p.n,)), flat_at), f64), (p.n_out, p.batch_size))
    C_at = C_at * s[:, None]
    if p.batch_size == 1:
        quad = xp.take(p.quad_self, idx[:, 0])
    else:
        quad = xp.stack([
            batch_quad(dense_rows(X, idx[k, :], xp, p.bk), xp.take(p.Y64[k, :], idx[k, :]), xp, p.kernel, p.gamma)
            for k in range(p.n_out)
        ])
    st.r2 = st.r2 + 2.0 * step * xp.sum(C_at, axis=1) + step * step * quad


def _update_responses(p, st, idx, flat_at, step):
    """The responses after adding ``step y_j / s`` to the drawn rows' unscaled
    coefficients: one kernel row each (one class), or one shared kernel block."""
    xp, X, Y, C, n_out, kernel, gamma = p.xp, p.X, p.Y, st.C, p.n_out, p.kernel, p.gamma
    raw_step = step / st.s  # (K,)
    coef = raw_step[:, None] * xp.reshape(xp.take(p.Y_flat, flat_at), (n_out, p.batch_size))  # step y / s
    if n_out == 1:
        w = xp.astype(coef[0, :], X.dtype)
        st.C = xp.reshape(p.respond(X, idx[0, :], w, Y[0, :], C[0, :], xp=xp, kernel=kernel, gamma=float(gamma),
                                    **p.response_extra), (1, p.n))
    else:
        rows = xp.reshape(idx, (n_out * p.batch_size,))
        st.C = C + Y * block_response(X, rows, coef, p.pattern, xp, kernel, gamma, p.bk)


def _project(p, st):
    """Back onto the unit ball: where ``||w||^2 > 1`` the scale factor shrinks by
    ``1 / ||w||`` and ``||w||^2`` becomes 1."""
    xp, s, r2 = p.xp, st.s, st.r2
    over = r2 > 1.0
    st.s = xp.where(over, s / xp.sqrt(xp.maximum(r2, 1.0)), s)
    st.r2 = xp.where(over, xp.ones_like(r2), r2)


def _average(p, st):
    """The averaged responses take ``s C``; when a scale factor gets small the
    responses of all classes are renormalised (``C *= s``, ``s = 1``; the host
    replays it on a, B)."""
    xp, X, s = p.xp, p.X, st.s
    st.C_bar = st.C_bar + s[:, None] * xp.astype(st.C, xp.float64)
    renormalise = xp.any(s < _RENORMALISE_BELOW)
    if not p.on_host or bool(renormalise):
        st.C = xp.where(renormalise, st.C * xp.astype(s, X.dtype)[:, None], st.C)
        st.s = xp.where(renormalise, xp.ones_like(s), s)
        if st.warm is not None:  # the responses rescaled: the warm levels' surfaces no longer hold
            st.warm[...] = 0.0


def _report(callback, p, st, t, start):
    """The user's callback with the iteration's figures, read on the host (a fit with a
    callback synchronises once an iteration); True (its answer) stops the loop."""
    with sync_free(False):  # on the host: the compiled runs keep these figures there
        levels, s, r2, counts = (np.asarray(to_numpy(a)) for a in (st.levels, st.s, st.r2, st.counts))
        info = {"iteration": t, "gamma": (levels * s).tolist(), "norm": np.sqrt(r2).tolist(),
                "n_under": int(counts.sum()), "elapsed_s": time.perf_counter() - start}
        return callback(info)


def _averaged_result(p, st):
    """The averaged model from the loop's log and averaged responses, float64 on the
    host: the coefficients replayed from the log, each class's level (and bias)."""
    t_done, n_out = st.t_done, p.n_out
    alpha_bar = replay(to_numpy(st.idx_log)[:t_done], to_numpy(st.s_log)[:t_done], p.n, p.eta0, p.batch_size,
                       _RENORMALISE_BELOW)
    levels = np.empty(n_out)
    biases = np.zeros(n_out)
    for k in range(n_out):
        cb = st.C_bar[k, :] / t_done  # float64: the averaged model's level and bias in full precision
        if p.bias:
            g, b = ops.water_level_biased(cb, p.Y64[k, :], p.volume, weights=p.W, check_finite=False)
            levels[k], biases[k] = float(g), float(b)
        else:
            levels[k] = float(ops.water_level(cb, p.volume, weights=p.W, check_finite=False))
    return {"alpha_bar": alpha_bar, "levels": levels, "biases": biases, "n_iter_done": t_done}
