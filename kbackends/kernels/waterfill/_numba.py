"""Numba water level: segments in parallel, each by expected-linear selection;
the two-basin level by a bisection of quickselects (expected linear, no sort).
With widths (sample weights): the same selection carrying the widths; the
weighted two basins by two sorts and a merge (O(n log n))."""

import numpy as np
from numba import njit, prange

from ._warm import biased_level_cold
from ._core import segment_level_sampled, segment_level_weighted
from ._warm_widths import biased_level_weighted_cold


@njit(parallel=True, cache=True)
def _levels(c, volume, offsets, out):
    for s in prange(offsets.shape[0] - 1):
        seg = c[offsets[s] : offsets[s + 1]]
        out[s] = segment_level_sampled(seg, np.empty(seg.shape[0], dtype=np.float64), volume[s], s + 1)


@njit(cache=True)
def _levels_serial(c, volume, offsets, out):
    for s in range(offsets.shape[0] - 1):
        seg = c[offsets[s] : offsets[s + 1]]
        out[s] = segment_level_sampled(seg, np.empty(seg.shape[0], dtype=np.float64), volume[s], s + 1)


# Threaded across segments only when there are several and enough work: a parallel
# region per call costs more than a small single level (see the response kernel).
_PARALLEL_FROM = 1 << 20


def water_level(c, volume, offsets, *, xp):
    out = np.empty(offsets.shape[0] - 1, dtype=c.dtype)
    levels = _levels if offsets.shape[0] > 2 and c.shape[0] >= _PARALLEL_FROM else _levels_serial
    levels(c, volume.astype(np.float64), offsets.astype(np.int64), out)
    return out


@njit(cache=True)
def _biased(c, y, volume):
    return biased_level_cold(c, y, volume)


def water_level_biased(c, y, volume, *, xp):
    gamma, b = _biased(np.ascontiguousarray(c), np.ascontiguousarray(y), float(volume))
    return gamma, b


@njit(cache=True)
def _levels_weighted(c, weights, volume, offsets, out):
    for s in range(offsets.shape[0] - 1):
        lo, hi = offsets[s], offsets[s + 1]
        a = c[lo:hi].astype(np.float64)
        w = weights[lo:hi].astype(np.float64)
        out[s] = segment_level_weighted(a, w, volume[s], s + 1)


def water_level_weighted(c, weights, volume, offsets, *, xp):
    out = np.empty(offsets.shape[0] - 1, dtype=np.float64)
    _levels_weighted(c, weights, volume.astype(np.float64), offsets.astype(np.int64), out)
    return out


@njit(cache=True)
def _biased_weighted(c, y, weights, volume):
    return biased_level_weighted_cold(c, y, weights, volume)


def water_level_biased_weighted(c, y, weights, volume, *, xp):
    return _biased_weighted(np.ascontiguousarray(c), np.ascontiguousarray(y), np.ascontiguousarray(weights),
                            float(volume))
