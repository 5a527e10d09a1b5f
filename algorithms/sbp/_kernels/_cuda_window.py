"""SBP's binary default on cuda a window of iterations at a time, no host round trip inside a window.

The cuda engine's ``sbp_window_run``, with ``sbp_run``'s signature and results (the
iterations ``t0 + 1 .. t1`` of the binary default, the state in place). The step-by-step
iteration (:func:`algorithms.sbp._loop._fused_iterate`) sorts the heights twice for its
cold level (CUB) and makes about ten launches and CuPy calls an iteration, each host
time; the one-block run (``_cuda_run``) has no host time but one block for the response
update. Here an iteration is three launches and no host read:

1. ``_cuda_level._pass_grid`` (a grid): the band pass, around the surfaces moved by the
   last update's follow sums;
2. :func:`_level_draw` (one block): the level from the bands
   (:func:`kbackends.kernel_tools.biased_level_after_pass`), the draw from under the water
   and the step's float64 bookkeeping (``_cuda_run.draw_block``, the one-block run's); a
   CSR row drawn is scattered into a dense buffer;
3. :func:`_update_follow` (a grid, a thread a row): the response update with the one-block
   run's kernel values (``_cuda_run.kernel_value``), the average ``C_bar += s C``, the
   renormalisation, and each block's follow sums of the heights that moved inside their
   band.

Where the bands miss (the first iteration, after a renormalisation, a basin that jumps),
:func:`_level_draw` writes the iteration into ``halt``, and every later launch of the
window sees it and does nothing. The host reads ``halt`` once a window (8 bytes), finds
that iteration's level by the cold kernel, has the bands refitted around it and the
iteration finished (:func:`_level_draw` with the level given), and goes on from the next:
the same iterations in the same order as the one-block run, whose models these equal to
rounding (tests/algorithms/test_sbp_cuda_window.py under the simulator). A window of
:data:`WINDOW` iterations: a miss costs the host time of the rest of its window, so the
windows after a miss start at one iteration and double (a9a's misses come in runs).

Nothing a window launches depends on the host but the iteration's place in it: the
window's first iteration and its uniforms' offset are read on the device (``at``, set
before each window) and the call's uniforms sit in a buffer of the fit's. So each whole
window can be one replay of a CUDA graph (``algorithms.sbp._kernels.WINDOW_GRAPH``,
:class:`kbackends.CapturedGraph`); under the simulator the same schedule runs as it is.
"""

from numba import config, cuda, float64, int64

import algorithms.sbp._kernels as _switches

from kbackends import CapturedGraph, ops, sync_free, to_numpy
from kbackends.kernel_tools import (
    SHARED_BAND,
    WARM_STATE,
    biased_level_after_pass,
    block_sums,
    launch_context,
    parts_sum,
    refit_warm_block,
    run_kernel,
    warm_bands,
    warm_follow,
)

from ._cuda_level import MAX_BLOCKS, THREADS, _pass_grid
from ._cuda_run import draw_block, kernel_value
from ._numba import follow_sums

WINDOW = 16  # iterations between the host's reads of ``halt``
_SUMS = 4 * THREADS
# The level's block stays launchable however many registers its inlined level and draw take (as the
# one-block run's); the simulator's jit takes no bounds.
_BOUNDS = {} if config.ENABLE_CUDASIM else {"launch_bounds": (THREADS,)}

_CSR = "{f}[::1], int32[::1], int32[::1]"  # X's CSR arrays (placeholders for dense rows)
_SIGS = {
    "_level_draw": _CSR + ", boolean, {f}[::1], int64[::1], {f}[::1], {f}[::1], float64[::1], int64, float64, "
                   "float64[::1], float64[::1], float64[::1], int64[::1], float64[::1], int64, float64[::1], "
                   "float64[::1], int64[::1], int64, float64[::1], int64[::1], float64[::1], {f}[::1], int64[::1], "
                   "float64[::1], float64, float64, int64[::1], boolean",
    "_update_follow": _CSR + ", {f}[:, ::1], boolean, {f}[::1], {f}[::1], int64[::1], {f}[::1], {f}[::1], "
                      "float64[::1], float64[::1], float64[::1], int64[::1], {f}[::1], float64[::1], int64, float64, "
                      "float64, int64[::1]",
}
PTX_SIGNATURES = {name: [f"void({sig.format(f=f)})" for f in ("float32", "float64")] for name, sig in _SIGS.items()}
PTX_FLOAT64_BY_DESIGN = {
    "_level_draw": "the level, its bands and the step's scalars (s, ||w||^2, the rank) are float64 in every dtype "
    "(as the one-block run's); the draw compares the heights in their own dtype",
    "_update_follow": "the kernel values, the averaged responses and the follow's sums are float64 in every dtype, "
    "as the one-block run's update",
}


