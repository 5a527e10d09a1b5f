"""The step-by-step binary iteration's two-basin level on cuda, warm-started on the device.

The cold level (``water_level_biased``: two CUB sorts and a block's scan, about ten
calls) was the largest host cost of SBP's step-by-step cuda iteration (1.2 of 3.7 s
profiled for 4,000 a9a iterations on an H100, docs/benchmarks.md "GPU"). Here the level
comes from the previous one's bands in three launches: the bands follow the heights
(:func:`kbackends.kernel_tools.warm_follow`: each basin's surface moves by the mean move
of the heights that were inside its band, from a copy of the previous call's heights, as
the cpu engine's update and the one-launch run do; an iteration shifts a whole basin by
one kernel row, many ranks), then the band pass over the grid
(:func:`kbackends.kernel_tools.band_pass_grid`), then one block sorts the bands and
applies the rule (:func:`kbackends.kernel_tools.biased_level_after_pass`). The host
reads whether the level was found (one 8-byte transfer an iteration, a documented hole
in the loop's sync-free region), and only where it was not runs the cold kernel and
refits the bands around its level. The level is the one the bands prove, as the cpu
engine's warm level: float64, returned in the responses' dtype as the cold kernel
returns it.

Measured on an H100 with both passes on one block (docs/benchmarks.md, "GPU"): without
the follow every a9a level fell back to the cold kernel; with it 69 cold levels in
4,000, but one block waits on its loads (~0.3 ms an iteration, twice the cold level's
time), hence the passes over the grid. Taken where
:data:`algorithms.sbp._kernels.WARM_LEVEL` is True and the fit has one output
(``sbp_biased_level``); off until a device measures this form.
"""

from numba import config, cuda, float64, int64

import algorithms.sbp._kernels as _switches
from kbackends import sync_free
from kbackends.kernel_tools import (
    SHARED_BAND,
    WARM_STATE,
    band_pass_grid,
    biased_level_after_pass,
    block_sums,
    followed_surfaces,
    launch_context,
    parts_sum,
    refit_warm_block,
    run_kernel,
    warm_bands,
    warm_follow,
)

from ._numba import follow_sums

THREADS = 32 if config.ENABLE_CUDASIM else 256
_SUMS = 4 * THREADS
MAX_BLOCKS = 8 if config.ENABLE_CUDASIM else 264  # the passes' grid: two blocks an SM of an H100

_F = "{f}[::1]"
_SIGS = {
    "_follow_grid": f"void({_F}, {_F}, {_F}, float64[::1], float64[::1], int64[::1])",
    "_pass_grid": f"void({_F}, {_F}, float64[::1], float64[::1], int64, float64[::1], float64[::1], int64[::1], "
                  "float64[::1], int64[::1])",
    "_level": f"void({_F}, {_F}, int64, float64[::1], float64[::1], float64[::1], float64[::1], float64[::1], "
              "int64[::1], float64[::1], int64, float64[::1], int64, boolean)",
}
PTX_SIGNATURES = {name: [sig.format(f="float32"), sig.format(f="float64")] for name, sig in _SIGS.items()}
_WHY_FLOAT64 = ("the level, its bands and sums and the warm state are float64 in every dtype (as the cpu engine's "
                "warm level)")
PTX_FLOAT64_BY_DESIGN = dict.fromkeys(_SIGS, _WHY_FLOAT64)


@cuda.jit
def _follow_grid(C, prev, Y, warm, follow_part, cnt):
    """Each block's count and sum of the moves of the heights that were inside their
    basin's band since ``prev`` (which then takes the new heights) into ``follow_part``
    (read only where there were previous heights); ``cnt`` zeroed for the band pass."""
    red = cuda.shared.array(_SUMS, float64)
    tid = cuda.threadIdx.x
    if cuda.blockIdx.x == 0 and tid < 2:
        cnt[tid] = 0
    t_pos, d_pos, t_neg, d_neg = warm_bands(warm)
    n_p = 0.0
    s_p = 0.0
    n_n = 0.0
    s_n = 0.0
    for i in range(cuda.blockIdx.x * THREADS + tid, C.shape[0], cuda.gridDim.x * THREADS):
        c = C[i]
        n_p, s_p, n_n, s_n = follow_sums(n_p, s_p, n_n, s_n, prev[i], c, Y[i] > 0, t_pos, d_pos, t_neg, d_neg)
        prev[i] = c
    block_sums(follow_part, red, tid, THREADS, n_p, s_p, n_n, s_n)


