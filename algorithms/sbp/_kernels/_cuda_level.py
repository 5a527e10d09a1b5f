"""The step-by-step binary iteration's two-basin level on cuda, warm-started on the device.

The cold level (``water_level_biased``: two CUB sorts and a block's scan, about ten
calls) was the largest host cost of SBP's step-by-step cuda iteration (1.2 of 3.7 s
profiled for 4,000 a9a iterations on an H100, docs/benchmarks.md "GPU"). Here one
launch of one block finds the level from the previous one's bands
(:func:`kbackends.kernel_tools.biased_level_warm_block`, as the one-launch run does),
the host reads whether it was found (one 8-byte transfer an iteration, a documented
hole in the loop's sync-free region), and only where it was not runs the cold kernel
and refits the bands around its level. Before the bands are read they follow the
heights (:func:`kbackends.kernel_tools.warm_follow`: each basin's surface moves by the
mean move of the heights that were inside its band, from a copy of the previous call's
heights), as the cpu engine's update and the one-launch run do: an iteration shifts a
whole basin by one kernel row, many ranks, and bands left where they were missed on
every a9a iteration (4,000 cold levels in 4,000, on an H100 9 ms an iteration). The level is the one the bands prove, as
the cpu engine's warm level: float64, returned in the responses' dtype as the cold
kernel returns it.

Taken where :data:`algorithms.sbp._kernels.WARM_LEVEL` is True and the fit has one
output (``sbp_biased_level``); off, as on an H100 the one block (a pass to follow, a band
pass, the bitonic sorts, on one SM) takes ~0.3 ms an a9a iteration, twice the cold
kernel's whole level (docs/benchmarks.md, "GPU").
"""

from numba import config, cuda, float64, int64

import algorithms.sbp._kernels as _switches
from kbackends import sync_free
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

from ._numba import band_move

THREADS = 32 if config.ENABLE_CUDASIM else 256
_SUMS = 4 * THREADS

_SIG = ("void({f}[::1], {f}[::1], {f}[::1], int64, float64[::1], float64[::1], float64[::1], float64[::1], "
        "float64[::1], boolean, boolean)")
PTX_SIGNATURES = {"_level": [_SIG.format(f="float32"), _SIG.format(f="float64")]}
PTX_FLOAT64_BY_DESIGN = {
    "_level": "the level, its bands and sums and the warm state are float64 in every dtype (as the cpu engine's "
    "warm level)",
}


@cuda.jit(device=True)
def _follow(C, prev, Y, warm, red, tid):
    """The bands moved with the heights since ``prev`` (the previous call's), which then
    takes the new heights."""
    t_pos, d_pos, t_neg, d_neg = warm_bands(warm)
    n_p = 0.0
    s_p = 0.0
    n_n = 0.0
    s_n = 0.0
    for i in range(tid, C.shape[0], THREADS):
        c = C[i]
        m_p, m_n, move = band_move(prev[i], c, Y[i] > 0, t_pos, d_pos, t_neg, d_neg)
        prev[i] = c
        n_p += m_p
        s_p += m_p * move
        n_n += m_n
        s_n += m_n * move
    red[tid] = n_p
    red[THREADS + tid] = s_p
    red[2 * THREADS + tid] = n_n
    red[3 * THREADS + tid] = s_n
    tree_sum(red, tid, THREADS, 4)
    if tid == 0:
        warm_follow(warm, red[0], red[THREADS], red[2 * THREADS], red[3 * THREADS])
    cuda.syncthreads()  # the moved surfaces read by every thread, red free again


@cuda.jit
def _level(C, prev, Y, n_pos, volume, warm, band_p, band_n, out, follow, refit):
    """``out = (gamma, b, found)``: the level from the warm bands (first moved with the
    heights since ``prev`` where ``follow``), or ``found`` 0; with ``refit``, the bands
    refitted around the cold level ``(out[0], out[1])`` instead (``prev`` takes the
    heights)."""
    red = cuda.shared.array(_SUMS, float64)
    cnt = cuda.shared.array(2, int64)
    share = cuda.shared.array(4, float64)
    sort_p = cuda.shared.array(SHARED_BAND, float64)
    sort_n = cuda.shared.array(SHARED_BAND, float64)
    tid = cuda.threadIdx.x
    if refit:
        for i in range(tid, C.shape[0], THREADS):
            prev[i] = C[i]
        refit_warm_block(C, Y, n_pos, warm, out[0], out[1], band_p, band_n, sort_p, sort_n, red, cnt, share, tid,
                         THREADS)
        return
    if follow:
        _follow(C, prev, Y, warm, red, tid)
    gamma, b, ok = biased_level_warm_block(C, Y, n_pos, volume[0], warm, band_p, band_n, sort_p, sort_n, red, cnt,
                                           share, tid, THREADS)
    if tid == 0:
        out[0] = gamma
        out[1] = b
        out[2] = 1.0 if ok else 0.0


class WarmBiasedLevel:
    """``water_level_biased``'s call ``(c, y, volume, *, xp) -> (gamma, b)`` for one
    output's responses across iterations, warm-started on the device; ``cold`` is the
    cold kernel it falls back on."""

    def __init__(self, cold, n, xp):
        self.cold, self.xp = cold, xp
        self.warm = xp.zeros((WARM_STATE,), dtype=xp.float64)
        self.band_p, self.band_n = xp.empty((n,), dtype=xp.float64), xp.empty((n,), dtype=xp.float64)
        self.out = xp.empty((3,), dtype=xp.float64)
        self.prev = None  # the heights of the previous call, once there was one
        self.n_pos = None
        self.cold_calls = 0

    def __call__(self, c, y, volume, *, xp):
        if self.n_pos is None:
            with sync_free(False):  # once a fit
                self.n_pos = int(xp.sum(y > 0))
        v = xp.reshape(xp.astype(xp.asarray(volume), xp.float64), (1,))
        follow = self.prev is not None
        if not follow:
            self.prev = xp.empty_like(c)
        args = (c, self.prev, y, self.n_pos, v, self.warm, self.band_p, self.band_n, self.out, follow)
        with launch_context(xp) as stream:
            run_kernel(_level, 1, THREADS, stream, *args, False)
            with sync_free(False):  # whether the bands held the level: 8 bytes an iteration
                found = float(self.out[2]) != 0.0
            if found:
                return xp.astype(self.out[0], c.dtype), xp.astype(self.out[1], c.dtype)
            self.cold_calls += 1
            level, bias = self.cold(c, y, volume, xp=xp)
            self.out[0], self.out[1] = xp.astype(level, xp.float64), xp.astype(bias, xp.float64)
            run_kernel(_level, 1, THREADS, stream, *args, True)
        return level, bias


def sbp_biased_level(cold, n, n_out, xp):
    """The step-by-step loop's biased level: :class:`WarmBiasedLevel` where
    :data:`algorithms.sbp._kernels.WARM_LEVEL` and one output, else ``cold``."""
    return WarmBiasedLevel(cold, n, xp) if _switches.WARM_LEVEL and n_out == 1 else cold
