"""Numba-CUDA run of the binary SBP iteration: many iterations in one launch of one block.

The cuda engine's ``sbp_run``, the counterpart of :mod:`._numba`'s: iterations
``t0 + 1 .. t1`` of the binary default (one draw, the bias, no weights) with the
state in place, so an iteration costs its arithmetic instead of the host time of
its launches (the step-by-step iteration, :func:`algorithms.sbp._loop._fused_iterate`,
launches about ten kernels and CuPy calls an iteration: 0.58 ms an iteration of
a9a on an H100, bound by the host). One block of :data:`THREADS` threads runs, per
iteration, with barriers between the steps:

1. the level, warm-started from the previous iteration's
   (:func:`kbackends.kernel_tools.biased_level_warm_block`); where it would need the
   cold selection (the first iteration, after a renormalisation, a band that misses)
   the launch ends there, the host finds the level by the ``water_level_biased``
   kernel and launches again from that iteration with it
   (:func:`kbackends.kernel_tools.refit_warm_block` refits the bands around it);
2. the draw: counts under the water in contiguous runs of rows, a block scan, the
   run holding the rank walked (``_cuda.block_draw``, as ``sbp_draw_step``); the step's float64
   bookkeeping on thread 0 (``_numba.step_bookkeeping``, the cpu run's);
3. the response update (the drawn row's kernel values, ``C += y w k``, ``C_bar +=
   s C``) and the warm level's bands moved with the heights (the in-band moves summed
   over the block);
4. the renormalisation of the scale.

The sums over rows (below the bands, the bands' moves) are added in the block's
tree order and the kernel values use CUDA's ``exp``: the models equal the cpu
engine's to rounding, the draws the same while no height sits within rounding of
the level (tests/algorithms/test_sbp_cuda_run.py under the simulator).
"""

import math

from numba import config, cuda, float64, int64

from kbackends import ops, sync_free, to_numpy
from kbackends.kernel_tools import (
    SHARED_BAND,
    WARM_STATE,
    biased_level_warm_block,
    launch_context,
    refit_warm_block,
    run_kernel,
    tree_sum,
    warm_bands,
    warm_follow,
)

from ._cuda import block_draw
from ._numba import follow_sums, step_bookkeeping

# The block: 256 threads. The kernel takes 218 registers a thread for sm_90 (ptxas): 512 threads
# would need 111,616 of an SM's 65,536 and not launch; the launch bounds keep it launchable as it grows.
THREADS = 32 if config.ENABLE_CUDASIM else 256
_BOUNDS = {} if config.ENABLE_CUDASIM else {"launch_bounds": (THREADS,)}  # the simulator's jit takes none
_SUMS = 4 * THREADS  # a shared array's size must be a constant, not an expression
_STOP, _GIVEN = 0, 1  # ctl: the iteration that needs a cold level (0: none), a cold level given for the first


_SIG = ("void({f}[::1], int32[::1], int32[::1], {f}[:, ::1], boolean, {f}[::1], {f}[::1], {f}[::1], float64[::1],"
        " float64[::1], float64[::1], float64[::1], int64[::1], float64[::1], float64[::1], float64[::1], float64[::1],"
        " {f}[::1], {f}[::1], int64[::1], int64, int64, int64, float64, float64, int64, int64, float64, float64)")
PTX_SIGNATURES = {"_run": [_SIG.format(f="float32"), _SIG.format(f="float64")]}
PTX_FLOAT64_BY_DESIGN = {
    "_run": "the level, the step's scalars (s, ||w||^2, the rank) and the averaged responses are float64 in every "
    "dtype (algorithms/sbp/, as _numba.sbp_run); the kernel values are float64 as the cpu engine's",
}


@cuda.jit(device=True)
def kernel_value(data, indices, indptr, Xd, sparse, sq_norms, S, row, i, kernel_code, gamma):
    """``k(x_i, x_row)`` (float64); sparse rows against the drawn row scattered in ``S``."""
    acc = 0.0
    if sparse:
        for p in range(indptr[i], indptr[i + 1]):
            acc += data[p] * S[indices[p]]
        if kernel_code == 0:
            return math.exp(-gamma * max(sq_norms[i] + sq_norms[row] - 2.0 * acc, 0.0))
        return acc
    if kernel_code == 0:
        for k in range(Xd.shape[1]):
            diff = Xd[i, k] - Xd[row, k]
            acc += diff * diff
        return math.exp(-gamma * acc)
    for k in range(Xd.shape[1]):
        acc += Xd[i, k] * Xd[row, k]
    return acc


