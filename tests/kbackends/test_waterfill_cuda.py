"""The cuda water levels (radix bracketing; sorts and a scan for the two basins)
against float64 oracles, run under the simulator or on a GPU: sizes 0 / 1 / odd /
several tiles, ties, constant heights, many and empty segments, both dtypes."""


import numpy as np
import pytest
from numba import cuda

from kbackends import to_numpy
from kbackends.testing import assert_matches_oracle, kernel_module
from kbackends.testing import oracle as reference

pytestmark = pytest.mark.cuda


def oracle(c, v):
    """Float64 level by the definition (sorted prefix sums, first k that fits); NaN if empty."""
    c = np.sort(np.asarray(c, dtype=np.float64))
    if c.size == 0:
        return np.nan
    if v <= 0:
        return c[0]
    level = (v + np.cumsum(c)) / np.arange(1, c.size + 1)
    return level[np.argmax(np.r_[level[:-1] <= c[1:], True])]


def _levels(bk, c, volumes, offsets):
    water_level = kernel_module("waterfill", "cuda").water_level

    xp = bk.xp
    got = water_level(bk.asarray(c), bk.asarray(np.asarray(volumes, dtype=np.float64)),
                      bk.asarray(np.asarray(offsets, dtype=np.int64)), xp=xp)
    return np.asarray(to_numpy(got), dtype=np.float64)


def _check(bk, dtype_name, parts, volumes, floor=0.0):
    c = np.concatenate([np.asarray(p, dtype=np.float64) for p in parts] + [np.zeros(0)]).astype(dtype_name)
    offsets = np.r_[0, np.cumsum([len(p) for p in parts])]
    got = _levels(bk, c, volumes, offsets)
    segs = [c[offsets[s]:offsets[s + 1]].astype(np.float64) for s in range(len(parts))]
    want = [oracle(seg, v) for seg, v in zip(segs, volumes)]
    # per segment: relative to its heights and volume (absolute 1 + those unless all are tiny)
    scale = np.array([(np.abs(seg).max() if seg.size else 0.0) + v for seg, v in zip(segs, volumes)])
    scale = np.where(scale < 1e-20, scale, 1 + scale)
    tol = np.maximum((2e-6 if dtype_name == "float32" else 1e-12) * scale, floor)
    want = np.asarray(want)
    empty = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), empty)  # NaN where (and only where) a segment is empty
    error = np.abs(got - want)[~empty]
    assert np.all(error <= tol[~empty]), (got, want, tol)


VOLUMES = (0.0, 1e-9, 1.0, 1e9)


def _adversarial_parts():
    rng = np.random.default_rng(0)
    return [
        [3.5],  # one value
        rng.standard_normal(7),  # odd
        [],  # empty: NaN
        rng.integers(0, 3, 33).astype(float),  # ties
        np.full(9, -2.25),  # constant
        np.r_[np.zeros(5), 1e6],  # one outlier
        -np.arange(11.0),  # reversed, negative
        [-0.0, 0.0, 0.0],  # signed zeros (keys either side of the sign bit)
        1.0 + np.arange(6) * np.finfo(np.float32).eps,  # differ in the last digit of the key only
    ]


@pytest.mark.parametrize("volume", VOLUMES)
def test_adversarial_segments(gpu, volume):
    """float32 (the GPU's dtype): every segment at every volume scale (0: the minimum
    exactly; tiny; 1; huge: all under water)."""
    parts = _adversarial_parts()
    _check(gpu, "float32", parts, [volume * (s + 1) for s in range(len(parts))])


def test_adversarial_segments_float64(gpu):
    """float64 (64-bit keys, 8 passes): the same segments in one call, the volume scales
    taking turns over them (a simulated block costs the same whichever volume it sees)."""
    parts = _adversarial_parts()
    _check(gpu, "float64", parts, [VOLUMES[s % len(VOLUMES)] * (s + 1) for s in range(len(parts))])


@pytest.mark.parametrize("case", ["normal", "ties", "constant"])
def test_a_segment_over_several_tiles(gpu, dtype_name, case):
    _TILE = kernel_module("waterfill", "cuda")._TILE

    rng = np.random.default_rng(1)
    n = _TILE + 17  # the long segment: a full tile and a partial one
    c = {"normal": rng.standard_normal(n) * 100, "ties": rng.integers(-2, 2, n).astype(float),
         "constant": np.full(n, 7.0)}[case]
    _check(gpu, dtype_name, [c[:5], c[5:]], [0.5, 0.37 * n])


def test_many_segments_at_once(gpu):
    """Tiles map to segments past empty ones: empty first, last and consecutive segments."""
    rng = np.random.default_rng(2)
    sizes = [0, 3, 1, 0, 0, 5, 2, 4, 0]
    parts = [rng.standard_normal(m) for m in sizes]
    _check(gpu, "float32", parts, list(rng.random(len(sizes)) * 3))


