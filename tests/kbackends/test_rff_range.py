"""The cpu RFF kernels' cos/sin against np.cos / np.sin in float64, for every
finite argument: the vectorised polynomial inside the range reduction's domain,
the C library beyond it (|t| > 8192 in float32, 2^20 in float64).

X is one column and omega holds powers of two, so ``X omega^T`` is exact in
either dtype and the reference sees exactly the kernel's arguments.
"""

import numpy as np
import pytest

from kbackends import ops

# Measured: 1.7e-7 (float32), 3.5e-16 (float64) over these arguments.
ABS_TOL = {"float32": 4e-7, "float64": 2e-15}
OMEGA = np.array([1.0, -1.0, 2.0, 0.5, -0.25, 4.0])


def _arguments(dtype):
    """Adversarial arguments: each scale from 1e-30 to the dtype's max, multiples of
    pi/2 (where the reduction cancels most), tiny and signed zeros, +-max."""
    rng = np.random.default_rng(0)
    fmax = float(np.finfo(dtype).max) / 4  # times omega <= 4 stays finite
    scales = [s for s in (1e-30, 1.0, 1e2, 1e4, 8192.0, 1e5, 1e6, 2.0**20, 1e8, 1e10, 1e16, 1e20, 1e38, 1e100, 1e300)
              if s <= fmax]
    parts = [rng.uniform(-1, 1, 64) * s for s in scales]
    for s in scales:
        k = np.round(rng.uniform(-1, 1, 64) * s / (np.pi / 2))
        parts.append(k * (np.pi / 2))
        parts.append(np.nextafter((k * (np.pi / 2)).astype(dtype), dtype(np.inf)))
    parts.append([0.0, -0.0, 1e-38, -1e-38, float(np.finfo(dtype).tiny), 8192.0, -8192.0, 8192.5, 2.0**20, 2.0**20 + 1, fmax, -fmax])
    return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts]).astype(dtype)


def _reference(t, dtype):
    """cos and sin of the arguments the kernel forms, (n, m) each, in float64."""
    X = t.reshape(-1, 1)
    Z = X.astype(np.float64) @ OMEGA.astype(dtype).astype(np.float64)[None, :]
    return np.cos(Z), np.sin(Z)


@pytest.fixture
def problem(dtype_name):
    dtype = np.dtype(dtype_name).type
    t = _arguments(dtype)
    X = t.reshape(-1, 1)
    omega = OMEGA.astype(dtype).reshape(-1, 1)
    phase = np.zeros(OMEGA.size, dtype=dtype)
    cos, sin = _reference(t, dtype)
    return X, omega, phase, cos, sin


def test_features_every_finite_argument(problem, dtype_name):
    X, omega, phase, cos, sin = problem
    tol = ABS_TOL[dtype_name]
    got_cos = ops.rff_features(X, omega, phase, form="cos", backend="cpu")
    got = ops.rff_features(X, omega, phase, form="cossin", backend="cpu")
    m = omega.shape[0]
    assert got.dtype == X.dtype
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got_cos.astype(np.float64), cos, rtol=0, atol=tol)
    np.testing.assert_allclose(got[:, :m].astype(np.float64), cos, rtol=0, atol=tol)
    np.testing.assert_allclose(got[:, m:].astype(np.float64), sin, rtol=0, atol=tol)


def test_features_with_a_phase(dtype_name):
    """cos(X omega^T + phase): the sum is rounded once in X's dtype, large or not."""
    dtype = np.dtype(dtype_name).type
    t = _arguments(dtype)
    phase = np.full(1, 0.75, dtype=dtype)
    got = ops.rff_features(t.reshape(-1, 1), np.ones((1, 1), dtype=dtype), phase, backend="cpu")[:, 0]
    args = (t + phase[0]).astype(dtype).astype(np.float64)
    np.testing.assert_allclose(got.astype(np.float64), np.cos(args), rtol=0, atol=ABS_TOL[dtype_name])


def test_predict_and_weighted_sum_with_large_inputs(problem, dtype_name):
    X, omega, phase, cos, sin = problem
    n, m = cos.shape
    rng = np.random.default_rng(1)
    coef = rng.normal(size=(2 * m, 2))
    g = rng.normal(size=(2, n))
    feats = np.concatenate([cos, sin], axis=1)
    pred = ops.rff_predict(X, omega, phase, coef.astype(X.dtype), form="cossin", backend="cpu")
    wsum = ops.rff_weighted_sum(X, omega, phase, g.astype(X.dtype), form="cossin", backend="cpu")
    # Each output sums 2m (n) terms, each off by at most the features' tolerance
    # (plus the dtype's rounding of coef and g and of the sums themselves).
    eps = float(np.finfo(X.dtype).eps)
    atol_pred = 2 * m * (ABS_TOL[dtype_name] + 4 * eps) * np.abs(coef).max()
    atol_wsum = n * (ABS_TOL[dtype_name] + 4 * eps) * np.abs(g).max()
    np.testing.assert_allclose(pred.astype(np.float64), feats @ coef, rtol=0, atol=atol_pred)
    np.testing.assert_allclose(wsum.astype(np.float64), g @ feats, rtol=0, atol=atol_wsum)


def test_small_and_huge_rows_together(dtype_name):
    """A row beyond the polynomial's domain takes the exact path without changing its neighbours."""
    dtype = np.dtype(dtype_name).type
    X = np.array([[0.3], [3e7], [-1.25], [1e30]], dtype=dtype)
    omega = np.linspace(-2.0, 2.0, 33).astype(dtype).reshape(-1, 1)
    phase = np.zeros(33, dtype=dtype)
    got = ops.rff_features(X, omega, phase, form="cossin", backend="cpu").astype(np.float64)
    Z = X.astype(np.float64) * omega.astype(np.float64).ravel()[None, :]
    Z = Z.astype(dtype).astype(np.float64)  # the kernel's product is rounded once in X's dtype
    np.testing.assert_allclose(got, np.concatenate([np.cos(Z), np.sin(Z)], axis=1), rtol=0, atol=ABS_TOL[dtype_name])


def test_infinite_argument_gives_nan():
    """inf * omega: NaN as np.cos(inf), never a finite value (the engine then refuses the fit)."""
    from kbackends.testing import kernel_module

    _numba = kernel_module("rff", "numba")

    for dtype in (np.float32, np.float64):
        X = np.array([[np.inf], [1.0]], dtype=dtype)
        out = _numba.rff_features(X, np.ones((1, 1), dtype=dtype), np.zeros(1, dtype=dtype), xp=np, form="cos")
        assert np.isnan(out[0, 0])
        assert out[1, 0] == pytest.approx(np.cos(1.0), abs=ABS_TOL[np.dtype(dtype).name])
