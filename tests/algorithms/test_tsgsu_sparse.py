"""TSGSU on scipy.sparse rows (issue 14, point 2): the fit, the prior estimate, SU-SL and
the selection read CSR rows, never an n x d dense copy, and give the dense results."""

import numpy as np
import pytest
import scipy.sparse as sp

from algorithms import TSGSUClassifier, tsgsu


@pytest.fixture(scope="module")
def su_sparse():
    """Sparse two-class data (61% of the entries zero) as SU data, dense and CSR; the
    positive class is the larger one (70%)."""
    from sklearn.datasets import make_classification

    d = 40
    X, y = make_classification(3000, d, n_informative=6, class_sep=1.5, weights=[0.3], random_state=0)
    y = 2 * y - 1
    X[np.abs(X) < 1.0] = 0.0
    X_s, X_u = tsgsu.make_su_data(X, y, 500, 1200, prior=0.7, random_state=0)
    X_s = np.asarray(X_s).reshape(-1, d)
    return X, y, X_s, X_u, sp.csr_matrix(X_s), sp.csr_matrix(X_u)


@pytest.fixture
def no_dense_copies(monkeypatch):
    """Densifying more than 100 rows of the data (40 features, 41 with SU-SL's constant)
    fails the test; small matrices (Gram matrices of a sample, of the features) are allowed."""

    def refuse(self, *args, **kwargs):
        if self.shape[0] > 100 and self.shape[1] in (40, 41):
            pytest.fail(f"a {self.shape} sparse matrix was densified")
        return original(self, *args, **kwargs)

    original = sp.csr_matrix.toarray
    for cls in (sp.csr_matrix, sp.csr_array):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)


ARGS = dict(n_iter=15, batch_size=256, block_size=32, random_state=0)


def test_sparse_fit_is_the_dense_fit(su_sparse, no_dense_copies):
    X, y, X_s, X_u, S_s, S_u = su_sparse
    dense = tsgsu.fit(X_s, X_u, prior=0.7, **ARGS)
    sparse = tsgsu.fit(S_s, S_u, prior=0.7, **ARGS)
    assert sparse.gamma == pytest.approx(dense.gamma, rel=1e-6)
    np.testing.assert_allclose(sparse.coef, dense.coef, rtol=1e-4, atol=1e-5)
    accuracy = np.mean(tsgsu.predict(sparse, sp.csr_matrix(X)) == y)
    assert accuracy > 0.74  # the majority class is 0.70
    assert accuracy == pytest.approx(np.mean(tsgsu.predict(dense, X) == y), abs=0.005)
    assert tsgsu.su_risk(sparse, S_s, S_u) == pytest.approx(tsgsu.su_risk(dense, X_s, X_u), rel=1e-3, abs=1e-5)


def test_sparse_prior_estimate_and_su_sl(su_sparse, no_dense_copies):
    X, y, X_s, X_u, S_s, S_u = su_sparse
    kw = dict(n_components=100, n_repeats=2, random_state=0)
    estimate = tsgsu.estimate_prior(S_s, S_u, **kw)
    assert estimate == pytest.approx(tsgsu.estimate_prior(X_s, X_u, **kw), abs=1e-6)
    assert abs(estimate - 0.7) < 0.1
    for features in ("linear", "rff"):
        d = tsgsu.su_sl_fit(X_s, X_u, 0.7, features=features, n_components=100, random_state=0)
        s = tsgsu.su_sl_fit(S_s, S_u, 0.7, features=features, n_components=100, random_state=0)
        np.testing.assert_allclose(s.w, d.w, rtol=1e-6, atol=1e-8)
        np.testing.assert_array_equal(s.predict(sp.csr_matrix(X)), d.predict(X))


def test_sparse_selection_and_estimator(su_sparse, no_dense_copies):
    X, y, X_s, X_u, S_s, S_u = su_sparse
    grid = dict(prior=0.7, lams=(0.1,), gamma_scales=(0.3, 1.0), cv=2, n_iter=8, batch_size=256, block_size=32,
                random_state=0)
    sparse = tsgsu.select_params(S_s, S_u, **grid)
    dense = tsgsu.select_params(X_s, X_u, **grid)
    assert sparse.params == pytest.approx(dense.params)
    rows = sp.vstack([S_s, S_u], format="csr")
    s = np.r_[np.ones(S_s.shape[0]), np.zeros(S_u.shape[0])]
    clf = TSGSUClassifier(prior=0.7, **ARGS).fit(rows, s)
    assert clf.score(sp.csr_matrix(X), y) > 0.74
    dense_clf = TSGSUClassifier(prior=0.7, **ARGS).fit(np.r_[X_s, X_u], s)
    np.testing.assert_allclose(clf.model_.coef, dense_clf.model_.coef, rtol=1e-4, atol=1e-5)
