"""TSGSU: SU classification on the engine, SU data, class-prior estimation, SU-SL."""

import numpy as np
import pytest

from algorithms import TSGSUClassifier, tsgsu
from kbackends.testing import make_backend


def _two_blobs(n, prior, sep, seed, d=2):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < prior, 1, -1)
    return rng.normal(size=(n, d)) + sep * y[:, None] / np.sqrt(d), y


@pytest.fixture(scope="module")
def magic(real_data):
    """magic04 (continuous, standardised on the training rows), the paper's protocol at a
    smaller size; +1 is the larger class (pi_+ > 1/2, the paper's convention)."""
    X, y, Xt, yt = real_data("magic04")
    mu, sd = X.mean(0), X.std(0)
    X, Xt = (X - mu) / sd, (Xt - mu) / sd
    X_s, X_u = tsgsu.make_su_data(X, y, 2000, 4000, random_state=0)
    return X_s, X_u, Xt, yt, float(np.mean(y == 1))


# --- make_su_data -----------------------------------------------------------------------------


def test_make_su_data_shapes_and_proportions():
    X, y = _two_blobs(60000, 0.7, 8.0, 0)
    X_s, X_u = tsgsu.make_su_data(X, y, 5000, 10000, random_state=1)
    assert X_s.shape == (5000, 2, 2) and X_u.shape == (10000, 2)
    # The blobs are far apart: the sign of the first coordinate is the label.
    side_s = np.sign(X_s[..., 0])
    assert np.all(side_s[:, 0] == side_s[:, 1])  # pairs share their class
    pi_s = 0.7**2 + 0.3**2
    assert np.mean(side_s[:, 0] > 0) == pytest.approx(0.7**2 / pi_s, abs=0.02)
    assert np.mean(X_u[:, 0] > 0) == pytest.approx(0.7, abs=0.015)
    # No point used twice without replacement.
    rows = np.concatenate([X_s.reshape(-1, 2), X_u])
    assert np.unique(rows, axis=0).shape[0] == rows.shape[0]


def test_make_su_data_prior_labels_and_errors():
    X, y = _two_blobs(4000, 0.5, 8.0, 0)
    X_s, X_u = tsgsu.make_su_data(X, (y > 0).astype(int), 300, 1500, prior=0.8, random_state=0)
    assert np.mean(X_u[:, 0] > 0) == pytest.approx(0.8, abs=0.04)
    X_s, X_u, y_s, y_u = tsgsu.make_su_data(X, y, 200, 300, random_state=5, return_labels=True)
    np.testing.assert_array_equal(np.sign(X_s[:, 0, 0]), y_s)
    np.testing.assert_array_equal(np.sign(X_u[:, 0]), y_u)
    a = tsgsu.make_su_data(X, y, 50, 60, random_state=3)
    b = tsgsu.make_su_data(X, y, 50, 60, random_state=3)
    np.testing.assert_array_equal(a[0], b[0])
    with pytest.raises(ValueError, match="replace=True"):
        tsgsu.make_su_data(X[:100], y[:100], 100, 100)
    assert tsgsu.make_su_data(X[:100], y[:100], 100, 100, replace=True)[0].shape == (100, 2, 2)
    with pytest.raises(ValueError, match="exactly 2 classes"):
        tsgsu.make_su_data(X, np.arange(len(y)) % 3, 10, 10)
    with pytest.raises(ValueError, match="`prior`"):
        tsgsu.make_su_data(X, y, 10, 10, prior=0.5)


