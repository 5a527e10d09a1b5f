"""S3GD as users call it (issue 14): the default step and stopping rule, sample weights
with scikit-learn's semantics, scipy.sparse input (never densified)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning

from algorithms import S3GDClassifier, s3gd
from algorithms._boundary.fit_plan import class_row_weights as row_weights
from algorithms.bench.protocols import appended, logistic_objective, logistic_optimum
from algorithms.bench.s3gd_defaults import heavy_tailed_problem
from algorithms.s3gd._setup import (
    DEFAULT_TOL,
    NORM_SAMPLING_SPREAD,
    choose_defaults,
    norm_sampling,
    row_statistics,
)
from kbackends import to_numpy

STATS = {"method": "s3gd", "max_sq": 5.0, "mean_sq": 3.0, "nnz_row": 20, "n_features": 20, "n_anchors": 100,
         "batch_size": 10, "loss": "logistic", "beta": 10.0, "l2": 1e-3, "lazy": False}


def test_choose_defaults_follows_the_data_and_keeps_explicit_arguments():
    step, tol, k_in = choose_defaults("auto", "auto", None, **STATS)
    L = 0.25 * (5.0 / 10 + 0.9 * 3.0) + 2e-3
    assert step == pytest.approx(1 / (2 * L)) and tol == DEFAULT_TOL and k_in == 20
    # features 10x larger: squared norms 100x, the step about 100x smaller
    big = choose_defaults("auto", "auto", None, **{**STATS, "max_sq": 500.0, "mean_sq": 300.0})[0]
    assert 90 < step / big < 101
    # the loss's curvature: squared hinge 4x the logistic's
    sq = choose_defaults("auto", "auto", None, **{**STATS, "loss": "squared_hinge", "l2": 0.0})[0]
    lo = choose_defaults("auto", "auto", None, **{**STATS, "l2": 0.0})[0]
    assert lo / sq == pytest.approx(4.0)
    # explicit arguments: used as given, and no early stop unless asked for
    assert choose_defaults(0.7, "auto", 3, **STATS) == (0.7, None, 3)
    assert choose_defaults(0.7, 1e-4, None, **STATS)[1:] == (1e-4, 20)
    assert choose_defaults("auto", None, None, **STATS)[1] is None
    # sparse rows with many columns: longer inner loops, so the O(m d) snapshot is paid
    # about once per as much work in steps; the baselines keep theirs
    wide = {**STATS, "nnz_row": 50, "n_features": 50_000, "lazy": True}
    k_wide = choose_defaults("auto", "auto", None, **wide)[2]
    assert k_wide > 1000 and k_wide == pytest.approx(3 * 100 * 50_001 / (20 * 51 + 10 * 51), rel=1e-3)
    assert choose_defaults("auto", "auto", None, **{**wide, "method": "svrg"})[2] == 50


def test_defaults_adapt_to_the_feature_scale_and_warn_when_it_is_far_from_one(cancer):
    X, y = cancer
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ConvergenceWarning)  # the nearly separable set runs to max_epochs
        clf = S3GDClassifier(random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.97
    assert isinstance(clf.n_iter_, int) and 0 < clf.n_iter_ <= 10  # whole epochs, at most max_epochs
    # the same data 1000x larger: the step shrinks with it (the margins are the same)...
    with pytest.warns(UserWarning, match="Standardise X"):
        big = S3GDClassifier(random_state=0).fit(1000.0 * X, y)
    assert big.model_.params["step"] == pytest.approx(clf.model_.params["step"] / 1e6, rel=0.05)
    assert big.score(1000.0 * X, y) > 0.9
    # ... and an explicit step is taken as given, for the whole max_epochs, without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = s3gd.fit(X, y, step=0.05, max_epochs=2, random_state=0)
    assert m.params["step"] == 0.05 and m.params["epochs"] == [pytest.approx(2.0, abs=0.2)]


def test_early_stop_ends_on_a_flat_objective_and_keeps_the_best_iterate(cancer):
    X, y = cancer
    seen = []
    m = s3gd.fit(X, y, tol=0.5, max_epochs=10, random_state=0, callback=lambda info: seen.append(info["epoch"]))
    assert m.params["epochs"][0] < 3  # an epoch improving F by less than 50 % stops it
    assert seen[-1] == pytest.approx(m.params["epochs"][0])
    full = s3gd.fit(X, y, tol=None, max_epochs=3, random_state=0)
    assert full.params["epochs"][0] >= 3


def test_norm_sampling_keeps_the_batch_average_unbiased_and_bounds_the_step_constant():
    rng = np.random.default_rng(0)
    n = 200
    X = rng.standard_t(2, size=(n, 3))
    weights = rng.integers(0, 3, n).astype(np.float64)
    weights /= weights.mean()
    X[7] *= 20.0  # one row far out: the uniform step would rest on it
    sq, mean_sq, _ = row_statistics(X, np, weights)
    assert sq[weights > 0].max() > NORM_SAMPLING_SPREAD * mean_sq
    draw, scale, max_sq = norm_sampling(sq, mean_sq, weights)
    q = draw / draw.sum()
    terms = rng.standard_normal((n, 4))  # any per-row gradient terms
    # drawn with probabilities q and weighted by r: the weighted mean (1/n) sum_i s_i g_i in expectation
    np.testing.assert_allclose(q @ (scale[:, None] * terms), weights @ terms / n, rtol=1e-12)
    assert draw.mean() == pytest.approx(1.0) and np.all(draw[weights == 0] == 0) and np.all(scale <= 2.0)
    live = weights > 0
    assert max_sq == pytest.approx(np.max((scale * sq)[live])) and max_sq < 2 * mean_sq < sq[live].max()
    # rows of equal norms, or none far from the mean: drawn by their weights alone, no importance weights
    same = norm_sampling(np.full(n, 4.0), 4.0, weights)
    assert same[0] is weights and same[1] is None and same[2] == 4.0
    mild = np.where(np.arange(n) == 3, 0.9 * NORM_SAMPLING_SPREAD, 1.0)
    uniform = norm_sampling(mild, 1.0, weights)
    assert uniform[0] is weights and uniform[1] is None and uniform[2] == mild[weights > 0].max()


def test_heavy_tailed_rows_do_not_dictate_the_automatic_step():
    """Standardised t(2) features (rows up to ~100 standard deviations long): the default
    draws rows by their norms, so its step rests on the mean norm, and it reaches the
    optimum within the stopping rule; the step of the longest row with uniform draws
    crawls at the same number of epochs."""
    X, y, _, _ = heavy_tailed_problem(n=10_000, n_test=1, seed=1)
    Xa = appended(X)
    fstar = logistic_optimum(Xa, y)

    def gap(model):
        return (logistic_objective(Xa, y, np.concatenate([model.coef[0], model.intercept])) - fstar) / fstar

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        auto = s3gd.fit(X, y, random_state=0)
    epochs = auto.params["epochs"][0]
    assert gap(auto) < 3e-3 and epochs < 10
    sq, mean_sq, _ = row_statistics(X, np, np.ones(len(y)))
    assert sq.max() > 200 * mean_sq  # the set is as heavy-tailed as meant
    uniform_step = 1.0 / (2 * (0.25 * (sq.max() / 10 + 0.9 * mean_sq) + 2e-3))  # the longest row's rule
    uniform = s3gd.fit(X, y, step=uniform_step, max_epochs=epochs, random_state=0)
    assert gap(uniform) > 3 * gap(auto)


def test_the_epoch_cap_warns_when_it_ends_the_fit_before_tol(cancer):
    X, y = cancer
    with pytest.warns(ConvergenceWarning, match="max_epochs=1 ended the fit"):
        clf = S3GDClassifier(max_epochs=1, tol=1e-9, random_state=0).fit(X, y)
    assert clf.n_iter_ == 1 and isinstance(clf.n_iter_, int)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        S3GDClassifier(max_epochs=1, tol=None, random_state=0).fit(X, y)  # no stopping rule: nothing to warn of
        stopped = S3GDClassifier(tol=0.5, random_state=0).fit(X, y)  # the rule ended it
        s3gd.fit(X, y, max_epochs=1, tol=1e-9, random_state=0, callback=lambda info: True)  # the callback ended it
    assert isinstance(stopped.n_iter_, int) and 1 <= stopped.n_iter_ < 10
    assert stopped.n_iter_ == round(stopped.model_.params["epochs"][0])
    Xi, yi = load_iris(return_X_y=True)
    with pytest.warns(ConvergenceWarning, match="3 of the 3 one-vs-rest problems"):
        s3gd.fit((Xi - Xi.mean(0)) / Xi.std(0), yi, max_epochs=1, tol=1e-9, random_state=0)


def _weighted_problem(n=120, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0, 1, -1)
    return X, y, rng.integers(0, 4, size=n).astype(np.float64)


@pytest.mark.parametrize("method", ["s3gd", "svrg", "sgd"])
def test_zero_weight_is_a_removed_row(method):
    X, y, sw = _weighted_problem()
    kw = dict(method=method, step=0.2, max_epochs=3, n_anchors=10, kmeans_sample=None, random_state=0)
    keep = sw > 0
    a = s3gd.fit(X, y, sample_weight=sw, **kw)
    b = s3gd.fit(X[keep], y[keep], sample_weight=sw[keep], **kw)
    # the same rows drawn, the same anchors: equal up to summation order
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(a.intercept, b.intercept, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("method, step, gap, coef_tol", [("svrg", 1.0, 1e-9, 1e-5), ("s3gd", 0.2, 5e-3, 0.15)])
def test_integer_weights_act_as_repeated_rows(method, step, gap, coef_tol):
    X, y, sw = _weighted_problem()
    sw[sw == 0] = 1.0
    rows = np.repeat(np.arange(len(y)), sw.astype(int))
    lam = 1e-2
    kw = dict(method=method, lam=lam, step=step, max_epochs=40, n_anchors=10, random_state=0)
    w = s3gd.fit(X, y, sample_weight=sw, **kw)
    r = s3gd.fit(X[rows], y[rows], **kw)
    # the weighted objective is the repeated rows' one
    fw = s3gd.objective(w, X, y, sw)
    assert fw == pytest.approx(s3gd.objective(w, X[rows], y[rows]), rel=1e-12)
    # stochastic fits of one objective: both near its optimum, close coefficients
    Xa = np.hstack([X, np.ones((len(y), 1))])
    ref = LogisticRegression(C=1.0 / (2 * lam * sw.sum()), fit_intercept=False, tol=1e-12, max_iter=10_000)
    w_star = ref.fit(Xa, y, sample_weight=sw).coef_[0]
    f_star = float(sw @ np.logaddexp(0.0, -y * (Xa @ w_star)) / sw.sum() + lam * w_star @ w_star)
    assert (fw - f_star) / f_star < gap
    assert (s3gd.objective(r, X[rows], y[rows]) - f_star) / f_star < gap
    np.testing.assert_allclose(w.coef, r.coef, atol=coef_tol)


def test_class_weight_multiplies_sample_weight():
    X, y, sw = _weighted_problem()
    sw[sw == 0] = 1.0
    rows = np.repeat(np.arange(len(y)), sw.astype(int))
    kw = dict(step=0.1, max_epochs=3, n_anchors=10, random_state=0)
    # class weights multiply sample weights (scikit-learn's rule): equal row weights, equal fits
    classes, y_index = np.array([-1, 1]), (y > 0).astype(int)
    np.testing.assert_allclose(row_weights({1: 3.0}, classes, y_index, sw),
                               row_weights(None, classes, y_index, sw * np.where(y > 0, 3.0, 1.0)))
    a = s3gd.fit(X, y, sample_weight=sw, class_weight={1: 3.0}, **kw)
    b = s3gd.fit(X, y, sample_weight=sw * np.where(y > 0, 3.0, 1.0), **kw)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-10)
    # "balanced" counts the weights: weights k and k copies balance alike
    weighted = row_weights("balanced", classes, y_index, sw)
    copies = row_weights("balanced", classes, y_index[rows], np.ones(rows.size))
    np.testing.assert_allclose((weighted / sw / weighted.sum())[rows], copies / copies.sum(), rtol=1e-12)
    skew = sw * np.where(y > 0, 4.0, 1.0)  # class totals of the weights 4:1 where the counts are ~1:1
    counted = row_weights("balanced", classes, y_index, skew)
    np.testing.assert_allclose(np.bincount(y_index, weights=counted), [len(y) / 2, len(y) / 2])


@pytest.mark.parametrize("method, gap", [("svrg", 1e-6), ("s3gd", 2e-3)])
def test_weighted_objective_reaches_logistic_regressions_weighted_optimum(method, gap):
    X, y, sw = _weighted_problem(n=200, d=3, seed=1)
    lam = 1e-2
    Xa = np.hstack([X, np.ones((len(y), 1))])
    ref = LogisticRegression(C=1.0 / (2 * lam * sw.sum()), fit_intercept=False, tol=1e-12, max_iter=10_000)
    w_star = ref.fit(Xa, y, sample_weight=sw).coef_[0]

    def F(w):
        return float(sw @ np.logaddexp(0.0, -y * (Xa @ w)) / sw.sum() + lam * w @ w)

    m = s3gd.fit(X, y, sample_weight=sw, lam=lam, method=method, step=0.5 if method == "svrg" else 0.05,
                 max_epochs=60, n_anchors=20, random_state=0)
    w = np.concatenate([m.coef[0], m.intercept])
    assert s3gd.objective(m, X, y, sw) == pytest.approx(F(w), rel=1e-10)
    assert (F(w) - F(w_star)) / F(w_star) < gap
    if method == "svrg":
        np.testing.assert_allclose(w, w_star, atol=1e-3)


def test_sample_weight_errors_and_the_estimator():
    X, y, sw = _weighted_problem(n=40)
    with pytest.raises(ValueError, match="`sample_weight` must be non-negative"):
        s3gd.fit(X, y, sample_weight=-sw)
    with pytest.raises(ValueError, match="zero for every row"):
        S3GDClassifier().fit(X, y, sample_weight=np.zeros(len(y)))
    with pytest.raises(ValueError, match=r"`sample_weight` must have shape \(40,\)"):
        s3gd.fit(X, y, sample_weight=sw[:5])
    clf = S3GDClassifier(step=0.2, max_epochs=2, random_state=0)
    a = clf.fit(X, y, sample_weight=list(sw + 1)).coef_
    b = s3gd.fit(X, y, sw + 1, step=0.2, max_epochs=2, random_state=0).coef
    np.testing.assert_array_equal(a, b)
    assert "_sample_weight" not in vars(clf)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_rows_give_the_dense_fit(cancer, fmt):
    X, y = cancer
    Xs = sp.random(300, 40, density=0.1, random_state=0, format="csr") + 0  # keeps sparse structure
    Xs.data = np.random.default_rng(0).standard_normal(Xs.nnz)
    y = np.where(Xs @ np.linspace(-1, 1, 40) > 0, 1, 0)
    Xd = Xs.toarray()
    S = Xs.asformat(fmt)
    for method in ("sgd", "svrg"):  # same loop, same rows: the sparse path is the dense one
        kw = dict(method=method, step=0.3, max_epochs=2, random_state=0)
        np.testing.assert_allclose(s3gd.fit(S, y, **kw).coef, s3gd.fit(Xd, y, **kw).coef, rtol=1e-9, atol=1e-12)
    dense = S3GDClassifier(random_state=0, n_anchors=20).fit(Xd, y)
    sparse = S3GDClassifier(random_state=0, n_anchors=20).fit(S, y)
    assert abs(s3gd.objective(sparse.model_, S, y) - s3gd.objective(dense.model_, Xd, y)) < 1e-2
    assert abs(sparse.score(S, y) - dense.score(Xd, y)) <= 0.02
    np.testing.assert_array_equal(sparse.predict(S), sparse.predict(Xd))


def test_sparse_wide_data_is_never_densified():
    import tracemalloc

    rng = np.random.default_rng(0)
    X = sp.random(400, 200_000, density=2e-4, random_state=0, format="csr")  # dense: 640 MB
    y = np.where(X @ rng.standard_normal(200_000) > 0, 1, -1)
    tracemalloc.start()
    clf = S3GDClassifier(n_anchors=8, max_epochs=2, random_state=0).fit(X, y)
    clf.predict(X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 80e6  # anchors (8, d) and G (2, 8, d + 1): ~40 MB
    assert clf.score(X, y) > 0.8


def test_sparse_input_refused_clearly_off_the_sparse_backends():
    # cpu, cudasim and cuda (cupyx) take CSR X (tests/algorithms/test_cuda_sparse_fits.py)
    X, y, _ = _weighted_problem(n=20)
    import array_api_strict as xps

    from kbackends.testing import make_backend

    X = np.where(np.abs(X) < 1.0, 0.0, X)  # sparse in fact (half or more stored would be made dense)
    with pytest.raises(TypeError, match="backend='cpu'"):
        s3gd.fit(sp.csr_matrix(X), xps.asarray(y), backend=make_backend("array_api_strict"))


@pytest.mark.cuda
def test_sample_weights_on_the_cuda_backend(gpu):
    X, y, sw = _weighted_problem(n=60, d=3)
    for method in ("s3gd", "svrg"):
        kw = dict(method=method, step=0.2, max_epochs=2, n_anchors=6, random_state=0, dtype="float64")
        cpu = s3gd.fit(X, y, sample_weight=sw, **kw)
        dev = s3gd.fit(gpu.asarray(X), gpu.asarray(y), sample_weight=sw, backend=gpu, **kw)
        np.testing.assert_allclose(np.asarray(to_numpy(dev.coef)), cpu.coef, rtol=1e-7, atol=1e-9)


def test_the_automatic_inner_loop_is_at_most_one_pass_on_very_wide_sparse_data():
    """The snapshot-cost rule asks for ~430,000 inner steps on 3,000 rows x 300,000 sparse
    columns (1,400 passes in one loop, far past max_epochs): the loop is bounded by one pass
    over the rows, and the fit keeps to its epoch budget."""
    import scipy.sparse as sp

    from algorithms import s3gd

    rng = np.random.default_rng(0)
    n, d = 3000, 300_000
    # six stored values a row, built from their coordinates (scipy.sparse.random draws its
    # positions from all n * d cells: over a minute at this size)
    rows, cols = np.repeat(np.arange(n), 6), rng.integers(0, d, 6 * n)
    X = sp.csr_matrix((rng.normal(size=6 * n), (rows, cols)), shape=(n, d))
    y = np.where(X @ rng.normal(size=d) > 0, 1, 0)
    model = s3gd.fit(X, y, max_epochs=3, random_state=0)
    assert model.params["inner_iter"] == n // 10
    assert np.all(np.isfinite(np.asarray(model.coef)))
