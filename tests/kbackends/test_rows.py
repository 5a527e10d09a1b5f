"""kbackends.ops.squared_sums: row and column sums of squares on every backend, dense
or sparse, against the plain sum; its arguments checked."""

import numpy as np
import pytest
import scipy.sparse as sp

from kbackends import ops
from kbackends.testing import host


def _matrix(dtype_name, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((37, 11)) * (rng.random((37, 11)) < 0.3)
    X[5] = 0.0  # an empty row
    return X.astype(dtype_name)


@pytest.mark.parametrize("axis", [1, 0])
@pytest.mark.parametrize("summed_in", [None, "float64"])
def test_dense_sums_on_every_backend(backend, dtype_name, axis, summed_in):
    X = _matrix(dtype_name)
    got = host(ops.squared_sums(backend.asarray(X), axis=axis, dtype=summed_in))
    assert got.dtype == np.dtype(summed_in or dtype_name)
    np.testing.assert_allclose(got, (X.astype(np.float64) ** 2).sum(axis=axis), rtol=1e-6)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("axis", [1, 0])
def test_sparse_sums_equal_the_dense_ones(dtype_name, fmt, axis):
    X = _matrix(dtype_name, seed=1)
    S = sp.csr_matrix(X).asformat(fmt)
    for summed_in in (None, "float32", "float64"):
        got = ops.squared_sums(S, axis=axis, dtype=summed_in)
        want = ops.squared_sums(X, axis=axis, dtype=summed_in)
        assert got.dtype == want.dtype and got.shape == (X.shape[1 - axis],)
        np.testing.assert_allclose(got, want, rtol=1e-6 if "float32" in (dtype_name, summed_in) else 1e-14)
    # a float32 X summed in float64: no overflow where float32 squares would
    big = sp.csr_matrix(np.full((2, 3), 3e19, dtype=np.float32))
    assert np.all(np.isinf(ops.squared_sums(big, dtype="float32")))
    assert np.all(np.isfinite(ops.squared_sums(big, dtype="float64")))


def test_arguments_are_checked():
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="`axis` must be 0 or 1"):
        ops.squared_sums(X, axis=2)
    with pytest.raises(ValueError, match="`dtype` must be one of"):
        ops.squared_sums(X, dtype="int8")
    with pytest.raises(ValueError, match="`X` contains NaN"):
        ops.squared_sums(np.array([[np.nan, 1.0]]))
    with pytest.raises(TypeError, match="float32 or float64"):
        ops.squared_sums(np.ones((3, 2), dtype=np.int64))