# --- the risk and its gradient ----------------------------------------------------------------


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("correction", ["abs", "relu", "none"])
def test_derivative_hook_is_the_gradient_of_the_batch_risk(loss, correction):
    """g / batch size is d risk / d f on every point: compare with finite differences."""
    from algorithms._engine.state import Batch as _Batch

    xp = make_backend("cpu").xp
    rng = np.random.default_rng(0)
    risk = tsgsu._SURisk(prior=0.7, loss=loss, correction=correction)
    f_s, f_u = rng.normal(size=(7, 1)) * 2, rng.normal(size=(9, 1)) * 2
    sim, unl = _Batch(None, None, None, f_s.copy()), _Batch(None, None, None, f_u.copy())
    risk.derivatives([sim, unl], xp)
    h = 1e-6
    for batch, f, n in ((sim, f_s, 7), (unl, f_u, 9)):
        for i in range(n):
            up, down = f.copy(), f.copy()
            up[i] += h
            down[i] -= h
            args_up = (up, f_u) if batch is sim else (f_s, up)
            args_down = (down, f_u) if batch is sim else (f_s, down)
            numeric = (risk.risk(*args_up, xp) - risk.risk(*args_down, xp)) / (2 * h)
            assert batch.g[i, 0] / n == pytest.approx(numeric, abs=1e-6)


def _expected_g(risk, f_s, f_u, da, db):
    """Eq. (19)'s coefficients for given signs delta'(A), delta'(B) (squared loss)."""
    d = lambda z, t: 0.5 * t * (z * t - 1.0)  # noqa: E731
    c, ps, pp, pn = risk.c, risk.pi_s, risk.prior, 1.0 - risk.prior
    return (c * ps * (da * d(f_s, 1.0) - db * d(f_s, -1.0)),
            c * (pp * db * d(f_u, -1.0) - pn * da * d(f_u, 1.0)))


def test_smoothed_correction_takes_the_sign_of_the_running_average():
    from algorithms._engine.state import Batch as _Batch

    xp = make_backend("cpu").xp
    risk = tsgsu._SURisk(prior=0.7, loss="squared", correction="abs")
    rng = np.random.default_rng(1)
    # Second batch: A of the batch and of the average have opposite signs.
    f1 = (rng.normal(size=(5, 1)) - 3, 0.1 * rng.normal(size=(6, 1)) + 1)  # A > 0
    f2 = (0.1 * rng.normal(size=(5, 1)) + 1, rng.normal(size=(6, 1)) - 1)  # A < 0
    hook = risk.hook(0.9)
    hook([_Batch(None, None, None, f1[0]), _Batch(None, None, None, f1[1])], xp)  # first call: batch values
    sim, unl = _Batch(None, None, None, f2[0]), _Batch(None, None, None, f2[1])
    hook([sim, unl], xp)
    batch = risk.parts(*f2, xp)
    avg = [0.9 * p1 + 0.1 * p2 for p1, p2 in zip(risk.parts(*f1, xp), batch)]
    assert np.sign(avg[0]) != np.sign(batch[0])
    g_s, g_u = _expected_g(risk, *f2, np.sign(avg[0]), np.sign(avg[1]))
    np.testing.assert_allclose(sim.g, g_s)
    np.testing.assert_allclose(unl.g, g_u)


def test_correction_margin_ignores_negative_parts_within_the_noise():
    """A part below zero by less than `margin` standard errors keeps its sign (+1);
    below by more, the correction flips it."""
    from algorithms._engine.state import Batch as _Batch

    xp = make_backend("cpu").xp
    risk = tsgsu._SURisk(prior=0.7, loss="squared", correction="abs")
    rng = np.random.default_rng(2)
    for _ in range(1000):  # a batch whose A is negative and B positive
        f_s, f_u = rng.normal(size=(20, 1)), rng.normal(size=(30, 1)) + 0.5
        a, b, var_a, var_b = risk.parts(f_s, f_u, xp, with_variance=True)
        if a < 0 < b:
            break
    z = float(-a / np.sqrt(var_a))  # A sits z standard errors below zero
    for margin, da in ((1.2 * z, 1.0), (0.8 * z, -1.0), (0.0, -1.0)):
        sim, unl = _Batch(None, None, None, f_s), _Batch(None, None, None, f_u)
        risk.hook(0.0, margin)([sim, unl], xp)
        g_s, g_u = _expected_g(risk, f_s, f_u, da, 1.0)
        np.testing.assert_allclose(sim.g, g_s, err_msg=f"margin {margin}")
        np.testing.assert_allclose(unl.g, g_u, err_msg=f"margin {margin}")
    # The variances are those of the two batch means: check A's by Monte Carlo.
    draws = [risk.parts(rng.normal(size=(20, 1)), rng.normal(size=(30, 1)) + 0.5, xp)[0] for _ in range(4000)]
    k = 10000  # batches of 20 k and 30 k points: k times smaller variance of the means
    big = risk.parts(rng.normal(size=(20 * k, 1)), rng.normal(size=(30 * k, 1)) + 0.5, xp, with_variance=True)
    assert float(np.var(draws)) == pytest.approx(k * float(big[2]), rel=0.1)


