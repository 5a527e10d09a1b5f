"""Numba-CUDA steps of the binary SBP iteration: each one launch (the reference, ``_xp``,
is about 30 and 6 array calls, each a CuPy launch of 10-20 us of host time).

``sbp_draw_step`` runs in ONE block: each thread counts the heights under the water
(strictly, and at or below: the fallback when none is strictly) in its own
contiguous run of the rows, a block scan of the counts finds the run holding the
drawn rank, and that run's thread walks it to the row. Thread 0 then does the
step's scalar bookkeeping in float64 (as the reference: ``s`` and ``||w||^2`` are
float64 by design), writes the loop's log entries and updates ``s`` and ``r2`` in
place. One block reads the n responses and labels twice (the count, then one run):
a9a's 32,561 rows are ~0.5 MB, a few microseconds at one SM's bandwidth, under
the launch cost it replaces; the walk is at most ``ceil(n / threads)`` reads.
Heights ``C + b y`` with ``y = +-1`` are exact whatever the compiler contracts.

``sbp_average`` is one thread per row, in place: ``C_bar += s C`` (float64) and
``C *= s`` where the scale is renormalised.

Under the simulator (NumPy arrays) the same kernels run with smaller blocks.
"""

import math

from numba import config, cuda, float64, int64

from kbackends.kernel_tools import THREADS_1D, contiguous, grid_1d, launch_context, run_kernel

_THREADS = 32 if config.ENABLE_CUDASIM else 256

_SIGS = {
    "_draw_step": "void({f}[::1], {f}[::1], float64[::1], {f}[::1], {f}[::1], float64[::1], float64[::1],"
    " float64[::1], int64[::1], float64[::1], {f}[::1], float64[::1], {f}[::1], int64[::1], float64, float64)",
    "_average": "void(float64[::1], {f}[::1], float64[::1], {f}[::1], float64)",
}
PTX_SIGNATURES = {name: [sig.format(f="float32"), sig.format(f="float64")] for name, sig in _SIGS.items()}
PTX_FLOAT64_BY_DESIGN = {
    "_draw_step": "the step's scalars (the scale s, ||w||^2, the draw's rank) are float64 in every dtype "
    "(algorithms/sbp/), computed by one thread once an iteration; the heights' pass is in the input's dtype",
    "_average": "the averaged responses accumulate in float64 by design (algorithms/sbp/)",
}


@cuda.jit(device=True)
def block_draw(C, Y, g, b, uniform, scan_lt, scan_le, found, tid, width):
    """The (rank + 1)-th row strictly under the water (heights ``C + b y`` below ``g``; at
    or below where none is), rank drawn from ``uniform``, found by the block's ``width``
    threads: ``(row, count)`` to every thread. ``scan_lt``, ``scan_le``: shared int64
    arrays of ``width``; ``found``: a shared int64 array of 1."""
    n = C.shape[0]
    run = (n + width - 1) // width
    lo = min(tid * run, n)
    hi = min(lo + run, n)
    lt = 0
    le = 0
    for i in range(lo, hi):
        h = C[i] + b * Y[i]  # exact: y = +-1
        if h < g:
            lt += 1
        if h <= g:
            le += 1
    scan_lt[tid] = lt
    scan_le[tid] = le
    cuda.syncthreads()
    stride = 1
    while stride < width:  # inclusive scans of both counts, a barrier between reading and writing
        a_lt = scan_lt[tid - stride] if tid >= stride else 0
        a_le = scan_le[tid - stride] if tid >= stride else 0
        cuda.syncthreads()
        scan_lt[tid] += a_lt
        scan_le[tid] += a_le
        cuda.syncthreads()
        stride *= 2
    strict = scan_lt[width - 1] > 0  # else the minima: at or below the level
    total = scan_lt[width - 1] if strict else scan_le[width - 1]
    rank = min(int64(uniform * float64(total)), total - 1)
    end = scan_lt[tid] if strict else scan_le[tid]
    start = end - (lt if strict else le)
    if start <= rank < end:  # this thread's run holds the (rank + 1)-th row under water
        seen = start
        for i in range(lo, hi):
            h = C[i] + b * Y[i]
            if (h < g) if strict else (h <= g):
                if seen == rank:
                    found[0] = i
                    break
                seen += 1
    cuda.syncthreads()
    row = found[0]
    cuda.syncthreads()
    return row, total


@cuda.jit
def _draw_step(C, Y, quad_self, level, offset, uniform, s, r2, idx_out, s_out, w, s_avg, s_cast, count_out, step,
               renormalise_below):
    lt_s = cuda.shared.array(_THREADS, int64)
    le_s = cuda.shared.array(_THREADS, int64)
    found = cuda.shared.array(1, int64)
    tid = cuda.threadIdx.x
    i, total = block_draw(C, Y, level[0], offset[0], uniform[0], lt_s, le_s, found, tid, _THREADS)
    if tid == 0:
        s0 = s[0]
        r = r2[0] + 2.0 * step * (float64(C[i]) * s0) + step * step * quad_self[i]
        w[0] = step / s0 * float64(Y[i])
        s1 = s0
        if r > 1.0:
            s1 = s0 / math.sqrt(r)
            r = 1.0
        idx_out[0] = i
        s_out[0] = s1
        s_avg[0] = s1
        s_cast[0] = s1  # rounded to the responses' dtype, as the reference's astype
        s[0] = 1.0 if s1 < renormalise_below else s1
        r2[0] = r
        count_out[0] = total


@cuda.jit
def _average(C_bar, C, s_avg, s_cast, renormalise_below):
    i = cuda.grid(1)
    if i < C.shape[0]:
        scale = s_avg[0]
        C_bar[i] += scale * float64(C[i])
        if scale < renormalise_below:
            C[i] = C[i] * s_cast[0]


def sbp_draw_step(C, Y, quad_self, level, offset, uniform, s, r2, idx_out, s_out, *, xp, step, renormalise_below):
    """The signature and results of ``_xp.sbp_draw_step``; ``s`` and ``r2`` are updated in
    place and returned as ``s_next`` and ``r2_next``."""
    dt = C.dtype
    level = xp.reshape(xp.astype(level, dt, copy=False), (1,))
    offset = xp.reshape(xp.astype(offset, dt, copy=False), (1,))
    C, Y, quad_self, uniform = contiguous(xp, C, Y, quad_self, uniform)
    w, s_cast = xp.empty((1,), dtype=dt), xp.empty((1,), dtype=dt)
    s_avg = xp.empty((1,), dtype=xp.float64)
    count = xp.empty((1,), dtype=xp.int64)
    with launch_context(xp) as stream:
        run_kernel(_draw_step, 1, _THREADS, stream, C, Y, quad_self, level, offset, uniform, s, r2, idx_out, s_out,
                   w, s_avg, s_cast, count, float(step), float(renormalise_below))
    return idx_out, w, (s_avg, s_cast), s, r2, count


def sbp_average(C_bar, C, scale, *, xp, renormalise_below):
    """The signature and results of ``_xp.sbp_average``, computed in place."""
    s_avg, s_cast = scale
    blocks, threads = grid_1d(C.shape[0], THREADS_1D)
    with launch_context(xp) as stream:
        run_kernel(_average, blocks, threads, stream, C_bar, C, s_avg, s_cast, float(renormalise_below))
    return C_bar, C