def test_heights_across_the_exponent_range(gpu, dtype_name):
    """Tiny, huge, negative and subnormal heights: every key digit decides somewhere."""
    tiny = np.finfo(dtype_name).smallest_subnormal
    parts = [np.r_[1e-30, -1e-30, 3 * tiny, tiny, 0.0, 1e30, -1e30, 2.0], np.r_[tiny, 2 * tiny, 5 * tiny]]
    floor = 0.0
    if gpu.name == "cuda" and dtype_name == "float32":
        # a GPU's float32 global atomics flush subnormals to zero (kernels/waterfill/_cuda.py):
        # the level may be off by up to float32's smallest normal, never more
        floor = float(np.finfo(np.float32).tiny)
    _check(gpu, dtype_name, parts, [1e30, 3 * float(tiny)], floor=floor)


def test_no_segment(gpu):
    assert _levels(gpu, np.zeros(0, dtype=np.float32), [], [0]).shape == (0,)


def test_levels_repeat_bit_for_bit(gpu):
    """The level's count and sum are fixed-order trees: two calls agree exactly."""
    rng = np.random.default_rng(3)
    c = rng.standard_normal(3000).astype(np.float32)
    first = _levels(gpu, c, [5.0, 9.0], [0, 1234, 3000])
    np.testing.assert_array_equal(first, _levels(gpu, c, [5.0, 9.0], [0, 1234, 3000]))


@pytest.mark.parametrize("sizes", [(1, 1), (1, 6), (9, 2), (40, 40), (300, 170)])
def test_biased_matches_the_oracle_and_takes_a_device_volume(gpu, dtype_name, sizes):
    """Through the public op against the xp reference (ties across and within classes;
    volumes 0, small, huge), then the kernel as SBP calls it: the volume a 0-d float64
    device array (never read on the host), the same result as the number, in ``c``'s dtype."""
    water_level_biased = kernel_module("waterfill", "cuda_biased").water_level_biased

    rng = np.random.default_rng(4)
    n_pos, n_neg = sizes
    c = rng.integers(-3, 4, n_pos + n_neg).astype(dtype_name)
    y = rng.permutation(np.r_[np.ones(n_pos, dtype=np.int64), -np.ones(n_neg, dtype=np.int64)])
    for volume in (0.0, 0.5, 1e6):
        assert_matches_oracle("water_level_biased", c, y, volume, backend=gpu, scale=4 + volume)
    c_d, y_d = gpu.asarray(c), gpu.asarray(y.astype(dtype_name))  # the labels as SBP holds them
    for volume in (0.0, 2.5):
        as_number = water_level_biased(c_d, y_d, volume, xp=gpu.xp)
        on_device = water_level_biased(c_d, y_d, gpu.asarray(np.asarray(volume, dtype=np.float64)), xp=gpu.xp)
        for a, b in zip(as_number, on_device):
            a, b = to_numpy(a), to_numpy(b)
            assert a.dtype == b.dtype == np.dtype(dtype_name)
            assert a == b


def test_biased_past_one_block_runs_the_array_form(gpu, dtype_name, monkeypatch):
    """Past ``ONE_BLOCK_MAX`` values the level is the array form (the basins too large
    for one block's pass): the reference's answer too, the volume still on the device."""
    module = kernel_module("waterfill", "cuda_biased")
    monkeypatch.setattr(module, "ONE_BLOCK_MAX", 16)
    rng = np.random.default_rng(8)
    c = rng.integers(-3, 4, 50).astype(dtype_name)
    y = np.where(rng.random(50) < 0.4, 1, -1)
    for volume in (0.0, 3.0):
        assert_matches_oracle("water_level_biased", c, y, volume, backend=gpu, scale=4 + volume)
    got = module.water_level_biased(gpu.asarray(c), gpu.asarray(y), gpu.asarray(np.float64(3.0)), xp=gpu.xp)
    want = reference("water_level_biased")(c, y, 3.0, xp=np)
    for a, b in zip(got, want):
        assert to_numpy(a).dtype == np.dtype(dtype_name)
        assert float(to_numpy(a)) == pytest.approx(float(b), abs=1e-5 * 7)


def test_the_blocks_bitonic_sort_orders_any_count(gpu):
    """The warm level's band sort (``_cuda_warm._block_sort``: one block, shared memory in
    the run, here a device array) against NumPy's sort: counts around powers of two, ties,
    -0.0 and negatives; what lies past the count is left as padding."""
    rng = np.random.default_rng(0)
    for m in (0, 1, 2, 3, 31, 32, 33, 100, 257):
        values = np.round(rng.standard_normal(m), 1)  # ties
        if m > 3:
            values[:2] = -0.0, 0.0
        a = np.full(512, np.nan)
        a[:m] = values
        a_dev = gpu.asarray(a)
        _sort[1, _WIDTH](a_dev, m)
        got = np.asarray(to_numpy(a_dev))
        np.testing.assert_array_equal(got[:m], np.sort(values))


_WIDTH = 32
_block_sort = kernel_module("waterfill", "cuda_warm")._block_sort


@cuda.jit
def _sort(a, m):
    _block_sort(a, m, cuda.threadIdx.x, _WIDTH)