def test_uncorrected_risk_is_the_supervised_risk():
    """Bao et al.'s unbiased risk: on SU data drawn from a labeled set it matches
    the mean squared loss (f y - 1)^2 / 4 on labeled data (Monte Carlo)."""
    xp = make_backend("cpu").xp
    X, y = _two_blobs(400000, 0.7, 1.0, 0)
    X_s, X_u = tsgsu.make_su_data(X, y, 60000, 120000, random_state=0)
    f = lambda A: np.tanh(A[:, :1] + 0.3 * A[:, 1:])  # noqa: E731
    risk = tsgsu._SURisk(prior=0.7, loss="squared", correction="none")
    su = risk.risk(f(X_s.reshape(-1, 2)), f(X_u), xp)
    supervised = np.mean((f(X)[:, 0] * y - 1) ** 2 / 4)
    assert su == pytest.approx(supervised, abs=0.01)
    # With the 0-1 loss it is the error rate (predict's tie rule: f = 0 is class -1).
    zero_one = tsgsu._SURisk(prior=0.7, loss="zero_one", correction="none")
    error = np.mean(np.where(f(X)[:, 0] > 0, 1, -1) != y)
    assert error > 0.1
    assert zero_one.risk(f(X_s.reshape(-1, 2)), f(X_u), xp) == pytest.approx(error, abs=0.01)


# --- fit --------------------------------------------------------------------------------------


def test_learns_on_real_data_and_beats_linear_su_sl(magic):
    """magic04 (non-linear): TSGSU beats the closed-form linear SU-SL on the same split."""
    X_s, X_u, Xt, yt, prior = magic
    model = tsgsu.fit(X_s, X_u, prior=prior, random_state=0)
    acc = float(np.mean(tsgsu.predict(model, Xt) == yt))
    linear = tsgsu.su_sl_fit(X_s, X_u, prior, lam=1e-2)
    acc_linear = float(np.mean(linear.predict(Xt) == yt))
    assert acc > 0.78 and acc > acc_linear + 0.01, (acc, acc_linear)
    assert model.algorithm == "tsgsu" and model.params["prior"] == prior
    assert set(np.unique(tsgsu.predict(model, Xt))) <= {-1, 1}


def test_pairs_and_pointwise_forms_agree_and_reproducible(magic):
    X_s, X_u, _, _, prior = magic
    small = {"prior": prior, "n_iter": 5, "batch_size": 64, "block_size": 8, "random_state": 3}
    a = tsgsu.fit(X_s, X_u, **small)
    b = tsgsu.fit(X_s.reshape(-1, X_s.shape[2]), X_u, **small)
    np.testing.assert_array_equal(a.coef, b.coef)
    c = tsgsu.fit(X_s, X_u, **{**small, "random_state": 4})
    assert not np.array_equal(a.coef, c.coef)


def test_float32_kept(magic):
    X_s, X_u, Xt, _, prior = magic
    model = tsgsu.fit(X_s.astype(np.float32), X_u.astype(np.float32), prior=prior, n_iter=3, random_state=0)
    assert model.dtype == "float32"
    assert tsgsu.decision_function(model, Xt.astype(np.float32)).dtype == np.float32


