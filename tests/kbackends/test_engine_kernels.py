"""The cuda forms of the engine's bookkeeping (kernels/engine) against their array-API
reference: a batch from the prediction cache (with and without targets, repeated
rows), and a block's change added in place at the block's rows (first, middle and
last block; with and without the intercept), leaving every other row untouched."""

import numpy as np
import pytest

from kbackends import get_kernel, to_numpy
from kbackends.testing import assert_same_arithmetic, oracle

pytestmark = pytest.mark.cuda


@pytest.mark.parametrize("with_y", [True, False])
@pytest.mark.parametrize("n, B, k", [(1, 1, 1), (50, 70, 1), (9, 5, 3)])
def test_cache_batch_matches_the_reference(gpu, dtype_name, n, B, k, with_y):
    rng = np.random.default_rng(n + B + k)
    cache = rng.standard_normal((n, k)).astype(dtype_name)
    y = np.where(rng.random((n, k)) < 0.5, -1.0, 1.0).astype(dtype_name) if with_y else None
    idx = rng.integers(0, n, B)  # with replacement: repeated rows
    intercept = rng.standard_normal(k).astype(dtype_name)
    want = oracle("cache_batch")(cache, y, idx, intercept, xp=np)
    got = get_kernel("cache_batch", gpu)(gpu.asarray(cache), None if y is None else gpu.asarray(y), gpu.asarray(idx),
                                         gpu.asarray(intercept), xp=gpu.xp)
    np.testing.assert_array_equal(to_numpy(got[0]), want[0])  # one addition an entry: the same bits
    assert to_numpy(got[0]).dtype == np.dtype(dtype_name)
    if with_y:
        np.testing.assert_array_equal(to_numpy(got[1]), want[1])
    else:
        assert got[1] is None and want[1] is None


@pytest.mark.parametrize("average", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("block", [0, 2, 4])
@pytest.mark.parametrize("F, k", [(1, 1), (7, 1), (4, 3)])
def test_block_update_matches_the_reference(gpu, dtype_name, F, k, block, fit_intercept, average):
    rng = np.random.default_rng(F * k + block)
    stored = rng.standard_normal((5 * F, k)).astype(dtype_name)
    correction = rng.standard_normal((5 * F, k)).astype(dtype_name) if average else None
    delta = rng.standard_normal((F, k)).astype(dtype_name)
    intercept, delta_b, intercept_sum = (rng.standard_normal(k).astype(dtype_name) for _ in range(3))
    intercept_sum = intercept_sum if average else None
    kw = {"start": block * F, "scale": 0.37, "fit_intercept": fit_intercept, "scale_sum": 2.3}
    want_stored, want_correction = stored.copy(), None if correction is None else correction.copy()
    want = oracle("block_update")(want_stored, delta, intercept, delta_b, want_correction, intercept_sum, xp=np, **kw)
    on_device = gpu.asarray(stored.copy())
    correction_d = None if correction is None else gpu.asarray(correction.copy())
    got = get_kernel("block_update", gpu)(on_device, gpu.asarray(delta), gpu.asarray(intercept), gpu.asarray(delta_b),
                                          correction_d, None if intercept_sum is None else gpu.asarray(intercept_sum),
                                          xp=gpu.xp, **kw)
    np.testing.assert_array_equal(to_numpy(on_device), want_stored)  # the block's rows, and only those, moved
    assert not np.array_equal(want_stored[block * F:(block + 1) * F], stored[block * F:(block + 1) * F])
    np.testing.assert_array_equal(to_numpy(got[0]), want[0])
    if not fit_intercept:
        np.testing.assert_array_equal(to_numpy(got[0]), intercept)
    if average:  # the average's correction rows and the intercept sum (with the new intercept)
        assert_same_arithmetic(correction_d, want_correction)  # delta / scale * scale_sum: fused on a GPU
        assert not np.array_equal(want_correction, correction)
        assert_same_arithmetic(got[1], want[1])
        np.testing.assert_array_equal(want[1], intercept_sum + want[0])
    else:
        assert got[1] is None and want[1] is None
