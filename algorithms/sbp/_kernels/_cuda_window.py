"""SBP's binary default on cuda a window of iterations at a time, no host round trip inside a window.

The cuda engine's ``sbp_window_run``, with ``sbp_run``'s signature and results (the
iterations ``t0 + 1 .. t1`` of the binary default, the state in place). The step-by-step
iteration (:func:`algorithms.sbp._loop._fused_iterate`) sorts the heights twice for its
cold level (CUB) and makes about ten launches and CuPy calls an iteration, each host
time; the one-block run (``_cuda_run``) has no host time but one block for the response
update. Here an iteration is four launches and no host read:

1. ``_cuda_level._follow_grid`` (a grid): the previous iteration's average (``C_bar +=
   s C``, the renormalisation) and the bands' follow of the heights;
2. ``_cuda_level._pass_grid`` (a grid): the band pass;
3. :func:`_level_draw` (one block): the level from the bands
   (:func:`kbackends.kernel_tools.biased_level_after_pass`), the draw from under the water
   and the step's float64 bookkeeping (``_cuda_run.draw_block``, the one-block run's);
4. the response update (the ``kernel_response_update`` kernel, the step-by-step loop's).

Where the bands miss (the first iteration, after a renormalisation, a basin that jumps),
:func:`_level_draw` writes the iteration into ``halt`` and a zero coefficient; every later
launch of the window sees ``halt`` and does nothing (the response update adds zero). The
host reads ``halt`` once a window (8 bytes), finds that iteration's level by the cold
kernel, has the bands refitted around it and the iteration finished (:func:`_level_draw`
with the level given), and goes on from the next: the same iterations in the same order as
the one-block run, whose models these equal to rounding (tests/algorithms/
test_sbp_cuda_window.py under the simulator). A window of :data:`WINDOW` iterations: a
miss costs the host time of the rest of its window.

Nothing a window launches depends on the host but the iteration's place in it: the
window's first iteration and its uniforms' offset are read on the device (``at``, set
before each window), a pending average is a device flag, the responses start from C and
end in it, the call's uniforms sit in a buffer of the fit's. So each whole window of
dense rows can be one replay of a CUDA graph (``algorithms.sbp._kernels.WINDOW_GRAPH``,
:class:`kbackends.CapturedGraph`); under the simulator the same schedule runs as it is.
"""

from numba import cuda, float64, int64

import algorithms.sbp._kernels as _switches

from kbackends import CapturedGraph, ops, sync_free, to_numpy
from kbackends.kernel_tools import (
    SHARED_BAND,
    WARM_STATE,
    biased_level_after_pass,
    launch_context,
    parts_sum,
    refit_warm_block,
    run_kernel,
    warm_follow,
)
from kbackends.ops import RESPONSE_KERNELS

from ._cuda import _average
from ._cuda_level import MAX_BLOCKS, THREADS, _follow_grid, _pass_grid
from ._cuda_run import draw_block

WINDOW = 16  # iterations between the host's reads of ``halt``
_SUMS = 4 * THREADS

_SIG = ("void({f}[::1], {f}[::1], float64[::1], int64, float64, float64[::1], float64[::1], float64[::1], "
        "int64[::1], float64[::1], int64, float64[::1], float64[::1], int64[::1], int64, float64[::1], int64[::1], "
        "float64[::1], {f}[::1], int64[::1], float64[::1], int64[::1], float64, float64, int64[::1], boolean)")
PTX_SIGNATURES = {"_level_draw": [_SIG.format(f="float32"), _SIG.format(f="float64")]}
PTX_FLOAT64_BY_DESIGN = {
    "_level_draw": "the level, its bands and the step's scalars (s, ||w||^2, the rank) are float64 in every dtype "
    "(as the one-block run's); the draw compares the heights in their own dtype",
}