def test_fit_errors(magic):
    X_s, X_u, _, _, prior = magic
    with pytest.raises(ValueError, match="`prior`"):
        tsgsu.fit(X_s, X_u, prior=0.5)
    with pytest.raises(ValueError, match="`prior`"):
        tsgsu.fit(X_s, X_u, prior=1.2)
    with pytest.raises(ValueError, match="`correction`"):
        tsgsu.fit(X_s, X_u, prior=prior, correction="square")
    with pytest.raises(ValueError, match="`X_similar`"):
        tsgsu.fit(X_s[:, :1], X_u, prior=prior)
    with pytest.raises(ValueError, match="features"):
        tsgsu.fit(X_s, X_u[:, :3], prior=prior)
    with pytest.raises(ValueError, match="`lam`"):
        tsgsu.fit(X_s, X_u, prior=prior, lam=0.0)
    with pytest.raises(ValueError, match="`correction_smoothing`"):
        tsgsu.fit(X_s, X_u, prior=prior, correction_smoothing=1.0)


def test_matches_across_backends(magic, backend):
    X_s, X_u, Xt, _, prior = magic
    X_s, X_u = X_s[:40], X_u[:60]
    small = {"prior": prior, "n_iter": 3, "batch_size": 16, "block_size": 8, "random_state": 2, "gamma": 0.1, "dtype": "float64"}
    ref = tsgsu.fit(X_s, X_u, **small)
    got = tsgsu.fit(backend.asarray(X_s), backend.asarray(X_u), backend=backend, **small)
    np.testing.assert_allclose(np.asarray(backend.to_numpy(got.coef)), ref.coef, rtol=1e-6, atol=1e-8)
    pred = tsgsu.predict(got, backend.asarray(Xt[:50]))
    np.testing.assert_array_equal(np.asarray(backend.to_numpy(pred)), tsgsu.predict(ref, Xt[:50]))


# --- estimate_prior ---------------------------------------------------------------------------


@pytest.mark.parametrize("prior", [0.6, 0.75, 0.9])
def test_estimate_prior_on_a_synthetic_mixture(prior):
    X, y = _two_blobs(40000, prior, 5.0, 1, d=3)
    X_s, X_u = tsgsu.make_su_data(X, y, 3000, 6000, random_state=0)
    est, pi_s = tsgsu.estimate_prior(X_s, X_u, random_state=0, return_pi_s=True)
    assert est == pytest.approx(prior, abs=0.04)
    assert est == pytest.approx((np.sqrt(2 * pi_s - 1) + 1) / 2)


def test_estimate_prior_on_real_data(magic):
    X_s, X_u, _, _, prior = magic
    assert tsgsu.estimate_prior(X_s, X_u, random_state=0) == pytest.approx(prior, abs=0.06)


def test_estimate_prior_errors():
    # Similar and unlabeled points from one distribution: no class structure. (The
    # estimate is noise there: another draw can land just above 1/2.)
    rng = np.random.default_rng(1)
    same = rng.normal(size=(4000, 2))
    with pytest.raises(ValueError, match="look alike"):
        tsgsu.estimate_prior(same[:2000].reshape(-1, 2, 2), same[2000:], random_state=0)
    with pytest.raises(ValueError, match="too few"):
        tsgsu.estimate_prior(same[:10].reshape(-1, 2, 2), same[10:20])
    with pytest.raises(ValueError, match="`X_unlabeled`"):
        tsgsu.estimate_prior(same[:100].reshape(-1, 2, 2), same[:100, :1])


def test_fit_without_prior_estimates_it():
    X, y = _two_blobs(20000, 0.75, 5.0, 2)
    X_s, X_u = tsgsu.make_su_data(X, y, 1500, 3000, random_state=0)
    model = tsgsu.fit(X_s, X_u, n_iter=30, random_state=0)
    assert model.params["prior"] == pytest.approx(0.75, abs=0.04)
    assert np.mean(tsgsu.predict(model, X) == y) > 0.95


# --- label-free model selection ------------------------------------------------------------


