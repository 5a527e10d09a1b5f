"""TSGS3VM: the engine with a labeled and an unlabeled source."""

import numpy as np
import pytest

from algorithms import tsgs3vm
from kbackends.losses import UNLABELED_LOSSES
from kbackends.testing import make_backend


@pytest.fixture(scope="module")
def semi(cancer):
    X, y = cancer
    rng = np.random.default_rng(0)
    labeled = rng.random(len(y)) < 0.1
    return X, y, np.where(labeled, y, -1)


@pytest.mark.parametrize("loss", ["shg", "sshg", "ramp", "da"])
def test_learns_from_ten_percent_labels(semi, loss):
    X, y, y_semi = semi
    model = tsgs3vm.fit(X, y_semi, unlabeled_loss=loss, C_star=0.5, random_state=0)
    assert model.algorithm == "tsgs3vm" and model.params["n_labeled"] == int((y_semi != -1).sum())
    assert (tsgs3vm.predict(model, X) == y).mean() > 0.9


def test_x_unlabeled_form_equals_the_marked_rows_form(semi):
    X, y, y_semi = semi
    lab = y_semi != -1
    a = tsgs3vm.fit(X, y_semi, random_state=0, n_iter=5)
    b = tsgs3vm.fit(X[lab], y[lab], X_unlabeled=X[~lab], random_state=0, n_iter=5)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-10)


def test_balance_keeps_the_unlabeled_mean_at_the_labeled_balance(semi):
    X, y, y_semi = semi
    target = np.mean(np.where(y_semi[y_semi != -1] == 1, 1.0, -1.0))
    model = tsgs3vm.fit(X, y_semi, C_star=2.0, random_state=0)
    f = tsgs3vm.decision_function(model, X[y_semi == -1])
    assert abs(f.mean() - target) < 0.15


def test_default_c_star_and_one_pass(semi):
    X, y, y_semi = semi
    model = tsgs3vm.fit(X, y_semi, batch_size=64, random_state=0)
    n_l, n_u = model.params["n_labeled"], model.params["n_unlabeled"]
    assert model.params["C_star"] == pytest.approx(n_l / n_u)
    assert model.params["n_iter"] == int(np.ceil(n_u / 64))


def test_matches_across_backends(semi, backend):
    X, y, y_semi = semi
    small = {"n_iter": 3, "batch_size": 16, "block_size": 8, "random_state": 2, "gamma": 0.05, "dtype": "float64"}
    ref = tsgs3vm.fit(X, y_semi, **small)
    got = tsgs3vm.fit(backend.asarray(X), backend.asarray(y_semi), backend=backend, **small)
    np.testing.assert_allclose(np.asarray(backend.to_numpy(got.coef)), ref.coef, rtol=1e-6, atol=1e-8)


def test_unlabeled_losses_derivatives_match_finite_differences():
    xp = make_backend("cpu").xp
    f = np.array([-1.7, -0.6, -0.2, 0.05, 0.4, 0.9, 1.3])
    for loss in UNLABELED_LOSSES.values():
        h = 1e-6
        numeric = (loss.value(f + h, None, xp) - loss.value(f - h, None, xp)) / (2 * h)
        np.testing.assert_allclose(loss.derivative(f, None, xp), numeric, atol=1e-5, err_msg=loss.name)


def test_without_unlabeled_rows_it_is_the_supervised_svm(semi):
    X, y, _ = semi
    model = tsgs3vm.fit(X, y, n_iter=20, random_state=0)
    assert model.params["C_star"] == 0.0 and model.params["n_unlabeled"] == 0
    assert (tsgs3vm.predict(model, X) == y).mean() > 0.95


def test_multiclass_is_one_vs_rest_with_shared_features():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    rng = np.random.default_rng(0)
    y_semi = np.where(rng.random(len(y)) < 0.2, y, -1)
    model = tsgs3vm.fit(X, y_semi, gamma=0.02, C_star=0.2, n_iter=40, random_state=0)
    assert model.task == "ovr" and model.coef.shape[1] == 10
    assert (tsgs3vm.predict(model, X) == y).mean() > 0.9


def test_errors(semi):
    X, y, y_semi = semi
    with pytest.raises(ValueError, match="only one class"):
        tsgs3vm.fit(X, np.where(y_semi == -1, -1, 1))
    with pytest.raises(ValueError, match="`unlabeled_loss` must be one of"):
        tsgs3vm.fit(X, y_semi, unlabeled_loss="hinge")


def test_feature_budget_caps_the_blocks(semi):
    X, y, y_semi = semi
    model = tsgs3vm.fit(X, y_semi, batch_size=32, block_size=16, feature_budget=40, random_state=0)
    assert model.params["n_iter"] > 3 and model.n_blocks == 3  # ceil(40 / 16)
    assert (tsgs3vm.predict(model, X) == y).mean() > 0.9
    sqrt_model = tsgs3vm.fit(X, y_semi, block_size=8, feature_budget="sqrt", random_state=0)
    assert sqrt_model.params["feature_budget"] == int(np.ceil(np.sqrt(sqrt_model.params["n_unlabeled"])))


def test_the_estimator_takes_unlabeled_label_for_libsvm_labels():
    """TSGS3VMClassifier().fit(X, y) with y in {-1, +1} (LIBSVM's labels) took every -1 row
    for an unlabelled one; unlabeled_label (tsgs3vm.fit's) names another marker."""
    from sklearn.base import clone

    from algorithms import TSGS3VMClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1, -1)
    y_semi = np.where(np.arange(600) < 100, y, 0)
    clf = TSGS3VMClassifier(unlabeled_label=0, random_state=0).fit(X, y_semi)
    assert clf.classes_.tolist() == [-1, 1] and clf.score(X, y) > 0.8
    assert clone(clf).get_params()["unlabeled_label"] == 0
    with pytest.raises(ValueError, match="`unlabeled_label`=-1"):
        TSGS3VMClassifier(random_state=0).fit(X, y)
