"""DSG's data-driven defaults (issue 14, point 3): the "auto" rules, early stopping in
the engine, sample weights (point 6), and dense-in-fact sparse input."""

import numpy as np
import pytest
import scipy.sparse as sp

from algorithms import DSGClassifier, DSGRegressor, dsg
from algorithms._boundary.fit_plan import auto_settings, check_sample_weight, validation_rows

SMALL = {"batch_size": 64, "block_size": 32, "random_state": 0}


# --- the choice rules ----------------------------------------------------------------------


@pytest.mark.parametrize(("n", "n_iter", "batch", "early"), [
    (1, 10, 1, False),            # tiny: one row per draw, the fewest iterations
    (100, 10, 100, False),        # small: a batch of n, 10 passes
    (9_999, 25, 4096, False),     # ceil(10 * 9999 / 4096) = 25, below HistGradientBoosting's threshold
    (10**4, 200, 4096, True),     # early stopping: the upper bound
    (409_600, 200, 4096, True),   # 200 iterations are two passes
    (10**7, 4883, 4096, True),    # large data: two passes over every row, ceil(2 * 10^7 / 4096)
])
def test_auto_settings_rules(n, n_iter, batch, early):
    plan = auto_settings(n)
    assert (plan.n_iter, plan.batch_size, plan.early_stopping) == (n_iter, batch, early)


def test_auto_settings_keep_explicit_values():
    plan = auto_settings(10**6, n_iter=7, batch_size=33)
    assert (plan.n_iter, plan.batch_size, plan.early_stopping) == (7, 33, False)  # explicit n_iter: no stopping
    assert auto_settings(10**6, n_iter=7, early_stopping=True).early_stopping
    assert not auto_settings(10**6, early_stopping=False).early_stopping
    assert auto_settings(50, batch_size=10).n_iter == 50  # ceil(10 * 50 / 10)


def test_explicit_n_iter_runs_exactly(cancer):
    X, y = cancer
    model = dsg.fit(X, y, n_iter=7, **SMALL)
    assert model.params["n_iter_done"] == 7 and model.n_blocks == 7
    assert model.params["early_stopping"] is False


def test_small_data_defaults_are_small(cancer):
    X, y = cancer
    clf = DSGClassifier(random_state=0).fit(X[:200], y[:200])
    assert clf.n_iter_ == 10 and clf.model_.params["batch_size"] == 200
    assert clf.score(X[200:], y[200:]) > 0.93


# --- early stopping -----------------------------------------------------------------------


def test_early_stopping_stops_and_records(cancer):
    X, y = cancer
    # Held-out loss that cannot improve by 50% for 3 iterations: the fit must stop early.
    from algorithms import _engine

    runs = []

    def recorded(sources, bk, settings, dtype):
        runs.append(_engine.loop._run(sources, bk, settings, dtype))
        return runs[-1]

    model = dsg.build(X, y, n_iter=200, early_stopping=True, n_iter_no_change=3, tol=0.5, **SMALL).solve(recorded)
    done = model.params["n_iter_done"]
    assert 4 <= done < 20
    losses = np.asarray(runs[0].validation_loss)  # read one iteration late: the last one unread
    assert losses.size == done - 1
    # The rule: the last 3 losses read did not improve by 50% on the best before them.
    assert np.all(losses[-3:] >= 0.5 * np.min(losses[:-3]))
    best = model.params["best_iteration"]  # the iterate of the best held-out loss is returned
    assert best == 1 + int(np.argmin(losses)) and model.n_blocks == best
    clf = DSGClassifier(n_iter=200, early_stopping=True, n_iter_no_change=3, tol=0.5, **SMALL).fit(X, y)
    assert clf.n_iter_ == done  # same seed, same split, same stop


def test_early_stopping_off_with_tol_zero_patience_large(cancer):
    X, y = cancer
    model = dsg.fit(X, y, n_iter=15, early_stopping=True, n_iter_no_change=1000, tol=0.0, **SMALL)
    assert model.params["n_iter_done"] == 15


def test_validation_rows_are_stratified_and_disjoint():
    labels = np.r_[np.zeros(90), np.ones(10)]
    train, held = validation_rows(100, 0.2, seed=3, labels=labels)
    assert np.intersect1d(train, held).size == 0 and train.size + held.size == 100
    assert held.size == 20 and labels[held].sum() == 2  # 10% positives in the held-out rows too


# --- sample weights -----------------------------------------------------------------------