def test_select_params_keeps_the_lowest_cross_validated_risk(magic):
    X_s, X_u, Xt, yt, prior = magic
    small = {"n_iter": 15, "block_size": 16, "batch_size": 256}
    sel = tsgsu.select_params(X_s, X_u, prior=prior, lams=(0.01, 1.0), gamma_scales=(0.3, 3.0), cv=2,
                              random_state=0, **small)
    assert set(sel.risks) == {(0.01, 0.3), (0.01, 3.0), (1.0, 0.3), (1.0, 3.0)}
    best = min(sel.risks, key=sel.risks.get)
    assert (sel.params["lam"], sel.params["gamma"]) == (best[0], best[1] * sel.gamma_median)
    assert sel.params["prior"] == prior and sel.params["n_iter"] == 15
    # The risk ranks like the accuracy it stands in for: the chosen pair beats the worst one.
    worst = max(sel.risks, key=sel.risks.get)

    def accuracy(lam, scale):
        m = tsgsu.fit(X_s, X_u, **{**sel.params, "lam": lam, "gamma": scale * sel.gamma_median})
        return float(np.mean(tsgsu.predict(m, Xt) == yt))

    assert accuracy(*best) > accuracy(*worst)
    again = tsgsu.select_params(X_s, X_u, prior=prior, lams=(0.01, 1.0), gamma_scales=(0.3, 3.0), cv=2,
                                random_state=0, **small)
    assert again.risks == sel.risks  # reproducible


def test_select_params_same_choice_on_every_backend(magic, backend):
    X_s, X_u, _, _, prior = magic
    X_s, X_u = X_s[:60], X_u[:120]
    small = {"prior": prior, "lams": (0.01, 1.0), "gamma_scales": (3.0,), "cv": 2, "n_iter": 3,  # 4 fits: the
             "batch_size": 16, "block_size": 8, "random_state": 1}  # simulator runs every kernel in Python
    ref = tsgsu.select_params(X_s, X_u, **small)
    got = tsgsu.select_params(backend.asarray(X_s), backend.asarray(X_u), backend=backend, **small)
    # the same grid point; gamma (the median heuristic times the chosen scale) to rounding:
    # a GPU sums the squared distances in cuBLAS's order (one ulp apart on the H100)
    assert {k: v for k, v in got.params.items() if k != "gamma"} == {k: v for k, v in ref.params.items() if k != "gamma"}
    assert got.params["gamma"] == pytest.approx(ref.params["gamma"], rel=1e-12)
    np.testing.assert_allclose(list(got.risks.values()), list(ref.risks.values()), rtol=1e-5, atol=1e-6)


def test_select_params_errors(magic):
    X_s, X_u, _, _, prior = magic
    with pytest.raises(TypeError, match="`lam` is chosen"):
        tsgsu.select_params(X_s, X_u, prior=prior, lam=0.1)
    with pytest.raises(ValueError, match="`cv`"):
        tsgsu.select_params(X_s, X_u, prior=prior, cv=1)
    with pytest.raises(ValueError, match="`lams`"):
        tsgsu.select_params(X_s, X_u, prior=prior, lams=(0.1, -1.0))
    with pytest.raises(ValueError, match="at least one"):
        tsgsu.select_params(X_s, X_u, prior=prior, gamma_scales=())
    with pytest.raises(ValueError, match="folds need"):
        tsgsu.select_params(X_s[:2], X_u, prior=prior, cv=3)