@cuda.jit
def _level_draw(C, Y, quad_self, n_pos, volume, warm, band_p, band_n, cnt, part, n_parts, follow_part, uniforms, at, j,
                scalars, idx_log, s_log, cast, row_out, s_avg, pend, eta0, renormalise_below, halt, given):
    """Iteration ``t = at[0] + j`` (its uniform ``uniforms[at[1] + j]``): the level, the
    draw and the bookkeeping on one block. The level comes from the grid's bands (the
    state's surfaces moved by the follow's sums first; zeroed instead right after a
    renormalisation), or with ``given`` it is the host's cold level ``scalars[2:4]``, the
    bands refitted around it. A miss writes t into ``halt`` and a zero coefficient; a draw
    leaves its average pending (``pend``)."""
    red = cuda.shared.array(_SUMS, float64)
    cnt_block = cuda.shared.array(2, int64)
    share = cuda.shared.array(4, float64)
    sort_p = cuda.shared.array(SHARED_BAND, float64)
    sort_n = cuda.shared.array(SHARED_BAND, float64)
    scan_lt = cuda.shared.array(THREADS, int64)
    scan_le = cuda.shared.array(THREADS, int64)
    found = cuda.shared.array(1, int64)
    if halt[0] != 0:
        return
    tid = cuda.threadIdx.x
    t = at[0] + j
    if given:
        gamma_t = scalars[2]
        b_t = scalars[3]
        refit_warm_block(C, Y, n_pos, warm, gamma_t, b_t, band_p, band_n, sort_p, sort_n, red, cnt_block, share, tid,
                         THREADS)
    else:
        if tid == 0:
            if s_avg[0] < renormalise_below:  # the responses were just rescaled: the surfaces no longer hold
                for k in range(WARM_STATE):
                    warm[k] = 0.0
            else:
                n_p, s_p, n_n, s_n = parts_sum(follow_part, n_parts)
                warm_follow(warm, n_p, s_p, n_n, s_n)
        cuda.syncthreads()
        gamma_t, b_t, ok = biased_level_after_pass(C, Y, n_pos, volume / scalars[0], warm, band_p, band_n, cnt, part,
                                                   n_parts, sort_p, sort_n, red, cnt_block, share, tid, THREADS)
        if not ok:
            if tid == 0:
                halt[0] = t
                cast[2] = 0.0  # the response update adds nothing
            return
    row, scale = draw_block(C, Y, quad_self, gamma_t, b_t, uniforms[at[1] + j], scalars, idx_log, s_log, t, eta0,
                            cast, scan_lt, scan_le, found, share, tid, THREADS)
    if tid == 0:
        row_out[0] = row
        s_avg[0] = scale
        pend[0] = 1
        scalars[0] = 1.0 if scale < renormalise_below else scale


