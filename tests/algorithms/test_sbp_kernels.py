"""The cuda steps of the binary SBP iteration (algorithms/sbp/_kernels) against their array-API
reference on the same inputs: the drawn row, the count it was drawn among, the
coefficient, the projection and the renormalisation, the logs written, and the
average; the empty-under-water fallback, ties at the level and the last rank."""

import numpy as np
import pytest

import algorithms.sbp  # noqa: F401  (registers the kernels)
from kbackends import get_kernel, resolve, to_numpy
from kbackends.testing import assert_same_arithmetic, oracle

pytestmark = pytest.mark.cuda

THRESHOLD = 1e-6


def _inputs(n, dtype, seed, *, level_rank=None, s=0.7, r2=0.4, u=0.37):
    rng = np.random.default_rng(seed)
    C = rng.integers(-4, 5, n).astype(dtype) / 4  # ties at the level
    Y = np.where(rng.random(n) < 0.5, 1.0, -1.0).astype(dtype)
    b = dtype(0.25)
    heights = C + b * Y
    level = np.sort(heights)[level_rank] if level_rank is not None else dtype(np.median(heights))
    quad = rng.random(n) + 0.5
    return C, Y, quad, dtype(level), b, np.array([u]), np.array([s]), np.array([r2])


def _run(fn, bk, xp, args, step):
    C, Y, quad, level, b, u, s, r2 = args
    idx_out, s_out = xp.zeros((1,), dtype=xp.int64), xp.zeros((1,), dtype=xp.float64)
    arrays = [bk.asarray(a) for a in (C, Y, quad)]
    scalars = [bk.asarray(np.asarray(level)), bk.asarray(np.asarray(b))]
    result = fn(*arrays, *scalars, *(bk.asarray(a.copy()) for a in (u, s, r2)), idx_out, s_out, xp=xp, step=step,
                renormalise_below=THRESHOLD)
    idx, w, (s_avg, s_cast), s_next, r2_next, count = result
    return [to_numpy(a) for a in (idx, w, s_avg, s_cast, s_next, r2_next, count, idx_out, s_out)]


CASES = {
    "median level": {},
    "level at the minimum: none strictly under, the minima": {"level_rank": 0},
    "the last rank": {"u": 1.0 - 2.0**-53},
    "projected onto the ball": {"r2": 0.99},
    "renormalised": {"s": 1.01e-6, "r2": 0.999},
}


@pytest.mark.parametrize("n", [1, 5, 33, 1000])
@pytest.mark.parametrize("case", sorted(CASES))
def test_draw_step_matches_the_reference(gpu, dtype_name, n, case):
    dtype = np.dtype(dtype_name).type
    args = _inputs(n, dtype, n, **CASES[case])
    want = _run(oracle("sbp_draw_step"), resolve("cpu"), np, args, step=0.3)
    got = _run(get_kernel("sbp_draw_step", gpu), gpu, gpu.xp, args, step=0.3)
    for name, a, b in zip(("idx", "w", "s_avg", "s_cast", "s_next", "r2", "count", "idx log", "s log"), got, want):
        assert_same_arithmetic(a, b, err_msg=name)
    if case.startswith("renormalised"):
        assert want[4][0] == 1.0 and want[2][0] < THRESHOLD
    if case.startswith("level at the minimum"):
        assert want[6][0] >= 1  # drawn among the minima


@pytest.mark.parametrize("renormalise", [False, True])
def test_average_matches_the_reference(gpu, dtype_name, renormalise):
    rng = np.random.default_rng(4)
    C = rng.standard_normal(300).astype(dtype_name)
    C_bar = rng.standard_normal(300)
    s_avg = np.array([1e-7 if renormalise else 0.8])
    scale = (s_avg, s_avg.astype(dtype_name))
    want = oracle("sbp_average")(C_bar.copy(), C.copy(), scale, xp=np, renormalise_below=THRESHOLD)
    dev = gpu.asarray
    got = get_kernel("sbp_average", gpu)(dev(C_bar.copy()), dev(C.copy()), tuple(dev(a) for a in scale), xp=gpu.xp,
                                         renormalise_below=THRESHOLD)
    for a, b in zip(got, want):
        assert_same_arithmetic(a, b)
    np.testing.assert_array_equal(want[1], C * scale[1] if renormalise else C)
