"""DSG / TSGS3VM fits, predictions, estimators and the CLI on scipy.sparse X:
the dense result, without densifying."""

import numpy as np
import pytest
import scipy.sparse as sp

from algorithms import DSGClassifier, DSGRegressor, TSGS3VMClassifier, dsg, tsgs3vm
from algorithms._boundary.validation import check_X, median_gamma
from kbackends import resolve


def _data(n=600, d=80, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.08, format="csr", random_state=seed, dtype=dtype)
    y = np.where(X @ rng.standard_normal(d) > 0, 1, -1)
    return X, y


@pytest.mark.parametrize("variant", ["dsg", "udsg", "cdsg"])
def test_dsg_sparse_matches_dense(variant, dtype_name):
    X, y = _data(dtype=dtype_name)
    kw = dict(variant=variant, n_iter=8, batch_size=128, block_size=64, random_state=0)
    ms, md = dsg.fit(X, y, **kw), dsg.fit(X.toarray(), y, **kw)
    assert ms.gamma == pytest.approx(md.gamma, rel=1e-6)
    fs, fd = dsg.decision_function(ms, X.tocsc()), dsg.decision_function(md, X.toarray())
    np.testing.assert_allclose(fs, fd, atol=1e-4 if dtype_name == "float32" else 1e-9)
    np.testing.assert_array_equal(dsg.predict(ms, X), dsg.predict(md, X.toarray()))
    assert dsg.objective(ms, X, y) == pytest.approx(dsg.objective(md, X.toarray(), y), rel=1e-4)


def test_tsgs3vm_and_estimators_sparse():
    X, y = _data()
    y_semi = np.where(np.arange(len(y)) < 150, (y == 1).astype(int), -1)
    kw = dict(n_iter=6, batch_size=128, random_state=0)
    ms, md = tsgs3vm.fit(X, y_semi, **kw), tsgs3vm.fit(X.toarray(), y_semi, **kw)
    np.testing.assert_allclose(tsgs3vm.decision_function(ms, X), tsgs3vm.decision_function(md, X.toarray()),
                               atol=1e-9)
    for est in (DSGClassifier(n_iter=5, batch_size=128, random_state=0),
                TSGS3VMClassifier(n_iter=5, batch_size=128, random_state=0)):
        target = y if isinstance(est, DSGClassifier) else y_semi
        a = est.fit(sp.coo_matrix(X), target).decision_function(sp.csr_array(X))
        b = type(est)(**est.get_params()).fit(X.toarray(), target).decision_function(X.toarray())
        np.testing.assert_allclose(a, b, atol=1e-9)
        assert est.__sklearn_tags__().input_tags.sparse
    reg = DSGRegressor(n_iter=5, batch_size=128, random_state=0).fit(X, y.astype(float))
    assert reg.predict(X).shape == (X.shape[0],)


def test_check_X_sparse():
    bk = resolve("cpu")
    X, _ = _data()
    coo = X.tocoo()
    coo.data = np.concatenate([coo.data, [1.0]])
    coo.row, coo.col = np.concatenate([coo.row, [0]]), np.concatenate([coo.col, [0]])  # a duplicate
    got = check_X(coo, bk, None, accept_sparse=True)
    assert sp.issparse(got) and got.format == "csr" and got.has_canonical_format
    np.testing.assert_allclose(got.toarray(), coo.toarray())
    assert check_X(X.astype(np.int64), bk, None, accept_sparse=True).dtype == np.float64
    bad = X.copy()
    bad.data[3] = np.inf
    with pytest.raises(ValueError, match="`X` contains NaN or infinite"):
        check_X(bad, bk, None, accept_sparse=True)
    big = X.copy()
    big.data[:] = 1e200
    with pytest.raises(ValueError, match="squared sums overflow"):
        check_X(big, bk, None, accept_sparse=True)
    with pytest.raises(TypeError, match="does not take sparse input"):
        check_X(X, bk, None)
    # the median heuristic on the sparse sample: the dense value
    assert median_gamma(X, bk, 0) == pytest.approx(median_gamma(X.toarray(), bk, 0), rel=1e-9)
