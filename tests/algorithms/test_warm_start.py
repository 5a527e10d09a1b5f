"""scikit-learn's ``warm_start`` on the DSG estimators and ``n_jobs`` on every estimator."""

import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from algorithms import (
    DSGClassifier, DSGRegressor, S3GDClassifier, SBPClassifier, TSGS3VMClassifier, TSGSUClassifier, dsg,
)
from algorithms._models.estimator import FunctionalEstimator

SMALL = {"batch_size": 64, "block_size": 32, "random_state": 0}


@pytest.fixture(scope="module")
def binary():
    X, y = make_classification(n_samples=600, n_features=8, n_informative=5, random_state=0)
    return X, y


def _warm(cls, X, y, first, then, **kw):
    est = cls(warm_start=True, n_iter=first, **SMALL, **kw).fit(X, y)
    before = est.model_
    return before, est.set_params(n_iter=then).fit(X, y)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("budget", [None, 8 * 32], ids=["no-budget", "budget-8-blocks"])
def test_warm_start_continues_into_the_longer_fit(binary, dtype, budget):
    """n_iter=a then n_iter=b with warm_start is the fit of b iterations, bit for bit: the
    same blocks, step schedule and draws (with a budget: new blocks up to it, then old ones)."""
    X, y = binary
    before, est = _warm(DSGClassifier, X, y, 5, 25, dtype=dtype, feature_budget=budget)
    assert before.n_blocks == 5 and est.n_iter_ == 25
    assert est.model_.n_blocks == (25 if budget is None else 8)
    cold = dsg.fit(X, y, n_iter=25, **SMALL, dtype=dtype, feature_budget=budget, cache_predictions=False)
    np.testing.assert_array_equal(est.model_.coef, cold.coef)
    np.testing.assert_array_equal(est.model_.intercept, cold.intercept)
    assert dsg.objective(est.model_, X, y) < dsg.objective(before, X, y)


def test_warm_start_regressor_continues(binary):
    X, y = make_regression(n_samples=400, n_features=6, noise=5.0, random_state=0)
    before, est = _warm(DSGRegressor, X, y, 8, 20)
    cold = dsg.fit(X, y, loss="squared", n_iter=20, **SMALL, cache_predictions=False)
    np.testing.assert_array_equal(est.model_.coef, cold.coef)
    assert est.score(X, y) > DSGRegressor().set_params(**SMALL, n_iter=8).fit(X, y).score(X, y) - 1e-9
    assert est.model_.n_blocks > before.n_blocks


def test_warm_start_keeps_the_first_fits_seed_and_width(binary):
    """random_state=None draws a seed per fit and gamma='median' reads the data: a
    continued fit keeps the first fit's, or its old blocks would change meaning."""
    X, y = binary
    est = DSGClassifier(warm_start=True, n_iter=5, batch_size=64, block_size=32).fit(X, y)
    first = est.model_
    est.set_params(n_iter=9).fit(X, y)
    assert est.model_.seed == first.seed and est.model_.gamma == first.gamma


@pytest.mark.parametrize("relabel", [lambda y: y + 10, lambda y: np.where(y > 0, "b", "a")],
                         ids=["shifted", "text"])
@pytest.mark.parametrize("then", [6, 9], ids=["nothing-left", "continued"])
def test_warm_start_refuses_other_classes(binary, relabel, then):
    """A second fit on other labels returned the first fit's model (nothing left to run),
    predicting the old labels; continued, it mixed two encodings."""
    X, y = binary
    est = DSGClassifier(warm_start=True, n_iter=6, **SMALL).fit(X, y)
    with pytest.raises(ValueError, match=r"classes \[0, 1\] -> .*set warm_start=False"):
        est.set_params(n_iter=then).fit(X, relabel(y))


def test_warm_start_nothing_left_and_refusals(binary):
    X, y = binary
    est = DSGClassifier(warm_start=True, n_iter=6, **SMALL).fit(X, y)
    model = est.model_
    assert est.fit(X, y).model_ is model  # n_iter reached: no refit (scikit-learn's warm_start)
    with pytest.raises(ValueError, match="at least the 6 iterations"):
        est.set_params(n_iter=3).fit(X, y)
    with pytest.raises(ValueError, match="block_size 32 -> 16"):
        est.set_params(n_iter=9, block_size=16).fit(X, y)
    with pytest.raises(ValueError, match="probability"):
        DSGClassifier(warm_start=True, probability=True, n_iter=4, **SMALL).fit(X, y)
    # warm_start=False starts over: the fit of its own n_iter
    fresh = est.set_params(warm_start=False, block_size=32, n_iter=9).fit(X, y).model_
    assert fresh.n_blocks == 9


# --- n_jobs ---------------------------------------------------------------------------------------


def _tiny_fit(cls, X, y, **kw):
    small = {
        DSGClassifier: {"n_iter": 5, "block_size": 16, "batch_size": 64},
        SBPClassifier: {"n_iter": 20},
        S3GDClassifier: {"max_epochs": 1, "n_anchors": 10},
        TSGS3VMClassifier: {"n_iter": 5, "block_size": 16, "batch_size": 64},
        TSGSUClassifier: {"n_iter": 5, "block_size": 16, "batch_size": 64, "prior": 0.3},
    }[cls]
    if cls is TSGS3VMClassifier:
        y = np.where(np.arange(y.size) % 3 == 0, y, -1)
    return cls(random_state=0, **small, **kw).fit(X, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cls", [DSGClassifier, SBPClassifier, S3GDClassifier, TSGS3VMClassifier, TSGSUClassifier],
                         ids=lambda c: c.__name__)
def test_n_jobs_sets_numbas_threads_within_fit(binary, cls, monkeypatch):
    import numba

    X, y = binary
    seen = []
    inner = FunctionalEstimator._fit_validated

    def recording(self, *args):
        seen.append(numba.get_num_threads())
        return inner(self, *args)

    monkeypatch.setattr(FunctionalEstimator, "_fit_validated", recording)
    before = numba.get_num_threads()
    one = _tiny_fit(cls, X, y, n_jobs=1)
    default = _tiny_fit(cls, X, y)
    assert seen == [1, numba.config.NUMBA_NUM_THREADS]
    assert numba.get_num_threads() == before  # restored
    if cls is S3GDClassifier:  # its compiled sums split by thread: the same model at rounding
        np.testing.assert_allclose(one.decision_function(X), default.decision_function(X), rtol=1e-10, atol=1e-12)
    else:  # the same model whatever the threads (also with two: measured, NUMBA_NUM_THREADS=2)
        np.testing.assert_array_equal(one.decision_function(X), default.decision_function(X))
    with pytest.raises(ValueError, match="n_jobs"):
        _tiny_fit(cls, X, y, n_jobs=0)


def test_numba_threads_sets_and_restores_with_two_threads():
    """With two Numba threads (a fresh interpreter: the count is fixed at import)."""
    code = ("import numba\nfrom algorithms._models.estimator import numba_threads\n"
            "numba.set_num_threads(2)\n"
            "with numba_threads(1):\n    assert numba.get_num_threads() == 1\n"
            "assert numba.get_num_threads() == 2\n"
            "numba.set_num_threads(1)\n"
            "with numba_threads(None):\n    assert numba.get_num_threads() == 2\n"
            "with numba_threads(8):\n    assert numba.get_num_threads() == 2\n"
            "assert numba.get_num_threads() == 1\nprint('ok')\n")
    env = {**os.environ, "NUMBA_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
