"""predict_proba: the logistic loss's log-odds turned into probabilities (binary sigmoid,
one-vs-rest normalised sigmoids, softmax), on the models (so it survives save / load)
and on the estimators, which show it only when it is meaningful."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split

from algorithms import (
    DSGClassifier,
    S3GDClassifier,
    SBPClassifier,
    TSGS3VMClassifier,
    load,
)


def _standardised(X, y):
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


@pytest.fixture(scope="module")
def binary():
    X, y = load_breast_cancer(return_X_y=True)
    return _standardised(X, np.where(y == 1, "benign", "malignant"))


@pytest.fixture(scope="module")
def multiclass():
    X, y = load_digits(n_class=4, return_X_y=True)
    return _standardised(X, y)


def _check(clf, X_test, y_test):
    P = np.asarray(clf.predict_proba(X_test))
    assert P.shape == (X_test.shape[0], len(clf.classes_))
    assert np.all((P >= 0) & (P <= 1))
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(clf.classes_[np.argmax(P, axis=1)], clf.predict(X_test))
    # better than the constant prediction of the class frequencies
    freq = np.mean(y_test[:, None] == clf.classes_[None, :], axis=0)
    constant = log_loss(y_test, np.tile(freq, (len(y_test), 1)), labels=clf.classes_)
    assert log_loss(y_test, P, labels=clf.classes_) < 0.5 * constant
    return P


@pytest.mark.parametrize("make", [
    lambda: DSGClassifier(loss="logistic", gamma=0.02, n_iter=30, batch_size=128, random_state=0),
    lambda: S3GDClassifier(loss="logistic", max_epochs=5, random_state=0),
], ids=["dsg", "s3gd"])
def test_logistic_binary_and_multiclass(make, binary, multiclass, tmp_path):
    for X, X_test, y, y_test in (binary, multiclass):
        clf = make().fit(X, y)
        P = _check(clf, X_test, y_test)
        clf.model_.save(tmp_path / "m.npz")  # the model owns predict_proba: it survives save / load
        np.testing.assert_allclose(load(tmp_path / "m.npz").predict_proba(X_test), P, rtol=1e-5, atol=1e-6)


def test_binary_is_the_sigmoid_of_the_decision(binary):
    X, X_test, y, _ = binary
    clf = DSGClassifier(loss="logistic", n_iter=5, batch_size=64, random_state=0).fit(X, y)
    f = clf.decision_function(X_test)
    np.testing.assert_allclose(clf.predict_proba(X_test)[:, 1], 1 / (1 + np.exp(-f)), rtol=1e-5)


def test_hinge_losses_have_no_predict_proba(binary):
    X, X_test, y, _ = binary
    for est in (DSGClassifier(), DSGClassifier(loss="squared_hinge"), S3GDClassifier(loss="smooth_hinge"),
                SBPClassifier(), TSGS3VMClassifier()):
        assert not hasattr(est, "predict_proba"), type(est).__name__
    clf = DSGClassifier(n_iter=3, batch_size=64, random_state=0).fit(X, y)
    assert not hasattr(clf, "predict_proba")
    with pytest.raises(ValueError, match="CalibratedClassifierCV"):
        clf.model_.predict_proba(X_test)


def test_hinge_calibrated_by_sklearn(binary):
    """The documented way for hinge-type losses: Platt scaling on held-out folds."""
    from sklearn.calibration import CalibratedClassifierCV

    X, X_test, y, y_test = binary
    cal = CalibratedClassifierCV(DSGClassifier(gamma=0.02, n_iter=20, batch_size=128, random_state=0), cv=3)
    _check(cal.fit(X, y), X_test, y_test)


@pytest.mark.parametrize("make", [
    lambda: __import__("algorithms").DSGClassifier(loss="logistic", n_iter=10, random_state=0),
    lambda: __import__("algorithms").DSGClassifier(probability=True, n_iter=10, random_state=0),
    lambda: __import__("algorithms").SBPClassifier(probability=True, n_iter=200, random_state=0),
], ids=["dsg-logistic", "dsg-probability", "sbp-probability"])
def test_predict_log_proba_is_the_log_of_predict_proba(make):
    """scikit-learn's habit: predict_log_proba wherever predict_proba exists."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = np.array(["a", "b", "c"])[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5).astype(int)]
    clf = make().fit(X, y)
    np.testing.assert_array_equal(clf.predict_log_proba(X), np.log(clf.predict_proba(X)))


def test_predict_log_proba_is_absent_where_predict_proba_is():
    from algorithms import DSGClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    clf = DSGClassifier(n_iter=5, random_state=0).fit(X, (X[:, 0] > 0).astype(int))
    assert not hasattr(clf, "predict_proba") and not hasattr(clf, "predict_log_proba")
