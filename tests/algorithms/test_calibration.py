"""probability=True: Platt's sigmoid fitted on held-out rows gives hinge-type classifiers
predict_proba (issue 14, point 6), kept by save / load."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.metrics import brier_score_loss, log_loss
from sklearn.model_selection import train_test_split

from algorithms import DSGClassifier, SBPClassifier, TSGS3VMClassifier, dsg, load
from algorithms._models.calibration import calibrate, calibration_split, platt_sigmoid


def _split(X, y):
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


@pytest.fixture(scope="module")
def cancer_split():
    return _split(*load_breast_cancer(return_X_y=True))


@pytest.fixture(scope="module")
def digits_split():
    return _split(*load_digits(n_class=5, return_X_y=True))


def _uncalibrated(f):
    """The logistic of the raw decision: what predict_proba would be without calibration."""
    p = 1.0 / (1.0 + np.exp(-np.clip(f, -60, 60)))
    if f.ndim == 1:
        return np.stack((1 - p, p), axis=1)
    return p / p.sum(axis=1, keepdims=True)


def _brier(y, P, classes):
    onehot = (np.asarray(y)[:, None] == classes[None, :]).astype(float)
    return float(np.mean(np.sum((P - onehot) ** 2, axis=1)))


MAKERS = {
    "dsg": lambda: DSGClassifier(n_iter=30, batch_size=256, gamma=0.02, random_state=0, probability=True),
    "sbp": lambda: SBPClassifier(nu=0.05, random_state=0, probability=True),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("data", ["cancer_split", "digits_split"])
def test_calibrated_probabilities_beat_the_raw_sigmoid(name, data, request, tmp_path):
    X, X_test, y, y_test = request.getfixturevalue(data)
    clf = MAKERS[name]().fit(X, y)
    P = np.asarray(clf.predict_proba(X_test))
    classes = clf.classes_
    assert P.shape == (X_test.shape[0], classes.size)
    assert np.all((P >= 0) & (P <= 1))
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-6)
    # Calibrated: better Brier score and log loss than the logistic of the raw decision.
    raw = _uncalibrated(np.asarray(clf.decision_function(X_test), dtype=np.float64))
    assert _brier(y_test, P, classes) < _brier(y_test, raw, classes)
    assert log_loss(y_test, P, labels=classes) < log_loss(y_test, raw, labels=classes)
    if classes.size == 2:
        assert brier_score_loss(y_test == classes[1], P[:, 1]) < brier_score_loss(y_test == classes[1], raw[:, 1])
    # predict thresholds f at 0, the probability at -b / a (and each class column has its own
    # sigmoid): they disagree only on rows near a boundary.
    agree = np.mean(classes[np.argmax(P, axis=1)] == np.asarray(clf.predict(X_test)))
    assert agree > 0.85
    # The model owns the calibration (its params): save / load keeps it.
    calibration = clf.model_.params["calibration"]
    assert calibration["n_rows"] == pytest.approx(0.1 * len(y), abs=classes.size + 1)
    clf.model_.save(tmp_path / "m.npz")
    loaded = load(tmp_path / "m.npz")
    assert loaded.params["calibration"] == calibration
    np.testing.assert_allclose(np.asarray(loaded.predict_proba(X_test)), P, rtol=1e-5, atol=1e-7)


def test_probability_param_and_availability(cancer_split):
    X, X_test, y, _ = cancer_split
    assert not hasattr(DSGClassifier(), "predict_proba")  # hinge, no calibration: absent
    assert hasattr(DSGClassifier(probability=True), "predict_proba")
    assert hasattr(SBPClassifier(probability=True), "predict_proba")
    assert "probability" not in TSGS3VMClassifier().get_params()  # its labelled rows are few: not offered
    with pytest.raises(TypeError, match="`probability`"):
        DSGClassifier(probability="yes").fit(X, y)
    # logistic + probability=True: the calibration takes the place of the log-odds
    clf = DSGClassifier(loss="logistic", n_iter=10, batch_size=128, random_state=0, probability=True).fit(X, y)
    assert "calibration" in clf.model_.params
    # the function fit is unchanged (no `probability` argument): the estimator split the rows
    assert clf.model_.params["n_iter"] == 10
    same = DSGClassifier(loss="logistic", n_iter=10, batch_size=128, random_state=0, probability=True).fit(X, y)
    np.testing.assert_array_equal(same.predict_proba(X_test), clf.predict_proba(X_test))  # seeded split


def test_calibrate_a_functional_model(cancer_split):
    X, X_test, y, y_test = cancer_split
    model = dsg.fit(X[:300], y[:300], n_iter=20, batch_size=128, random_state=0)
    assert not model.has_proba
    calibrated = calibrate(model, X[300:], y[300:])
    assert calibrated.has_proba and not model.has_proba
    P = np.asarray(calibrated.predict_proba(X_test))
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="does not know"):
        calibrate(model, X[300:], np.full(X[300:].shape[0], 7))


def test_platt_sigmoid_recovers_a_known_sigmoid():
    rng = np.random.default_rng(0)
    f = rng.normal(0, 2, 20000)
    p = 1 / (1 + np.exp(-1.5 * f + 0.5))  # a = -1.5, b = 0.5
    a, b = platt_sigmoid(f, rng.random(f.size) < p)
    assert a == pytest.approx(-1.5, abs=0.08) and b == pytest.approx(0.5, abs=0.08)
    # separable: Platt's smoothed targets keep the slope finite
    a, b = platt_sigmoid(np.r_[-np.ones(10), np.ones(10)], np.r_[np.zeros(10, bool), np.ones(10, bool)])
    assert np.isfinite(a) and a < 0 and 1 / (1 + np.exp(a + b)) == pytest.approx(11 / 12, abs=1e-3)


def test_calibration_split_is_stratified_and_refuses_tiny_classes():
    y = np.r_[np.zeros(90), np.ones(10)]
    fit_rows, held = calibration_split(y, 0)
    assert held.size == 10 and np.sum(y[held] == 1) == 1 and np.intersect1d(fit_rows, held).size == 0
    with pytest.raises(ValueError, match="at least 2 rows"):
        calibration_split(np.r_[np.zeros(20), 1], 0)
