"""The rff ops on scipy.sparse input (cpu backend): the same values as on the
dense matrix and as the array-API oracle, without densifying X."""

import numpy as np
import pytest
import scipy.sparse as sp

from kbackends import ops
from kbackends.random import omega_block
from kbackends.testing import oracle_backend

FORMS = ("cos", "cossin")
TOL = {"float32": 2e-4, "float64": 1e-10}


def _problem(dtype_name, n=57, d=40, m=70, density=0.15, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed, dtype=np.float64)
    X.data = rng.standard_normal(X.nnz)
    X = X.tolil()
    X[3, :] = 0  # an empty row
    X[:, 5] = 0  # an all-zero column
    X = X.tocsr().astype(dtype_name)
    X.eliminate_zeros()
    omega, phase = omega_block(seed, 0, m, d, kernel="rbf", gamma=0.3, dtype=dtype_name, backend="cpu")
    return X, np.asarray(omega), np.asarray(phase), rng


def _all_ops(X, omega, phase, coef, g, form, backend):
    return (
        ops.rff_features(X, omega, phase, form=form, backend=backend),
        ops.rff_predict(X, omega, phase, coef, form=form, backend=backend),
        ops.rff_weighted_sum(X, omega, phase, g, form=form, backend=backend),
    )


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "csr_array"])
def test_sparse_matches_dense_and_oracle(dtype_name, form, fmt):
    X, omega, phase, rng = _problem(dtype_name)
    n_out = omega.shape[0] * (2 if form == "cossin" else 1)
    coef = rng.standard_normal((n_out, 3)).astype(dtype_name)
    g = rng.standard_normal((2, X.shape[0])).astype(dtype_name)
    Xs = sp.csr_array(X) if fmt == "csr_array" else X.asformat(fmt)
    got = _all_ops(Xs, omega, phase, coef, g, form, "cpu")
    dense = _all_ops(X.toarray(), omega, phase, coef, g, form, "cpu")
    oracle = _all_ops(X.toarray(), omega, phase, coef, g, form, oracle_backend())
    for a, b, c in zip(got, dense, oracle):
        assert a.dtype == np.dtype(dtype_name) and a.shape == b.shape
        scale = max(1.0, float(np.max(np.abs(c))))
        np.testing.assert_allclose(a, b, rtol=0, atol=TOL[dtype_name] * scale)
        np.testing.assert_allclose(a, np.asarray(c), rtol=0, atol=TOL[dtype_name] * scale)


def test_sparse_duplicates_summed_and_zero_rows(dtype_name):
    _, omega, phase, _ = _problem(dtype_name, d=6, m=8)
    rows, cols, vals = [0, 0, 2, 2], [1, 1, 4, 0], [0.5, 0.25, -1.0, 2.0]
    X = sp.coo_matrix((np.array(vals, dtype=dtype_name), (rows, cols)), shape=(3, 6))
    dense = X.toarray()
    assert dense[0, 1] == 0.75
    np.testing.assert_allclose(ops.rff_features(X, omega, phase), ops.rff_features(dense, omega, phase),
                               atol=TOL[dtype_name])
    empty = sp.csr_matrix((0, 6), dtype=dtype_name)
    assert ops.rff_features(empty, omega, phase).shape == (0, 8)
    assert ops.rff_predict(empty, omega, phase, np.ones(8, dtype_name)).shape == (0,)
    np.testing.assert_array_equal(ops.rff_weighted_sum(empty, omega, phase, np.ones(0, dtype_name)), 0)


def test_sparse_errors():
    X, omega, phase, _ = _problem("float64", d=6, m=8)
    with pytest.raises(TypeError, match="`X` must have a float32 or float64"):
        ops.rff_features(X.astype(np.int64), omega, phase)
    with pytest.raises(TypeError, match="`omega` has dtype float64 but `X` has float32"):
        ops.rff_features(X.astype(np.float32), omega, phase)
    with pytest.raises(TypeError, match="backend='cpu'"):
        ops.rff_features(X, omega, phase, backend=oracle_backend())
    bad = X.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="`X` contains NaN"):
        ops.rff_features(bad, omega, phase)
    with pytest.raises(ValueError, match="`omega` has 6 columns but `X` has 7"):
        ops.rff_features(sp.csr_matrix((2, 7)), omega, phase)
