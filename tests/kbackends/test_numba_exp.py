"""``kernel_tools.fast_exp``: the vectorisable float64 exponential against NumPy's, to
the ulp, over its whole range (underflow to 0, overflow to inf, NaN), inside a loop
compiled with fast-math as the kernels that use it are."""

import math

import numpy as np
import pytest
from numba import njit

from kbackends.kernel_tools import fast_exp

_FAST = {"reassoc", "contract", "nsz", "arcp"}


@njit(fastmath=_FAST)
def _exp_loop(x, out):
    for i in range(x.shape[0]):
        out[i] = fast_exp(x[i])


def _exp(x):
    out = np.empty_like(x)
    _exp_loop(x, out)
    return out


def _ulps(got, want):
    """The error in units of the last place of the correct value (subnormals' ulp below)."""
    return np.abs(got - want) / np.spacing(np.abs(want))


def test_within_one_ulp_of_numpy_over_the_whole_range():
    rng = np.random.default_rng(0)
    x = np.concatenate([
        rng.uniform(-745.0, 709.0, 400_000),  # every binade of the result
        rng.uniform(-1.0, 1.0, 200_000),  # the reduced range itself (k = 0, +-1)
        rng.uniform(-745.13, -708.0, 100_000),  # subnormal results: the scale's two factors
        rng.uniform(700.0, 709.78, 50_000),  # near overflow: k = 1024
        np.arange(-1075, 1024) * math.log(2.0),  # the reduction's boundaries
    ])
    with np.errstate(over="ignore"):
        want = np.exp(x)
    assert np.max(_ulps(_exp(x), want)) <= 1.0


def test_limits_and_special_values_as_numpy():
    x = np.array([-np.inf, -1e300, -746.0, -745.14, -745.13, -745.0, -0.0, 0.0, 1e-300, -1e-300, 709.78, 709.79,
                  800.0, np.inf, np.nan])
    with np.errstate(over="ignore"):
        want = np.exp(x)
    got = _exp(x)
    np.testing.assert_array_equal(got, want)  # 0 below, the smallest subnormal, 1, inf above, NaN


@pytest.mark.parametrize("x", [-3.5, -1e-8, 0.5, 2.0])
def test_scalar_calls_from_python(x):
    assert _ulps(fast_exp(x), math.exp(x)) <= 1.0