def test_zero_weights_are_removed_rows(cancer):
    X, y = cancer
    w = np.ones(len(y))
    w[::5] = 0.0
    kept = w > 0
    a = DSGClassifier(n_iter=15, **SMALL).fit(X, y, sample_weight=w)
    b = DSGClassifier(n_iter=15, **SMALL).fit(X[kept], y[kept])
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def test_constant_weights_are_no_weights(cancer):
    X, y = cancer
    a = DSGRegressor(n_iter=10, **SMALL).fit(X, y.astype(float), sample_weight=np.full(len(y), 3.0))
    b = DSGRegressor(n_iter=10, **SMALL).fit(X, y.astype(float))
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def _overlapping(n=600, seed=0):
    """Two overlapping classes (the Bayes boundary is not a margin): weights matter."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = (X[:, 0] + 0.3 * X[:, 1] ** 2 + 0.8 * rng.standard_normal(n) > 0).astype(int)
    return X, y


WEIGHTED = {"n_iter": 30, "batch_size": 128, "block_size": 32, "gamma": 0.5}


def _mean_decision(X, y, Xt, seeds=range(3), **kw):
    return np.mean([dsg.decision_function(dsg.fit(X, y, random_state=s, **WEIGHTED, **kw), Xt) for s in seeds],
                   axis=0)


def test_weight_k_is_the_row_repeated_k_times():
    """Weight 3 on the rows of class 1 against those rows written three times: the same
    distribution of mini-batches, so close decision values (not equal: other draws),
    far closer than the unweighted fit's, and the same share of positive predictions."""
    X, y = _overlapping()
    times = np.where(y == 1, 3, 1)
    f_w = _mean_decision(X, y, X, sample_weight=times.astype(float))
    f_d = _mean_decision(np.repeat(X, times, axis=0), np.repeat(y, times), X)
    f_u = _mean_decision(X, y, X)
    assert np.mean(np.sign(f_w) == np.sign(f_d)) > 0.95
    assert np.mean(np.abs(f_w - f_d)) < 0.5 * np.mean(np.abs(f_u - f_d))
    assert abs(np.mean(f_w > 0) - np.mean(f_d > 0)) < 0.03 < np.mean(f_w > 0) - np.mean(f_u > 0)


def test_weights_shift_the_decision_toward_the_heavy_class():
    X, y = _overlapping()
    plain = _mean_decision(X, y, X)
    heavy = _mean_decision(X, y, X, sample_weight=np.where(y == 1, 5.0, 1.0))
    assert np.mean(heavy > 0) > np.mean(plain > 0) + 0.05
    assert np.mean(heavy) > np.mean(plain)


def test_held_out_rows_keep_their_weights(cancer, monkeypatch):
    from algorithms._engine import steps as _steps

    seen = []
    init = _steps._Monitor.__init__

    def spy(self, spec, bk, f0):
        init(self, spec, bk, f0)
        seen.append(spec.source.sample_weight)

    monkeypatch.setattr(_steps._Monitor, "__init__", spy)
    X, y = cancer
    w = np.where(np.arange(len(y)) % 2 == 0, 1.0, 4.0)
    dsg.fit(X, y, sample_weight=w, n_iter=5, early_stopping=True, **SMALL)
    held = seen[0]
    assert held is not None and set(np.unique(held)) == {1.0, 4.0}


@pytest.mark.parametrize(("weights", "error", "match"), [
    ([1.0, -1.0, 1.0], ValueError, "non-negative"),
    ([0.0, 0.0, 0.0], ValueError, "positive weight"),
    ([1.0, np.nan, 1.0], ValueError, "NaN"),
    ([1.0, 1.0], ValueError, r"shape \(3,\)"),
    (["a", "b", "c"], TypeError, "numeric"),
])
def test_bad_sample_weights_are_refused(weights, error, match):
    with pytest.raises(error, match=match):
        check_sample_weight(weights, 3)


def test_estimator_refuses_negative_weights(cancer):
    X, y = cancer
    with pytest.raises(ValueError, match="`sample_weight` must be non-negative"):
        DSGClassifier(n_iter=2, **SMALL).fit(X, y, sample_weight=-np.ones(len(y)))


# --- sparse input that is dense in fact ---------------------------------------------------


def test_dense_in_fact_csr_is_densified(cancer):
    from algorithms._boundary.validation import check_X
    from kbackends import resolve

    X, y = cancer
    bk = resolve("cpu")
    dense_ish = sp.csr_matrix(np.where(np.abs(X) > 1.0, 0.0, X))  # about 70% nonzero
    assert not sp.issparse(check_X(dense_ish, bk, None, accept_sparse=True))
    thin = sp.csr_matrix(np.where(np.abs(X) > 0.3, 0.0, X))  # about 25% nonzero
    assert sp.issparse(check_X(thin, bk, None, accept_sparse=True))
    a = dsg.fit(dense_ish, y, n_iter=5, **SMALL)
    b = dsg.fit(dense_ish.toarray(), y, n_iter=5, **SMALL)
    np.testing.assert_allclose(dsg.decision_function(a, X), dsg.decision_function(b, X), rtol=1e-5, atol=1e-5)


def test_probability_with_sample_weight_fits_the_weighted_rows(cancer):
    """probability=True holds rows out: the weights follow the rows kept for the fit."""
    X, y = cancer
    w = np.where(y == 1, 3.0, 1.0)
    clf = DSGClassifier(probability=True, n_iter=10, random_state=0).fit(X, y, sample_weight=w)
    p = clf.predict_proba(X)
    assert p.shape == (len(y), 2)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-5)
    assert (clf.predict(X) == y).mean() > 0.9
