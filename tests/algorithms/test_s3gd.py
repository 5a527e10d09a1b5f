"""S3GD / prox-SVRG / prox-SGD: the compiled loop against the reference, the method's
defining identity, and learning on real data against scikit-learn's optimum."""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

from algorithms import S3GDClassifier, load, s3gd
from kbackends import get_kernel, resolve
from kbackends.ops import anchor_accumulate
from kbackends.testing import host, make_backend, prox_sgd_problem


def _problem(seed=0):
    return prox_sgd_problem(n=60, d=5, m=7, k=3, seed=seed)


@pytest.mark.parametrize("method", ["s3gd", "svrg", "sgd"])
@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "smooth_hinge"])
@pytest.mark.parametrize("l1, l2", [(0.0, 0.01), (0.02, 0.0), (0.01, 0.005)])
@pytest.mark.parametrize("scaled", [False, True])  # importance weights on the rows' terms (norm sampling)
def test_numba_loop_matches_the_xp_reference(method, loss, l1, l2, scaled):
    X, cls, cw, Z, G, idx, gw = _problem()
    batches = np.random.default_rng(1).integers(0, X.shape[0], size=(3 * 4, 5))
    scale = np.random.default_rng(2).uniform(0.2, 2.0, X.shape[0]) if scaled else None
    w0 = np.full(X.shape[1] + 1, 0.1)
    out = {}
    for impl in ("numba", "xp"):
        bk = resolve("cpu") if impl == "numba" else make_backend("array_api_strict")
        run = get_kernel("prox_sgd_run", bk)
        args = [bk.asarray(a) for a in (X, cls, w0, batches, cw, Z, G, idx, gw)]
        out[impl] = [host(a) for a in run(*args, xp=bk.xp, method=method, loss=loss, beta=5.0, eta=0.3, l1=l1,
                                           l2=l2, k_in=4, n_outer=3, record_step=6,
                                           row_scale=None if scale is None else bk.asarray(scale))]
    for a, b in zip(out["numba"], out["xp"]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert np.any(out["numba"][0] != w0)


def test_s3gd_with_every_sample_an_anchor_is_svrg():
    """h_i = grad psi_i exactly when each sample is its own (only) anchor: Eq. (8) becomes SVRG's rule."""
    X, cls, cw, _, _, _, _ = _problem()
    n, d = X.shape
    idx = np.arange(n)[:, None]
    gw = np.ones((n, 1))
    Xa = np.hstack([X, np.ones((n, 1))])
    G = anchor_accumulate(idx + cls[:, None] * n, gw, Xa * (cw / n)[:, None], 2 * n).reshape(2, n, d + 1)
    batches = np.random.default_rng(2).integers(0, n, size=(20, 4))
    run = get_kernel("prox_sgd_run", resolve("cpu"))
    kw = dict(xp=np, loss="logistic", beta=1.0, eta=0.5, l1=0.0, l2=0.01, k_in=5, n_outer=4, record_step=7)
    a = run(X, cls, np.zeros(d + 1), batches, cw, X, G, idx, gw, method="s3gd", **kw)
    b = run(X, cls, np.zeros(d + 1), batches, cw, X[:0], G[:, :0], idx[:0], gw[:0], method="svrg", **kw)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-14)


def _appended_optimum(X, y, lam):
    n = X.shape[0]
    Xa = np.hstack([X, np.ones((n, 1))])
    w = LogisticRegression(C=1 / (2 * lam * n), fit_intercept=False, tol=1e-12, max_iter=5000).fit(Xa, y).coef_[0]
    return np.mean(np.logaddexp(0, -y * (Xa @ w))) + lam * w @ w