@cuda.jit(device=True)
def _update(data, indices, indptr, Xd, sparse, sq_norms, S, Y, C, C_bar, warm, red, row, w, s_avg, kernel_code, gamma,
            tid):
    """The response update ``C += y w k(X, x_row)``, ``C_bar += s_avg C`` and the warm
    level's bands moved with the heights (the in-band moves summed over the block);
    the drawn row's entries of ``S`` zeroed after (scattered there before)."""
    t_pos, d_pos, t_neg, d_neg = warm_bands(warm)
    n_p = 0.0
    s_p = 0.0
    n_n = 0.0
    s_n = 0.0
    for i in range(tid, C.shape[0], THREADS):
        acc = w * kernel_value(data, indices, indptr, Xd, sparse, sq_norms, S, row, i, kernel_code, gamma)
        c_old = C[i]
        C[i] = c_old + Y[i] * acc
        C_bar[i] += s_avg * float64(C[i])
        n_p, s_p, n_n, s_n = follow_sums(n_p, s_p, n_n, s_n, c_old, C[i], Y[i] > 0, t_pos, d_pos, t_neg, d_neg)
    red[tid] = n_p
    red[THREADS + tid] = s_p
    red[2 * THREADS + tid] = n_n
    red[3 * THREADS + tid] = s_n
    tree_sum(red, tid, THREADS, 4)  # its first barrier: every row updated, S no longer read
    if tid == 0:
        warm_follow(warm, red[0], red[THREADS], red[2 * THREADS], red[3 * THREADS])
    if sparse:
        for p in range(indptr[row] + tid, indptr[row + 1], THREADS):
            S[indices[p]] = 0.0


@cuda.jit(device=True)
def draw_block(C, Y, quad_self, gamma_t, b_t, uniform, scalars, idx_log, s_log, t, eta0, cast, scan_lt, scan_le, found,
               share, tid, width):
    """Iteration t's draw from under the level ``(gamma_t, b_t)`` (float64, rounded to the
    responses' dtype into ``cast[0:2]`` as NumPy's cast) and thread 0's float64 bookkeeping
    (:func:`._numba.step_bookkeeping`): ``cast[2]`` the update's coefficient, ``cast[3]`` the
    scale after the projection, in the responses' dtype; ``(row, scale)`` to every thread."""
    if tid == 0:
        cast[0] = gamma_t
        cast[1] = b_t
    cuda.syncthreads()
    row, count = block_draw(C, Y, cast[0], cast[1], uniform, scan_lt, scan_le, found, tid, width)
    step = eta0 / math.sqrt(float64(t))
    if tid == 0:
        w, s_avg = step_bookkeeping(scalars, idx_log, s_log, t, row, count, gamma_t, b_t, step, float64(C[row]),
                                    float64(Y[row]), quad_self[row])
        cast[2] = w
        cast[3] = s_avg
        share[0] = s_avg
    cuda.syncthreads()
    return row, share[0]