@cuda.jit
def _pass_grid(C, Y, warm, follow_part, n_follow, band_p, band_n, cnt, part, halt):
    """The band pass over the grid, around the surfaces moved by the follow's sums (every
    block adds them in the same order; ``_level`` writes them to the state); nothing where
    ``halt[0]`` is set (the window run's)."""
    red = cuda.shared.array(_SUMS, float64)
    if halt[0] != 0:
        return
    n_p, s_p, n_n, s_n = parts_sum(follow_part, n_follow)
    t_pos, t_neg = followed_surfaces(warm, n_p, s_p, n_n, s_n)
    band_pass_grid(C, Y, t_pos, t_neg, warm[2], warm[3], band_p, band_n, cnt, part, red, cuda.threadIdx.x, THREADS)


@cuda.jit
def _level(C, Y, n_pos, volume, warm, band_p, band_n, out, cnt, part, n_parts, follow_part, n_follow, refit):
    """``out = (gamma, b, found)``: the level from the bands of the grid's pass (the state's
    surfaces first moved by the follow's sums), or ``found`` 0; with ``refit``, the bands
    refitted around the cold level ``(out[0], out[1])`` instead."""
    red = cuda.shared.array(_SUMS, float64)
    cnt_block = cuda.shared.array(2, int64)
    share = cuda.shared.array(4, float64)
    sort_p = cuda.shared.array(SHARED_BAND, float64)
    sort_n = cuda.shared.array(SHARED_BAND, float64)
    tid = cuda.threadIdx.x
    if refit:
        refit_warm_block(C, Y, n_pos, warm, out[0], out[1], band_p, band_n, sort_p, sort_n, red, cnt_block, share,
                         tid, THREADS)
        return
    if tid == 0:
        n_p, s_p, n_n, s_n = parts_sum(follow_part, n_follow)
        warm_follow(warm, n_p, s_p, n_n, s_n)
    cuda.syncthreads()
    gamma, b, ok = biased_level_after_pass(C, Y, n_pos, volume[0], warm, band_p, band_n, cnt, part, n_parts, sort_p,
                                           sort_n, red, cnt_block, share, tid, THREADS)
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
        self.cnt = xp.zeros((2,), dtype=xp.int64)
        self.blocks = max(1, min(MAX_BLOCKS, -(-n // THREADS)))
        self.part = xp.zeros((4 * self.blocks,), dtype=xp.float64)
        self.follow_part = xp.zeros((4 * self.blocks,), dtype=xp.float64)
        self.prev = None  # the heights of the previous call (zeros before the first)
        self.halt = xp.zeros((1,), dtype=xp.int64)  # never set here
        self.n_pos = None
        self.cold_calls = 0

    def __call__(self, c, y, volume, *, xp):
        if self.n_pos is None:
            with sync_free(False):  # once a fit
                self.n_pos = int(xp.sum(y > 0))
        v = xp.reshape(xp.astype(xp.asarray(volume), xp.float64), (1,))
        n_follow = self.blocks if self.prev is not None else 0  # the first call has none to follow from
        if self.prev is None:
            self.prev = xp.zeros_like(c)
        level_args = (c, y, self.n_pos, v, self.warm, self.band_p, self.band_n, self.out, self.cnt, self.part,
                      self.blocks, self.follow_part, n_follow)
        with launch_context(xp) as stream:
            run_kernel(_follow_grid, self.blocks, THREADS, stream, c, self.prev, y, self.warm, self.follow_part,
                       self.cnt)
            run_kernel(_pass_grid, self.blocks, THREADS, stream, c, y, self.warm, self.follow_part, n_follow,
                       self.band_p, self.band_n, self.cnt, self.part, self.halt)
            run_kernel(_level, 1, THREADS, stream, *level_args, False)
            with sync_free(False):  # whether the bands held the level: 8 bytes an iteration
                found = float(self.out[2]) != 0.0
            if found:
                return xp.astype(self.out[0], c.dtype), xp.astype(self.out[1], c.dtype)
            self.cold_calls += 1
            level, bias = self.cold(c, y, volume, xp=xp)
            self.out[0], self.out[1] = xp.astype(level, xp.float64), xp.astype(bias, xp.float64)
            run_kernel(_level, 1, THREADS, stream, *level_args, True)
        return level, bias


def sbp_biased_level(cold, n, n_out, xp):
    """The step-by-step loop's biased level: :class:`WarmBiasedLevel` where
    :data:`algorithms.sbp._kernels.WARM_LEVEL` and one output, else ``cold``."""
    return WarmBiasedLevel(cold, n, xp) if _switches.WARM_LEVEL and n_out == 1 else cold
