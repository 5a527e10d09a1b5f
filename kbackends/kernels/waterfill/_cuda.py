"""Numba-CUDA water level: one launch for all segments, one thread per segment.

A few segments are the common case (one-vs-rest classes, the two basins of the
biased problem); each thread runs the shared selection on its segment of a
scratch copy. Exact, and checked against the sort oracle under the simulator.
"""

from numba import cuda

from .._cuda_launch import blocks_for, contiguous, launch_stream
from ._core import segment_level

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