def test_su_scorer_drives_grid_search_without_labels(magic):
    from sklearn.model_selection import GridSearchCV

    X_s, X_u, Xt, yt, prior = magic
    X = np.concatenate([X_s.reshape(-1, X_s.shape[2]), X_u])
    s = np.r_[np.ones(2 * len(X_s)), np.zeros(len(X_u))]
    base = TSGSUClassifier(prior=prior, n_iter=20, random_state=0)
    search = GridSearchCV(base, {"lam": [0.01, 3.0]}, scoring=tsgsu.su_scorer, cv=2).fit(X, s)
    scores = search.cv_results_["mean_test_score"]
    assert search.best_params_["lam"] == [0.01, 3.0][int(np.argmax(scores))]
    clf = search.best_estimator_
    # On held-out SU data (drawn from the test rows) the scorer estimates the test accuracy
    # without labels; the estimator's own score stays the accuracy against labels.
    # (i.i.d. from the test rows; the standard error of the estimate is about 0.017 at this size)
    Xt_s, Xt_u = tsgsu.make_su_data(Xt, yt, 5000, 10000, prior=prior, replace=True, random_state=1)
    held_out = np.concatenate([Xt_s.reshape(-1, Xt_s.shape[2]), Xt_u])
    estimated = tsgsu.su_scorer(clf, held_out, np.r_[np.ones(2 * len(Xt_s)), np.zeros(len(Xt_u))])
    assert estimated == pytest.approx(1 - tsgsu.su_risk(clf.model_, Xt_s, Xt_u, loss="zero_one", correction="none"))
    accuracy = clf.score(Xt, yt)
    assert accuracy > 0.75 and estimated == pytest.approx(accuracy, abs=0.05)
    with pytest.raises(ValueError, match="two values"):
        tsgsu.su_scorer(clf, X, np.ones(len(X)))


def test_fit_without_intercept(magic):
    X_s, X_u, Xt, yt, prior = magic
    model = tsgsu.fit(X_s, X_u, prior=prior, fit_intercept=False, n_iter=30, random_state=0)
    assert np.all(model.intercept == 0) and model.params["fit_intercept"] is False
    assert np.mean(tsgsu.predict(model, Xt) == yt) > 0.75


# --- SU-SL --------------------------------------------------------------------------------------


def test_su_sl_is_the_minimiser_of_the_regularised_risk():
    xp = make_backend("cpu").xp
    X, y = _two_blobs(3000, 0.7, 2.0, 4)
    X_s, X_u = tsgsu.make_su_data(X, y, 300, 600, random_state=0)
    lam = 0.05
    model = tsgsu.su_sl_fit(X_s, X_u, 0.7, lam=lam)
    risk = tsgsu._SURisk(prior=0.7, loss="squared", correction="none")

    def objective(w):
        m = tsgsu.SUSLModel(w=w, features="linear")
        f_s = m.decision_function(X_s.reshape(-1, 2))[:, None]
        return risk.risk(f_s, m.decision_function(X_u)[:, None], xp) + lam / 2 * float(w[:-1] @ w[:-1])

    best = objective(model.w)
    for e in np.eye(3):
        assert objective(model.w + 1e-3 * e) > best and objective(model.w - 1e-3 * e) > best
    assert np.mean(model.predict(X) == y) > 0.9
    assert tsgsu.su_sl_fit(X_s, X_u, 0.7, features="rff", n_components=50, random_state=0).w.shape == (51,)


# --- the estimator ------------------------------------------------------------------------------


def test_classifier_fit_s_and_predict(magic):
    X_s, X_u, Xt, yt, prior = magic
    X = np.concatenate([X_s.reshape(-1, X_s.shape[2]), X_u])
    s = np.r_[np.ones(2 * len(X_s)), np.zeros(len(X_u))]
    clf = TSGSUClassifier(prior=prior, random_state=0).fit(X, s)
    direct = tsgsu.fit(X_s.reshape(-1, X_s.shape[2]), X_u, prior=prior, random_state=0)
    np.testing.assert_allclose(clf.decision_function(Xt[:100]), tsgsu.decision_function(direct, Xt[:100]))
    assert clf.score(Xt, yt) > 0.78
    with pytest.raises(ValueError, match="Only binary"):
        TSGSUClassifier(prior=prior).fit(X[:10], np.arange(10))
    with pytest.raises(ValueError, match="only 1 class"):
        TSGSUClassifier(prior=prior).fit(X[:10], np.ones(10))
