"""TSGSU's label orientation is the user's: positive_class / negative_class, or orient()."""

import numpy as np
import pytest

from algorithms import TSGSUClassifier, tsgsu


@pytest.fixture(scope="module")
def su():
    rng = np.random.default_rng(0)
    y = np.where(rng.random(2000) < 0.7, 1, -1)  # +1 the larger class
    X = rng.normal(size=(2000, 2)) + 2.0 * y[:, None]
    X_s, X_u = tsgsu.make_su_data(X, y, 300, 600, random_state=0)
    return X, y, X_s, X_u


def test_positive_class_names_the_larger_class(su):
    X, y, X_s, X_u = su
    kw = dict(prior=0.7, n_iter=20, batch_size=200, random_state=0)
    plain = tsgsu.fit(X_s, X_u, **kw)
    named = tsgsu.fit(X_s, X_u, positive_class="big", negative_class="small", **kw)
    flipped = tsgsu.fit(X_s, X_u, positive_class=-1, negative_class=1, **kw)
    assert np.mean(tsgsu.predict(plain, X) == y) > 0.9
    np.testing.assert_array_equal(tsgsu.predict(named, X), np.where(tsgsu.predict(plain, X) == 1, "big", "small"))
    np.testing.assert_array_equal(tsgsu.predict(flipped, X), -tsgsu.predict(plain, X))
    assert flipped.classes.tolist() == [-1, 1]  # sorted, and f > 0 predicts classes[1]
    np.testing.assert_allclose(tsgsu.decision_function(flipped, X), -tsgsu.decision_function(plain, X))
    with pytest.raises(ValueError, match="`positive_class` and `negative_class` must differ"):
        tsgsu.fit(X_s, X_u, positive_class=1, negative_class=1, **kw)


def test_orient_and_estimator_classes(su):
    X, y, X_s, X_u = su
    plain = tsgsu.fit(X_s, X_u, prior=0.7, n_iter=20, batch_size=200, random_state=0)
    y_text = np.where(y == 1, "b", "a")
    oriented = tsgsu.orient(plain, X[:40], y_text[:40])
    assert oriented.classes.tolist() == ["a", "b"]
    assert np.mean(tsgsu.predict(oriented, X) == y_text) > 0.9
    swapped = tsgsu.orient(plain, X[:40], -y[:40])  # the reference says the other way round
    assert np.mean(tsgsu.predict(swapped, X) == -y) > 0.9
    with pytest.raises(ValueError, match="exactly two distinct labels"):
        tsgsu.orient(plain, X[:5], np.ones(5))
    s = np.r_[np.ones(600), np.zeros(600)]
    clf = TSGSUClassifier(prior=0.7, n_iter=20, batch_size=200, positive_class=-1, negative_class=1,
                          random_state=0).fit(np.concatenate([X_s.reshape(-1, 2), X_u]), s)
    assert clf.classes_.tolist() == [-1, 1]
    assert np.mean(clf.predict(X) == -y) > 0.9
