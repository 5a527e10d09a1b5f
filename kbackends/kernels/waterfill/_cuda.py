"""Numba-CUDA water level: one launch for all segments, one thread per segment.

A few segments are the common case (one-vs-rest classes, the two basins of the
biased problem); each thread runs the shared selection on its segment of a
scratch copy. Exact, and checked against the sort oracle under the simulator.

The two-basin level (``water_level_biased``) is one problem: a single thread
runs the shared bisection-of-quickselects on device scratch copies of the two
classes, so no host round trip, but no parallelism inside the problem either
(expected O(n) serial work; fine for the SBP's one call per iteration at
n ~ 1e5, a parallel bisection on k would be the next step for larger n).
"""

from numba import cuda

from .._cuda_launch import blocks_for, contiguous, launch_stream
from ._core import biased_level, segment_level

_THREADS = 64


@cuda.jit
def _levels(scratch, volume, offsets, out):
    s = cuda.grid(1)
    if s < offsets.shape[0] - 1:
        out[s] = segment_level(scratch[offsets[s] : offsets[s + 1]], volume[s], s + 1)


def water_level(c, volume, offsets, *, xp):
    scratch = xp.asarray(c, copy=True)
    scratch, volume, offsets = contiguous(xp, scratch, xp.astype(volume, xp.float64), xp.astype(offsets, xp.int64))
    k = offsets.shape[0] - 1
    out = xp.empty((k,), dtype=c.dtype)
    if k:
        _levels[blocks_for(k, _THREADS), _THREADS, launch_stream(xp)](scratch, volume, offsets, out)
    return out


@cuda.jit
def _biased(P, N, volume, out):
    if cuda.grid(1) == 0:
        gamma, b = biased_level(P, N, volume, 1)
        out[0] = gamma
        out[1] = b


def water_level_biased(c, y, volume, *, xp):
    c64 = xp.astype(c, xp.float64)
    P, N = contiguous(xp, c64[y > 0], c64[y < 0])
    out = xp.empty((2,), dtype=xp.float64)
    _biased[1, 1, launch_stream(xp)](P, N, float(volume), out)
    return out[0], out[1]
