"""The engine's iterations a window at a time on fixed buffers (algorithms._engine.window,
the form a CUDA graph replays): the models of the systems-ahead eager step within float32
rounding, on the cpu engine (the body called as it is) and under the simulator; the
whole windows and the eager remainder; an underflowing scale keeps its windows eager."""

import numpy as np
import pytest

from algorithms import dsg, tsgs3vm, tsgsu
from algorithms._engine import ahead, window
from algorithms.datasets import make_nonlinear_classes
from kbackends import CapturedGraph, resolve, to_numpy

K = 8


class _Runs(list):
    """The first iteration of each window run, and (``graphs``) each run's CapturedGraph."""

    def __init__(self):
        super().__init__()
        self.graphs = []


@pytest.fixture
def forced(monkeypatch):
    """Systems ahead (K at once) on every engine; ``use(on)`` switches the windows; the
    windows run are counted."""
    monkeypatch.setattr(ahead, "AUTO_BACKENDS", ("cpu", "cuda", "cudasim"))
    monkeypatch.setattr(ahead, "SYSTEMS_AHEAD", K)
    runs = _Runs()
    run = window.StaticWindows.run

    def counted(self, t):
        runs.append(t)
        runs.graphs.append(self.graph)
        return run(self, t)

    monkeypatch.setattr(window.StaticWindows, "run", counted)

    def use(on):
        runs.clear()
        runs.graphs.clear()
        monkeypatch.setattr(window, "AUTO_BACKENDS", ("cpu", "cuda", "cudasim") if on else ())
    return use, runs


@pytest.fixture(scope="module")
def data():
    return make_nonlinear_classes(1200, 8, random_state=0, dtype=np.float32)


def _close(a, b, rel=2e-4):
    a, b = np.asarray(to_numpy(a)), np.asarray(to_numpy(b))
    assert a.shape == b.shape
    np.testing.assert_allclose(b, a, rtol=0, atol=rel * np.abs(a).max())


def _windows_against_eager(forced, fit, n_iter):
    use, runs = forced
    use(False)
    eager = fit()
    assert runs == []
    use(True)
    windowed = fit()
    assert runs == list(range(1, K * (n_iter // K) + 1, K))  # whole windows, the rest eager
    return eager, windowed


@pytest.mark.parametrize("kw", [
    {}, {"variant": "udsg"}, {"feature_budget": 48}, {"fit_intercept": False}, {"dtype": "float64"},
    {"lam": 0.01},
], ids=["dsg", "udsg", "budget", "no-intercept", "float64", "shrinking"])
def test_windows_give_the_eager_model(forced, data, kw):
    X, y = data
    n_iter = 44  # five windows of 8, four eager iterations
    kw = {"n_iter": n_iter, "batch_size": 64, "block_size": 16, "early_stopping": False, "random_state": 0,
          "cache_predictions": True, **kw}
    eager, windowed = _windows_against_eager(forced, lambda: dsg.fit(X, y, **kw), n_iter)
    _close(eager.coef, windowed.coef)
    _close(eager.intercept, windowed.intercept)
    assert (dsg.predict(eager, X) == dsg.predict(windowed, X)).mean() > 0.99


def test_three_classes_two_sources_and_the_fits_that_stay_eager(forced, data):
    """Three classes (three outputs) and TSGS3VM's two sources with the class balance
    (the intercept shifted by the unlabelled batch's mean) run in windows; TSGSU (its
    derivative hook keeps host state) and callbacks stay eager."""
    X, y = data
    y3 = np.where(X[:, 1] > 1.0, 2, y)
    kw = {"n_iter": 16, "batch_size": 64, "block_size": 16, "random_state": 0}
    eager, windowed = _windows_against_eager(
        forced, lambda: dsg.fit(X, y3, loss="logistic", early_stopping=False, cache_predictions=True, **kw), 16)
    _close(eager.coef, windowed.coef)
    eager, windowed = _windows_against_eager(
        forced, lambda: tsgs3vm.fit(X[:60], y[:60], X[60:500], **kw), 16)  # both sources cached
    _close(eager.coef, windowed.coef)
    _close(eager.intercept, windowed.intercept)
    use, runs = forced
    use(True)
    y_pm = np.where(y == 1, 1, -1)
    X_s, X_u = tsgsu.make_su_data(X, y_pm, 200, 400, random_state=0)
    tsgsu.fit(X_s, X_u, prior=float(np.mean(y_pm == 1)), **kw)
    dsg.fit(X, y, early_stopping=False, cache_predictions=True, callback=lambda info: False, **kw)
    assert runs == []


def test_an_underflowing_scale_runs_its_windows_eagerly(forced, data):
    """lam * step near 1: the scale falls under 1e-30 within a window, which the eager
    loop folds into the coefficients; such a window runs eagerly (and the model is the
    eager one)."""
    X, y = data
    use, runs = forced
    kw = {"n_iter": 40, "batch_size": 64, "block_size": 16, "early_stopping": False, "random_state": 0,
          "cache_predictions": True, "lam": 0.9, "step": 1.0, "schedule": "constant"}
    use(False)
    eager = dsg.fit(X, y, **kw)
    use(True)
    windowed = dsg.fit(X, y, **kw)
    # the scale is 0.1^t: 25-32 would pass 1e-30 (folded after 31), so they run eagerly
    assert runs[:3] == [1, 9, 17] and 25 not in runs and len(runs) == 4
    _close(eager.coef, windowed.coef)


@pytest.mark.cuda
def test_windows_under_the_simulator(forced, data, gpu):
    X, y = data
    kw = {"n_iter": 10, "batch_size": 32, "block_size": 8, "early_stopping": False, "random_state": 0,
          "cache_predictions": True, "backend": gpu}
    eager, windowed = _windows_against_eager(forced, lambda: dsg.fit(X[:300], y[:300], **kw), 10)
    _close(eager.coef, windowed.coef)
    _close(eager.intercept, windowed.intercept)


@pytest.mark.cuda
def test_windows_captured_then_replayed_give_the_eager_model(forced, data, gpu):
    """Three windows: the first runs its body as it is, the second captures it, the third
    replays the graph (on a GPU; under the simulator each calls the body)."""
    X, y = data
    n_iter = 3 * K + 2
    kw = {"n_iter": n_iter, "batch_size": 64, "block_size": 16, "early_stopping": False, "random_state": 0,
          "cache_predictions": True, "backend": gpu}
    eager, windowed = _windows_against_eager(forced, lambda: dsg.fit(X, y, **kw), n_iter)
    _close(eager.coef, windowed.coef)
    _close(eager.intercept, windowed.intercept)
    graph = forced[1].graphs[-1]
    assert graph.runs == 3 and graph.refused is None
    assert (graph.graph is not None) == graph.on_device


def test_a_captured_graph_calls_its_body_off_cupy():
    calls = []
    graph = CapturedGraph(lambda: calls.append(1), resolve("cpu").xp)
    for _ in range(3):
        graph.run()
    assert calls == [1, 1, 1] and graph.graph is None and graph.refused is None