@cuda.jit(**_BOUNDS)
def _run(data, indices, indptr, Xd, sparse, sq_norms, Y, C, C_bar, quad_self, uniforms, scalars, idx_log, s_log, warm,
         band_p, band_n, S, cast, ctl, first, t0, t1, eta0, volume, n_pos, kernel_code, gamma, renormalise_below):
    red = cuda.shared.array(_SUMS, float64)
    cnt = cuda.shared.array(2, int64)
    share = cuda.shared.array(4, float64)
    scan_lt = cuda.shared.array(THREADS, int64)
    scan_le = cuda.shared.array(THREADS, int64)
    found = cuda.shared.array(1, int64)
    sort_p = cuda.shared.array(SHARED_BAND, float64)  # the bands, sorted by the block
    sort_n = cuda.shared.array(SHARED_BAND, float64)
    tid = cuda.threadIdx.x
    n = C.shape[0]
    for t in range(t0 + 1, t1 + 1):
        # 1. the level (float64), warm or the host's cold one
        s = scalars[0]
        if ctl[_GIVEN] != 0:
            gamma_t = scalars[2]
            b_t = scalars[3]
            refit_warm_block(C, Y, n_pos, warm, gamma_t, b_t, band_p, band_n, sort_p, sort_n, red, cnt, share, tid,
                             THREADS)
            if tid == 0:
                ctl[_GIVEN] = 0
        else:
            gamma_t, b_t, ok = biased_level_warm_block(C, Y, n_pos, volume / s, warm, band_p, band_n, sort_p, sort_n,
                                                       red, cnt, share, tid, THREADS)
            if not ok:
                if tid == 0:
                    ctl[_STOP] = t
                return
        # 2. the draw and the step's bookkeeping (float64)
        row, s_avg = draw_block(C, Y, quad_self, gamma_t, b_t, uniforms[t - first - 1], scalars, idx_log, s_log, t,
                                eta0, cast, scan_lt, scan_le, found, share, tid, THREADS)
        if sparse:  # the drawn row scattered into S
            for p in range(indptr[row] + tid, indptr[row + 1], THREADS):
                S[indices[p]] = data[p]
        cuda.syncthreads()
        _update(data, indices, indptr, Xd, sparse, sq_norms, S, Y, C, C_bar, warm, red, row, cast[2], s_avg,
                kernel_code, gamma, tid)  # 3.
        # 4. the renormalisation: C *= s in C's dtype, s = 1, the next level cold
        if s_avg < renormalise_below:
            s_cast = cast[3]  # s_avg in C's dtype (thread 0's store, before the barrier)
            for i in range(tid, n, THREADS):
                C[i] = C[i] * s_cast
        cuda.syncthreads()
        if tid == 0:
            if s_avg < renormalise_below:
                scalars[0] = 1.0
                for k in range(WARM_STATE):
                    warm[k] = 0.0
            else:
                scalars[0] = s_avg
        cuda.syncthreads()
    if tid == 0:
        ctl[_STOP] = 0


def sbp_run(X, Y, C, C_bar, quad_self, uniforms, scalars, idx_log, s_log, warm, *, xp, t0, eta0, volume, kernel_code,
            gamma, renormalise_below, sq_norms=None, scratch=None):
    """``_numba.sbp_run``'s signature and results on CuPy arrays (``X`` a CuPy array or
    cupyx CSR matrix); ``scalars`` and ``warm`` are the host's float64 arrays, updated in
    place. One launch runs the iterations up to the first that needs a cold level;
    the host reads where it stopped (one transfer a launch), finds that level and
    launches again."""
    n = C.shape[0]
    f64 = xp.float64
    sparse = hasattr(X, "indptr")
    if sparse:
        data, indices, indptr = X.data, X.indices, X.indptr
        Xd = xp.zeros((1, 1), dtype=X.dtype)
        S = xp.zeros((X.shape[1],), dtype=X.dtype)
    else:
        data, indices, indptr = xp.zeros((1,), dtype=X.dtype), xp.zeros((1,), dtype=xp.int32), \
            xp.zeros((2,), dtype=xp.int32)
        Xd, S = X, xp.zeros((1,), dtype=X.dtype)
        sq_norms = xp.zeros((1,), dtype=X.dtype)
    with sync_free(False):  # a transfer a launch: where it stopped, and the state at the end
        n_pos = int(xp.sum(Y > 0))
        scalars_d, warm_d = xp.asarray(scalars), xp.asarray(warm)
        band_p, band_n = xp.empty((n,), dtype=f64), xp.empty((n,), dtype=f64)
        cast = xp.empty((4,), dtype=C.dtype)
        ctl = xp.zeros((2,), dtype=xp.int64)
        t, t1 = t0, t0 + uniforms.shape[0]
        while t < t1:
            with launch_context(xp) as stream:
                run_kernel(_run, 1, THREADS, stream, data, indices, indptr, Xd, bool(sparse), sq_norms, Y, C, C_bar,
                           quad_self, uniforms, scalars_d, idx_log, s_log, warm_d, band_p, band_n, S, cast, ctl, t0, t,
                           t1, float(eta0), float(volume), n_pos, int(kernel_code), float(gamma),
                           float(renormalise_below))
            stop = int(ctl[_STOP])
            if stop == 0:
                break
            level, bias = ops.water_level_biased(C, xp.astype(Y, f64), float(volume) / float(scalars_d[0]),
                                                 check_finite=False)
            scalars_d[2], scalars_d[3] = xp.astype(level, f64), xp.astype(bias, f64)
            ctl[_STOP], ctl[_GIVEN] = 0, 1
            t = stop - 1
        scalars[:] = to_numpy(scalars_d)
        warm[:] = to_numpy(warm_d)
    return C, C_bar

