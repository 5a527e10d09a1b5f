"""The preconditioner's systems built ahead (algorithms._engine.ahead) give the eager
step's models: every fit family that can plan its blocks, on the cpu engine where "auto"
is eager, forced here; the schedule is the one the cuda engine runs."""

import numpy as np
import pytest

from algorithms import dsg, tsgs3vm, tsgsu
from algorithms._engine import ahead
from algorithms.datasets import make_nonlinear_classes


@pytest.fixture
def built(monkeypatch):
    """Force the systems ahead on the cpu engine (8 iterations at once); count the builds."""
    counts = {"build": 0, "step": 0}
    build, step = ahead.SystemsAhead.build, ahead.SystemsAhead.step

    def counted_build(self, upcoming):
        counts["build"] += 1
        return build(self, upcoming)

    def counted_step(self, *args):
        counts["step"] += 1
        return step(self, *args)

    def use(on):
        monkeypatch.setattr(ahead, "AUTO_BACKENDS", ("cuda", "cpu") if on else ("cuda",))
        monkeypatch.setattr(ahead, "SYSTEMS_AHEAD", 8)

    monkeypatch.setattr(ahead.SystemsAhead, "build", counted_build)
    monkeypatch.setattr(ahead.SystemsAhead, "step", counted_step)
    return use, counts


@pytest.fixture(scope="module")
def data():
    X, y = make_nonlinear_classes(1500, 8, random_state=0, dtype=np.float32)
    return X, y


def _both(built, fit):
    use, counts = built
    counts.update(build=0, step=0)
    use(False)
    eager = fit()
    assert counts["step"] == 0
    use(True)
    hoisted = fit()
    return eager, hoisted, counts


def _close(a, b, rtol=1e-4):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    np.testing.assert_allclose(b, a, rtol=0, atol=rtol * np.abs(a).max())


@pytest.mark.parametrize("kw", [
    {}, {"variant": "udsg"}, {"feature_budget": 64}, {"fit_intercept": False}, {"dtype": "float64"},
    {"average": True}, {"early_stopping": True, "n_iter": 60},
], ids=["dsg", "udsg", "budget", "no-intercept", "float64", "average", "early-stopping"])
def test_dsg_built_ahead_is_the_eager_model(built, data, kw):
    X, y = data
    kw = {"n_iter": 20, "batch_size": 64, "block_size": 16, "early_stopping": False, "random_state": 0, **kw}
    eager, hoisted, counts = _both(built, lambda: dsg.fit(X, y, **kw))
    assert counts["step"] == hoisted.params["n_iter_done"] and counts["build"] == -(-counts["step"] // 8)
    _close(eager.coef, hoisted.coef)
    _close(eager.intercept, hoisted.intercept)


def test_three_classes_and_sparse_rows(built, data):
    import scipy.sparse

    X, y = data
    y3 = np.where(X[:, 1] > 1.0, 2, y)
    Xs = scipy.sparse.csr_matrix(np.where(np.abs(X) > 0.8, X, 0.0))
    kw = {"n_iter": 16, "batch_size": 64, "block_size": 16, "early_stopping": False, "random_state": 0}
    for X_, y_ in ((X, y3), (Xs, y)):
        eager, hoisted, _ = _both(built, lambda X_=X_, y_=y_: dsg.fit(X_, y_, loss="logistic", **kw))
        _close(eager.coef, hoisted.coef)


def test_semi_supervised_and_su_fits_sum_their_sources(built, data):
    X, y = data
    kw = {"n_iter": 16, "batch_size": 64, "block_size": 16, "random_state": 0}
    eager, hoisted, counts = _both(built, lambda: tsgs3vm.fit(X[:60], y[:60], X[60:], **kw))
    assert counts["step"] == 16
    _close(eager.coef, hoisted.coef)
    y_pm = np.where(y == 1, 1, -1)
    X_s, X_u = tsgsu.make_su_data(X, y_pm, 200, 400, random_state=0)
    prior = float(np.mean(y_pm == 1))
    eager, hoisted, _ = _both(built, lambda: tsgsu.fit(X_s, X_u, prior=prior, **kw))
    _close(eager.coef, hoisted.coef)


def test_cdsg_and_callbacks_stay_eager(built, data):
    X, y = data
    use, counts = built
    use(True)
    kw = {"n_iter": 10, "batch_size": 64, "block_size": 16, "early_stopping": False, "random_state": 0}
    dsg.fit(X, y, variant="cdsg", **kw)
    dsg.fit(X, y, callback=lambda info: False, **kw)
    dsg.fit(X, y, precondition=None, **kw)
    assert counts == {"build": 0, "step": 0}