class _Buffers:
    """The device state a fit's calls share: the warm level's bands, sums and previous
    heights, the drawn row, the step's scale and coefficient, the flags (``halt``; ``pend``,
    an average pending) and the window's place (``at``); made on the first call."""

    def __init__(self, C, Y, xp):
        f64, n = xp.float64, C.shape[0]
        with sync_free(False):  # once a fit
            self.n_pos = int(xp.sum(Y > 0))
        self.blocks = max(1, min(MAX_BLOCKS, -(-n // THREADS)))
        self.band_p, self.band_n = xp.empty((n,), dtype=f64), xp.empty((n,), dtype=f64)
        self.part, self.follow_part = xp.zeros((4 * self.blocks,), dtype=f64), xp.zeros((4 * self.blocks,), dtype=f64)
        self.cnt, self.at = xp.zeros((2,), dtype=xp.int64), xp.zeros((2,), dtype=xp.int64)
        self.halt, self.pend, self.row = (xp.zeros((1,), dtype=xp.int64) for _ in range(3))
        self.prev = xp.zeros_like(C)  # the heights at the last level: C's at the first iteration
        self.warm = xp.zeros((WARM_STATE,), dtype=f64)
        self.s_avg = xp.ones((1,), dtype=f64)  # the last iteration's scale, for its average
        self.cast = xp.zeros((4,), dtype=C.dtype)  # level, bias, coefficient, scale in C's dtype
        self.w, self.s_cast = self.cast[2:3], self.cast[3:4]
        self.uniforms = xp.zeros((0,), dtype=f64)  # the call's uniforms, where a graph finds them
        self.cold_levels = 0


def sbp_window_run(X, Y, C, C_bar, quad_self, uniforms, scalars, idx_log, s_log, warm, *, xp, respond, t0, eta0,
                   volume, kernel_code, gamma, renormalise_below, sq_norms=None, scratch=None):
    """``_numba.sbp_run``'s signature and results on CuPy arrays, ``respond`` the backend's
    ``kernel_response_update`` kernel; ``scalars`` and ``warm`` are the host's float64
    arrays, updated in place; ``scratch`` (a dict kept for the fit's calls) holds the
    device state between calls (:class:`_Buffers`, key ``"window"``)."""
    scratch = {} if scratch is None else scratch
    if "window" not in scratch:
        scratch["window"] = _Buffers(C, Y, xp)
    b = scratch["window"]
    m = uniforms.shape[0]
    if b.uniforms.shape[0] < m:
        b.uniforms = xp.empty((m,), dtype=xp.float64)
    b.uniforms[:m] = uniforms
    with sync_free(False):  # the host's state in, once a call
        scalars_d = xp.asarray(scalars)
        b.warm[...] = xp.asarray(warm)
    update = {"xp": xp, "kernel": RESPONSE_KERNELS[kernel_code], "gamma": float(gamma)}
    if sq_norms is not None:
        update["sq_norms"] = sq_norms
    run = _Run(X, Y, C, C_bar, quad_self, scalars_d, idx_log, s_log, b, xp, respond, update, t0, float(eta0),
               float(volume), float(renormalise_below))
    run.iterations(t0 + m)
    with sync_free(False):  # the host's state out, once a call
        scalars[:] = to_numpy(scalars_d)
        warm[:] = to_numpy(b.warm)
    return C, C_bar


class _Run:
    """One call's iterations: windows of launches (each whole window of dense rows one
    replay of a CUDA graph where ``algorithms.sbp._kernels.WINDOW_GRAPH``), a host read of ``halt`` after each."""

    def __init__(self, X, Y, C, C_bar, quad_self, scalars, idx_log, s_log, b, xp, respond, update, t0, eta0, volume,
                 renormalise_below):
        self.X, self.Y, self.C, self.C_bar, self.quad_self = X, Y, C, C_bar, quad_self
        self.scalars, self.idx_log, self.s_log, self.b, self.xp = scalars, idx_log, s_log, b, xp
        self.respond, self.update, self.t0, self.eta0, self.volume = respond, update, t0, eta0, volume
        self.renormalise_below = renormalise_below
        # CSR rows: the update's cuSPARSE product is not captured
        graphed = _switches.WINDOW_GRAPH and not hasattr(X, "indptr")
        self.graph = CapturedGraph(lambda: self._window(WINDOW), xp) if graphed else None

    def iterations(self, t1):
        """Iterations ``t0 + 1 .. t1``; the last one's average added, C in place."""
        b, t = self.b, self.t0
        if t == 0:  # the first iteration of a fit: no warm state yet
            self._cold(1)
            t = 1
        while t < t1:
            n = min(WINDOW, t1 - t)
            b.at[...] = self.xp.asarray([t, t - self.t0 - 1], dtype=self.xp.int64)
            if n == WINDOW and self.graph is not None:
                self.graph.run()
            else:
                self._window(n)
            with sync_free(False):  # the window's one read: 8 bytes
                missed = int(b.halt[0])
            t += n
            if missed:  # the iterations after it did nothing
                b.halt[...] = 0
                self._cold(missed)
                t = missed
        with launch_context(self.xp) as stream:  # the last iteration's average
            run_kernel(_average, -(-self.C.shape[0] // THREADS), THREADS, stream, self.C_bar, self.C, b.s_avg,
                       b.s_cast, self.renormalise_below)
        b.pend[...] = 0

    def _window(self, n):
        """Iterations ``at[0] + 1 .. at[0] + n``: each the follow with the pending average, the
        band pass, the level with the draw and the response update, from C and back into it."""
        b, c = self.b, self.C
        with launch_context(self.xp) as stream:
            for j in range(1, n + 1):
                run_kernel(_follow_grid, b.blocks, THREADS, stream, c, b.prev, self.Y, b.warm, b.follow_part, b.cnt,
                           self.C_bar, b.s_avg, b.s_cast, b.pend, self.renormalise_below, b.halt)
                run_kernel(_pass_grid, b.blocks, THREADS, stream, c, self.Y, b.warm, b.follow_part, b.blocks,
                           b.band_p, b.band_n, b.cnt, b.part, b.halt)
                c = self._finish(stream, j, False, c)
        self.C[...] = c

    def _cold(self, t):
        """Iteration t with the cold kernel's level (the step-by-step loop's), the bands
        refitted around it; its follow and average were made before."""
        b, xp = self.b, self.xp
        b.cold_levels += 1
        with sync_free(False):  # the scale, for the volume: this iteration waits on the host anyway
            volume = self.volume / float(self.scalars[0])
        level, bias = ops.water_level_biased(self.C, xp.astype(self.Y, xp.float64), volume, check_finite=False)
        self.scalars[2], self.scalars[3] = xp.astype(level, xp.float64), xp.astype(bias, xp.float64)
        b.at[...] = xp.asarray([t - 1, t - self.t0 - 2], dtype=xp.int64)
        with launch_context(xp) as stream:
            self.C[...] = self._finish(stream, 1, True, self.C)

    def _finish(self, stream, j, given, c):
        """The level (warm, or ``given``), the draw and the response update of the window's
        j-th iteration: the new responses."""
        b = self.b
        run_kernel(_level_draw, 1, THREADS, stream, c, self.Y, self.quad_self, b.n_pos, self.volume, b.warm,
                   b.band_p, b.band_n, b.cnt, b.part, b.blocks, b.follow_part, b.uniforms, b.at, j, self.scalars,
                   self.idx_log, self.s_log, b.cast, b.row, b.s_avg, b.pend, self.eta0, self.renormalise_below,
                   b.halt, given)
        return self.respond(self.X, b.row, b.w, self.Y, c, **self.update)