def test_learns_phishing_to_the_optimum_and_tracks_gradient_correlation(real_data):
    X, y, Xt, yt = real_data("phishing")
    lam = 1e-3
    fstar = _appended_optimum(X, y, lam)
    corr = {}
    for method in ("s3gd", "sgd"):
        seen = []
        model = s3gd.fit(X, y, step=1.0, max_epochs=6, random_state=0, method=method,
                         callback=lambda info: seen.append(info["grad_corr"]))
        corr[method] = np.mean(seen)
        gap = (s3gd.objective(model, X, y) - fstar) / fstar
        if method == "s3gd":
            assert gap < 1e-2, gap  # the paper's stability criterion, epsilon = 0.01
            acc = np.mean(s3gd.predict(model, Xt) == yt)
            ref = LogisticRegression(C=1 / (2 * lam * len(y))).fit(X, y).score(Xt, yt)
            assert acc > ref - 0.01, (acc, ref)
    assert corr["s3gd"] > corr["sgd"], corr


def test_backends_agree_and_the_model_round_trips(tmp_path, cancer):
    X, y = cancer
    X, y = X[:200], y[:200]
    kw = dict(step=0.1, max_epochs=1, n_anchors=10, random_state=3)
    cpu = s3gd.fit(X, y, **kw)
    import array_api_strict as xps

    strict = s3gd.fit(xps.asarray(X), xps.asarray(y), **kw)
    np.testing.assert_allclose(host(strict.coef), cpu.coef, rtol=1e-8, atol=1e-10)
    clf = S3GDClassifier(**kw).fit(xps.asarray(X), xps.asarray(y))  # array-API in, array-API out
    assert type(clf.predict(xps.asarray(X))) is type(xps.asarray(X)) and clf.coef_.shape == (1, X.shape[1])
    np.testing.assert_array_equal(host(clf.predict(xps.asarray(X))), s3gd.predict(cpu, X))
    path = cpu.save(tmp_path / "m.npz")
    again = load(path)
    np.testing.assert_array_equal(s3gd.decision_function(again, X), s3gd.decision_function(cpu, X))
    assert again.params["loss"] == "logistic" and again.algorithm == "s3gd"


def test_penalties_class_weight_and_multiclass(cancer):
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    clf = S3GDClassifier(step=0.5, max_epochs=20, n_anchors=20, random_state=0).fit(X, y)
    assert clf.coef_.shape == (3, 4) and clf.intercept_.shape == (3,)
    assert clf.score(X, y) > 0.85
    sparse = s3gd.fit(X, y == 0, penalty="l1", lam=0.05, step=0.5, max_epochs=20, random_state=0)
    assert np.sum(sparse.coef == 0) >= 1
    Xb, yb = cancer
    keep = np.concatenate([np.flatnonzero(yb == 0)[:30], np.flatnonzero(yb == 1)])
    for cw in (None, "balanced", {0: 5.0, 1: 1.0}):
        m = s3gd.fit(Xb[keep], yb[keep], class_weight=cw, step=0.1, max_epochs=5, random_state=0)
        assert np.isfinite(s3gd.objective(m, Xb[keep], yb[keep]))
    recall = {cw: np.mean(s3gd.predict(s3gd.fit(Xb[keep], yb[keep], class_weight=cw, step=0.1, max_epochs=5,
                                                  random_state=0, loss="squared_hinge"), Xb[keep])[:30] == 0)
              for cw in (None, "balanced")}
    assert recall["balanced"] >= recall[None]


def test_errors():
    X = np.random.default_rng(0).standard_normal((20, 3))
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match="`loss` must be one of"):
        s3gd.fit(X, y, loss="hinge")
    with pytest.raises(ValueError, match="`method` must be one of"):
        s3gd.fit(X, y, method="saga")
    with pytest.raises(ValueError, match="`l1_ratio` must be in"):
        s3gd.fit(X, y, penalty="elasticnet", l1_ratio=2.0)
    with pytest.raises(ValueError, match="`class_weight` names label 7"):
        s3gd.fit(X, y, class_weight={7: 1.0})
    with pytest.raises(TypeError, match="`callback` must be callable"):
        s3gd.fit(X, y, callback=3)
