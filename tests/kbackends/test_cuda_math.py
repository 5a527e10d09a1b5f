"""The float32 sine / cosine the Numba-CUDA kernels use (plain Python on the CPU:
the same function the device compiles for float32 arguments)."""

import math

import numpy as np
import pytest

from kbackends.testing import kernel_module

_cuda_math = kernel_module(None, "cuda_math")


@pytest.mark.parametrize("scale", [1.0, 30.0, 3000.0])
def test_sincos_f32_is_float32_and_accurate(scale):
    x = (np.random.default_rng(0).standard_normal(3000) * scale).astype(np.float32)
    got = [_cuda_math.sincos_f32(v) for v in x]
    assert all(type(s) is np.float32 and type(c) is np.float32 for s, c in got)
    s, c = np.array(got, dtype=np.float64).T
    x64 = x.astype(np.float64)  # the float32 argument taken as exact
    # Cephes' bound: a few float32 ulps of the result while pi/4 * octant is exact (|x| < 8192).
    np.testing.assert_allclose(s, np.sin(x64), rtol=0, atol=3e-7)
    np.testing.assert_allclose(c, np.cos(x64), rtol=0, atol=3e-7)


def test_octant_edges_and_signs():
    for v in [0.0, -0.0, math.pi / 4, math.pi / 2, math.pi, 3 * math.pi / 2, -math.pi / 2, -3.0, 7.0, 1e4]:
        x = np.float32(v)
        s, c = _cuda_math.sincos_f32(x)
        assert abs(float(s) - math.sin(float(x))) < 1e-6 and abs(float(c) - math.cos(float(x))) < 1e-6, v


def test_dispatch_by_dtype():
    # float32 takes the polynomial, float64 (and non-finite values) libm
    assert type(_cuda_math.cos(np.float32(0.3))) is np.float32
    assert _cuda_math.cos(0.3) == math.cos(0.3)
    assert math.isnan(_cuda_math.cos(np.float32("nan")))
    assert _cuda_math.sincos(np.float64(0.3)) == (math.sin(0.3), math.cos(0.3))