@cuda.jit(**_BOUNDS)
def _level_draw(data, indices, indptr, sparse, S, srow, C, Y, quad_self, n_pos, volume, warm, band_p, band_n, cnt, part,
                n_parts, follow_part, uniforms, at, j, scalars, idx_log, s_log, cast, row_out, s_avg, eta0,
                renormalise_below, halt, given):
    """Iteration ``t = at[0] + j`` (its uniform ``uniforms[at[1] + j]``): the level, the
    draw and the bookkeeping on one block. The level comes from the grid's bands (the
    state's surfaces moved by the follow's sums first; zeroed instead right after a
    renormalisation), or with ``given`` it is the host's cold level ``scalars[2:4]``, the
    bands refitted around it. A miss writes t into ``halt``. A CSR row drawn replaces the
    last one (``srow``) in the dense buffer ``S``."""
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
            return
    row, scale = draw_block(C, Y, quad_self, gamma_t, b_t, uniforms[at[1] + j], scalars, idx_log, s_log, t, eta0,
                            cast, scan_lt, scan_le, found, share, tid, THREADS)
    if sparse:
        last = srow[0]
        if last >= 0:
            for p in range(indptr[last] + tid, indptr[last + 1], THREADS):
                S[indices[p]] = 0.0
        cuda.syncthreads()
        for p in range(indptr[row] + tid, indptr[row + 1], THREADS):
            S[indices[p]] = data[p]
    if tid == 0:
        row_out[0] = row
        srow[0] = row
        s_avg[0] = scale
        scalars[0] = 1.0 if scale < renormalise_below else scale


@cuda.jit
def _update_follow(data, indices, indptr, Xd, sparse, sq_norms, S, row_a, Y, C, C_bar, warm, follow_part, cnt, cast,
                   s_avg, kernel_code, gamma, renormalise_below, halt):
    """The drawn row's response update ``C += y w k(X, x_row)`` (a thread a row, the
    one-block run's kernel values), ``C_bar += s C``, ``C *= s`` where the scale is
    renormalised, and each block's count and sum of the moves of the heights inside their
    basin's band into ``follow_part``; ``cnt`` zeroed for the next band pass. Nothing
    where ``halt`` is set."""
    red = cuda.shared.array(_SUMS, float64)
    if halt[0] != 0:
        return
    tid = cuda.threadIdx.x
    if cuda.blockIdx.x == 0 and tid < 2:
        cnt[tid] = 0
    t_pos, d_pos, t_neg, d_neg = warm_bands(warm)
    row = row_a[0]
    w = cast[2]
    scale = s_avg[0]
    n_p = 0.0
    s_p = 0.0
    n_n = 0.0
    s_n = 0.0
    for i in range(cuda.blockIdx.x * THREADS + tid, C.shape[0], cuda.gridDim.x * THREADS):
        c_old = C[i]
        C[i] = c_old + Y[i] * (w * kernel_value(data, indices, indptr, Xd, sparse, sq_norms, S, row, i, kernel_code,
                                                gamma))
        C_bar[i] += scale * float64(C[i])
        n_p, s_p, n_n, s_n = follow_sums(n_p, s_p, n_n, s_n, c_old, C[i], Y[i] > 0, t_pos, d_pos, t_neg, d_neg)
        if scale < renormalise_below:
            C[i] = C[i] * cast[3]
    block_sums(follow_part, red, tid, THREADS, n_p, s_p, n_n, s_n)


