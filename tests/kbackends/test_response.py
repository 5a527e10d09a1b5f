"""kernel_response_update: every implementation against the explicit kernel matrix."""

import numpy as np
import pytest

from kbackends.ops import kernel_response_update
from kbackends.testing import assert_close, host, kernel_module


def _explicit(X, idx, coef, y, c, kernel, gamma):
    X = X.astype(np.float64)
    S = X[idx]
    if kernel == "rbf":
        K = np.exp(-gamma * ((X[:, None, :] - S[None, :, :]) ** 2).sum(-1))
    else:
        K = X @ S.T
    return c + y * (K @ (coef * y[idx]))


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("n, m, d", [(0, 0, 3), (1, 1, 1), (37, 1, 5), (130, 9, 4)])
def test_matches_the_explicit_kernel(backend, dtype_name, kernel, n, m, d):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d)).astype(dtype_name)
    idx = rng.integers(0, max(n, 1), m) if n else np.zeros(0, dtype=np.int64)
    coef = rng.standard_normal(m).astype(dtype_name)
    y = np.where(rng.random(n) < 0.5, 1, -1)
    c = rng.standard_normal(n).astype(dtype_name)
    got = kernel_response_update(*(backend.asarray(a) for a in (X, idx, coef, y, c)), kernel=kernel, gamma=0.3)
    expected = _explicit(X, idx, coef.astype(np.float64), y, c.astype(np.float64), kernel, 0.3)
    assert host(got).shape == (n,)
    scale = 1 + np.abs(coef).sum() * (1 if kernel == "rbf" else d * 10)
    assert_close(got, expected, dtype_name, scale=scale)


def test_input_is_not_modified_and_errors():
    X = np.eye(3)
    c = np.zeros(3)
    out = kernel_response_update(X, np.array([1]), np.array([2.0]), np.array([1, -1, 1]), c, kernel="linear")
    np.testing.assert_allclose(out, [0.0, 2.0, 0.0])
    assert np.all(c == 0)
    with pytest.raises(ValueError, match="`idx` must index rows"):
        kernel_response_update(X, np.array([3]), np.array([1.0]), np.ones(3), c)
    with pytest.raises(ValueError, match="`coef` must be 1-D of length 1"):
        kernel_response_update(X, np.array([0]), np.ones(2), np.ones(3), c)
    with pytest.raises(ValueError, match="`kernel` must be one of"):
        kernel_response_update(X, np.array([0]), np.ones(1), np.ones(3), c, kernel="poly")


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_blas_path_over_several_row_chunks(monkeypatch, dtype_name, kernel):
    """cpu: from 8 changed rows on, inner products come from BLAS per row chunk."""
    _numba = kernel_module("response", "numba")
    monkeypatch.setattr(_numba, "_CHUNK_ELEMENTS", 40)  # 40 // 11 = 3 rows per chunk
    rng = np.random.default_rng(3)
    X = rng.standard_normal((23, 4)).astype(dtype_name)
    idx = rng.integers(0, 23, 11)
    coef = rng.standard_normal(11).astype(dtype_name)
    y = np.where(rng.random(23) < 0.5, 1, -1)
    c = rng.standard_normal(23).astype(dtype_name)
    got = _numba.kernel_response_update(X, idx, coef * y[idx], y, c, xp=np, kernel=kernel, gamma=0.3)  # the op passes coef * y[idx]
    expected = _explicit(X, idx, coef.astype(np.float64), y, c.astype(np.float64), kernel, 0.3)
    assert_close(got, expected, dtype_name, scale=1 + np.abs(expected).max())
