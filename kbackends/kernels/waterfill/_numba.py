"""Numba water level: segments in parallel, each by expected-linear selection;
the two-basin level by a bisection of quickselects (expected linear, no sort)."""

import numpy as np
from numba import njit, prange

from ._core import biased_level, segment_level


@njit(parallel=True, cache=True)
def _levels(c, volume, offsets, out):
    for s in prange(offsets.shape[0] - 1):
        scratch = c[offsets[s] : offsets[s + 1]].copy()
        out[s] = segment_level(scratch, volume[s], s + 1)


def water_level(c, volume, offsets, *, xp):
    out = np.empty(offsets.shape[0] - 1, dtype=c.dtype)
    _levels(c, volume.astype(np.float64), offsets.astype(np.int64), out)
    return out


@njit(cache=True)
def _biased(P, N, volume):
    return biased_level(P, N, volume, 1)


def water_level_biased(c, y, volume, *, xp):
    positive = np.asarray(y) > 0
    P = np.ascontiguousarray(c[positive], dtype=np.float64)
    N = np.ascontiguousarray(c[~positive], dtype=np.float64)
    gamma, b = _biased(P, N, float(volume))
    return gamma, b