class _Buffers:
    """The device state a fit's calls share: the warm level's bands and sums, the drawn
    row (and a CSR row's dense copy), the step's scale and coefficient, ``halt`` and the
    window's place (``at``); made on the first call."""

    def __init__(self, X, C, Y, xp):
        f64, n, dt = xp.float64, C.shape[0], C.dtype
        with sync_free(False):  # once a fit
            self.n_pos = int(xp.sum(Y > 0))
        self.Y64 = xp.astype(Y, f64)  # the labels as the cold level's op takes them
        self.blocks = max(1, min(MAX_BLOCKS, -(-n // THREADS)))
        self.band_p, self.band_n = xp.empty((n,), dtype=f64), xp.empty((n,), dtype=f64)
        self.part, self.follow_part = xp.zeros((4 * self.blocks,), dtype=f64), xp.zeros((4 * self.blocks,), dtype=f64)
        self.cnt, self.at = xp.zeros((2,), dtype=xp.int64), xp.zeros((2,), dtype=xp.int64)
        self.halt, self.row, self.srow = (xp.full((1,), v, dtype=xp.int64) for v in (0, 0, -1))
        self.warm = xp.zeros((WARM_STATE,), dtype=f64)
        self.s_avg = xp.ones((1,), dtype=f64)  # the last iteration's scale
        self.cast = xp.zeros((4,), dtype=dt)  # level, bias, coefficient, scale in C's dtype
        self.uniforms = xp.zeros((0,), dtype=f64)  # the call's uniforms, where a graph finds them
        self.sparse = hasattr(X, "indptr")
        if self.sparse:  # the CSR arrays, and the drawn row's dense copy
            self.rows = (X.data, X.indices, X.indptr, xp.zeros((1, 1), dtype=dt), True)
            self.S = xp.zeros((X.shape[1],), dtype=dt)
        else:
            self.rows = (xp.zeros((1,), dtype=dt), xp.zeros((1,), dtype=xp.int32), xp.zeros((2,), dtype=xp.int32), X,
                         False)
            self.S = xp.zeros((1,), dtype=dt)
        self.window = 1  # iterations of the next window
        self.cold_levels = 0


def sbp_window_run(X, Y, C, C_bar, quad_self, uniforms, scalars, idx_log, s_log, warm, *, xp, t0, eta0, volume,
                   kernel_code, gamma, renormalise_below, sq_norms=None, scratch=None):
    """``_numba.sbp_run``'s signature and results on CuPy arrays (``X`` a CuPy array or
    cupyx CSR matrix; ``sq_norms`` the rows' squared norms for CSR rows); ``scalars`` and
    ``warm`` are the host's float64 arrays, updated in place; ``scratch`` (a dict kept for
    the fit's calls) holds the device state between calls (:class:`_Buffers`, key
    ``"window"``)."""
    scratch = {} if scratch is None else scratch
    if "window" not in scratch:
        scratch["window"] = _Buffers(X, C, Y, xp)
    b = scratch["window"]
    m = uniforms.shape[0]
    if b.uniforms.shape[0] < m:
        b.uniforms = xp.empty((m,), dtype=xp.float64)
    b.uniforms[:m] = uniforms
    with sync_free(False):  # the host's state in, once a call
        scalars_d = xp.asarray(scalars)
        b.warm[...] = xp.asarray(warm)
    if b.sparse and sq_norms is None:
        msg = "sbp_window_run: CSR rows need their squared norms (sq_norms)"
        raise ValueError(msg)
    if not b.sparse:
        sq_norms = xp.zeros((1,), dtype=C.dtype)  # read for CSR rows only
    run = _Run(Y, C, C_bar, quad_self, scalars_d, idx_log, s_log, b, xp, t0, float(eta0), float(volume),
               int(kernel_code), float(gamma), float(renormalise_below), sq_norms)
    run.iterations(t0 + m)
    with sync_free(False):  # the host's state out, once a call
        scalars[:] = to_numpy(scalars_d)
        warm[:] = to_numpy(b.warm)
    return C, C_bar


class _Run:
    """One call's iterations: windows of launches (each whole window one replay of a CUDA
    graph where ``algorithms.sbp._kernels.WINDOW_GRAPH``), a host read of ``halt`` after each."""

    def __init__(self, Y, C, C_bar, quad_self, scalars, idx_log, s_log, b, xp, t0, eta0, volume, kernel_code, gamma,
                 renormalise_below, sq_norms):
        self.Y, self.C, self.C_bar, self.quad_self = Y, C, C_bar, quad_self
        self.scalars, self.idx_log, self.s_log, self.b, self.xp = scalars, idx_log, s_log, b, xp
        self.t0, self.eta0, self.volume, self.kernel_code, self.gamma = t0, eta0, volume, kernel_code, gamma
        self.renormalise_below, self.sq_norms = renormalise_below, sq_norms
        self.graph = CapturedGraph(lambda: self._window(WINDOW), xp) if _switches.WINDOW_GRAPH else None

    def iterations(self, t1):
        """Iterations ``t0 + 1 .. t1``, C and C_bar in place."""
        b, t = self.b, self.t0
        if t == 0:  # the first iteration of a fit: no warm state yet
            self._cold(1)
            t = 1
        while t < t1:
            n = min(b.window, t1 - t)
            b.at[...] = self.xp.asarray([t, t - self.t0 - 1], dtype=self.xp.int64)
            if n == WINDOW and self.graph is not None:
                self.graph.run()
            else:
                self._window(n)
            with sync_free(False):  # the window's one read: 8 bytes
                missed = int(b.halt[0])
            t += n
            # misses come in runs (a fit's first hundred iterations on a9a: 40 of its 63): after one
            # the windows start at one iteration again and double up to WINDOW
            b.window = 1 if missed else min(WINDOW, 2 * b.window)
            if missed:  # the iterations after it did nothing
                b.halt[...] = 0
                self._cold(missed)
                t = missed

    def _window(self, n):
        """Iterations ``at[0] + 1 .. at[0] + n``: each the band pass, the level with the draw,
        the update with the average and the follow."""
        b = self.b
        with launch_context(self.xp) as stream:
            for j in range(1, n + 1):
                run_kernel(_pass_grid, b.blocks, THREADS, stream, self.C, self.Y, b.warm, b.follow_part, b.blocks,
                           b.band_p, b.band_n, b.cnt, b.part, b.halt)
                self._finish(stream, j, False)

    def _cold(self, t):
        """Iteration t with the cold kernel's level (the step-by-step loop's), the bands
        refitted around it (its band pass, made before, missed)."""
        b, xp = self.b, self.xp
        b.cold_levels += 1
        with sync_free(False):  # the scale, for the volume: this iteration waits on the host anyway
            volume = self.volume / float(self.scalars[0])
        level, bias = ops.water_level_biased(self.C, b.Y64, volume, check_finite=False)
        self.scalars[2], self.scalars[3] = xp.astype(level, xp.float64), xp.astype(bias, xp.float64)
        b.at[...] = xp.asarray([t - 1, t - self.t0 - 2], dtype=xp.int64)
        with launch_context(xp) as stream:
            self._finish(stream, 1, True)

    def _finish(self, stream, j, given):
        """The level (warm, or ``given``) with the draw, then the update, of the window's
        j-th iteration."""
        b = self.b
        data, indices, indptr, Xd, sparse = b.rows
        run_kernel(_level_draw, 1, THREADS, stream, data, indices, indptr, sparse, b.S, b.srow, self.C, self.Y,
                   self.quad_self, b.n_pos, self.volume, b.warm, b.band_p, b.band_n, b.cnt, b.part, b.blocks,
                   b.follow_part, b.uniforms, b.at, j, self.scalars, self.idx_log, self.s_log, b.cast, b.row, b.s_avg,
                   self.eta0, self.renormalise_below, b.halt, given)
        run_kernel(_update_follow, b.blocks, THREADS, stream, data, indices, indptr, Xd, sparse, self.sq_norms, b.S,
                   b.row, self.Y, self.C, self.C_bar, b.warm, b.follow_part, b.cnt, b.cast, b.s_avg, self.kernel_code,
                   self.gamma, self.renormalise_below, b.halt)
