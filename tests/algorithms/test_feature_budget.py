"""The scale rules of the engine fits: the feature budget, n_iter='auto' reading the
data, the ConvergenceWarning, the training rows drawn in place, the progress bar."""

import io
import time
import warnings

import numpy as np
import pytest
import scipy.sparse
from sklearn.exceptions import ConvergenceWarning

from algorithms import dsg, tsgs3vm, tsgsu
from algorithms._boundary.fit_plan import (
    MIN_FEATURES, auto_feature_budget, auto_settings, budget_blocks,
)
from algorithms._engine.progress import EngineBar
from algorithms.datasets import make_nonlinear_classes

FAST = {"block_size": 32, "batch_size": 128, "random_state": 0}


@pytest.fixture(scope="module")
def data():
    return make_nonlinear_classes(3000, n_features=8, random_state=0)


def test_auto_budget_is_a_million_multiply_adds_a_row_within_its_bounds():
    assert auto_feature_budget(20) == 2**20 // (20 + 32)
    assert auto_feature_budget(2) == 2**20 // 34
    assert auto_feature_budget(10_000) == MIN_FEATURES
    assert auto_feature_budget(0) == 2**20 // 32
    X = np.zeros((10, 20))
    assert budget_blocks("auto", X, 256) == -(-auto_feature_budget(20) // 256)
    assert budget_blocks(None, X, 256) is None
    assert budget_blocks(300, X, 256) == 2  # whole blocks, rounded up
    # sparse rows cost their stored values, not their width
    S = scipy.sparse.random(100, 5000, density=0.002, format="csr", random_state=0)
    assert budget_blocks("auto", S, 256) == -(-auto_feature_budget(S.nnz / 100) // 256)


def test_n_iter_auto_allows_two_passes_with_early_stopping():
    assert auto_settings(50_000).n_iter == 200  # small data: the 200 of before
    big = auto_settings(10_000_000)
    assert big.early_stopping and big.n_iter * big.batch_size >= 2 * 10_000_000
    assert (big.n_iter - 1) * big.batch_size < 2 * 10_000_000
    assert auto_settings(5_000).n_iter == 13  # no early stopping: ~10 passes, as before


def test_past_the_budget_old_blocks_are_updated(data):
    X, y = data
    model = dsg.fit(X, y, n_iter=30, feature_budget=4 * 32, **FAST)
    assert model.n_blocks == 4 and model.params["n_iter_done"] == 30
    unlimited = dsg.fit(X, y, n_iter=30, feature_budget=None, **FAST)
    assert unlimited.n_blocks == 30
    assert np.mean(model.predict(X) == y) > 0.6  # the updates learn (chance is 0.5)


@pytest.mark.parametrize("variant", ["dsg", "udsg", "cdsg"])
def test_a_budget_never_reached_changes_nothing(data, variant):
    X, y = data
    a = dsg.fit(X, y, n_iter=12, variant=variant, feature_budget=None, **FAST)
    b = dsg.fit(X, y, n_iter=12, variant=variant, feature_budget=12 * 32, **FAST)
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.n_blocks == b.n_blocks


def test_the_semi_supervised_and_su_fits_share_the_rule(data):
    X, y = data
    expected = budget_blocks("auto", X, 256)
    assert dsg.build(X, y).settings.max_blocks == expected
    y_semi = np.where(np.arange(y.size) < 300, y, -1)
    assert tsgs3vm.build(X, y_semi).settings.max_blocks == expected
    pairs = np.stack([X[:200], X[200:400]], axis=1)
    assert tsgsu.build(pairs, X[400:], prior=0.6).settings.max_blocks == budget_blocks("auto", X, 32)


def test_convergence_warning_when_the_iterations_end_first(data):
    X, y = data
    with pytest.warns(ConvergenceWarning, match="before early stopping"):
        dsg.fit(X, y, n_iter=5, early_stopping=True, n_iter_no_change=50, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = dsg.fit(X, y, n_iter=400, early_stopping=True, n_iter_no_change=2, tol=0.5, **FAST)
    assert model.params["n_iter_done"] < 400  # early stopping ended it: no warning


def test_training_rows_drawn_in_place_give_the_model_of_a_copy(data):
    from algorithms import _engine
    from kbackends import resolve
    from kbackends.losses import SUPERVISED_LOSSES

    X, y = data
    X = X.astype(np.float32)
    rows = np.sort(np.random.default_rng(1).choice(X.shape[0], 2000, replace=False))
    target = np.where(y == 1, 1.0, -1.0).astype(np.float32).reshape(-1, 1)
    settings = _engine.EngineSettings(n_iter=8, block_size=32, kernel="rbf", gamma=0.1, seed=3, lam=1e-4, step=1.0,
                                      schedule="auto", ridge=0.3, sampling_seed=5, cache_predictions=False)
    loss = SUPERVISED_LOSSES["hinge"]
    bk = resolve("cpu")
    in_place = _engine.run([_engine.Source(X=X, y=target, loss=loss, weight=1.0, batch_size=64, rows=rows)], bk,
                           settings, np.float32)
    copied = _engine.run([_engine.Source(X=X[rows], y=target[rows], loss=loss, weight=1.0, batch_size=64)], bk,
                         settings, np.float32)
    np.testing.assert_array_equal(in_place.coef, copied.coef)


def test_progress_shows_rows_and_passes_and_times_after_the_first_iteration():
    stream = io.StringIO()
    bar = EngineBar(50, "dsg", stream=stream, rows_per_iteration=100, n_rows=1000)
    time.sleep(0.5)  # the first iteration: compilation
    bar.step(1, 1, lambda: np.float32(1.0))
    for t in range(2, 21):
        bar.step(t, t, lambda: np.float32(1.0), held_out_loss=0.25)
    info = bar.bar.format_dict
    rate = (info["n"] - info["initial"]) / info["elapsed"]
    assert rate > 19 / 0.5  # the half second of the first iteration is not in the rate
    bar.close()
    shown = stream.getvalue()
    assert "rows=2000" in shown and "passes=2" in shown and "held_out=0.25" in shown


def test_large_inputs_are_predicted_in_row_chunks_with_the_same_values(data, monkeypatch):
    from algorithms._models import prediction

    X, y = data
    model = dsg.fit(X, y, n_iter=6, **FAST)
    whole = model.decision_function(X)
    monkeypatch.setattr(prediction, "PREDICT_ROWS", 700)
    calls = []
    original = type(model).raw_decision
    monkeypatch.setattr(type(model), "raw_decision", lambda self, rows, bk: calls.append(rows.shape[0])
                        or original(self, rows, bk))
    np.testing.assert_array_equal(model.decision_function(X), whole)
    assert calls == [700] * 4 + [200]
    np.testing.assert_array_equal(model.predict(scipy.sparse.csr_matrix(X)), model.predict(X))


def test_scale_bench_measures_each_method_in_its_own_process(table_rows):
    from algorithms.bench import scale

    results = scale.run([3000], ["dsg", "rbf-sgd"], progress=lambda *a: None)
    by_method = {r["method"]: r for r in results}
    assert set(by_method) == {"dsg", "rbf-sgd"}
    for r in results:
        assert r["n"] == 3000 and r["fit_s"] > 0 and r["peak_rss_mb"] >= r["rss_data_mb"] > 0
    assert by_method["dsg"]["accuracy"] > 0.6  # the non-linear rule is learnt (chance: 0.5)
    rows = table_rows(scale.markdown(results))
    assert rows[0][:2] == ["rows", "method"] and len(rows) == 4 and {len(row) for row in rows} == {10}
    assert [row[:2] for row in rows[2:]] == [["3,000", "DSGClassifier()"], ["3,000", "RBFSampler(2048) + SGD"]]


def test_patience_is_a_tenth_of_a_pass_on_large_data():
    assert auto_settings(50_000).n_iter_no_change == 10
    assert auto_settings(409_600).n_iter_no_change == 10
    assert auto_settings(10_000_000).n_iter_no_change == 245  # ceil(0.1 * 10^7 / 4096)
    assert auto_settings(10_000_000, n_iter_no_change=3).n_iter_no_change == 3


def test_large_splits_draw_the_held_out_rows_directly(monkeypatch):
    from algorithms._boundary import fit_plan

    monkeypatch.setattr(fit_plan, "LARGE_SPLIT_ROWS", 1000)
    labels = (np.arange(20_000) % 10 < 3).astype(np.int64)  # 30% of class 1
    train, held = fit_plan.validation_rows(20_000, 0.1, 7, labels)
    assert held.size == 2000 and train.size == 18_000
    assert np.array_equal(np.sort(np.concatenate([train, held])), np.arange(20_000))
    assert np.sum(labels[held]) == 600  # stratified: the classes' shares exactly
    again = fit_plan.validation_rows(20_000, 0.1, 7, labels)[1]
    assert np.array_equal(held, again) and not np.array_equal(held, fit_plan.validation_rows(20_000, 0.1, 8, labels)[1])


def test_warnings_name_the_users_line(data):
    X, y = data
    from algorithms import DSGClassifier, S3GDClassifier

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        DSGClassifier(n_iter=3, early_stopping=True, random_state=0).fit(X, y)
        dsg.fit(X, y, n_iter=3, early_stopping=True, random_state=0)
        S3GDClassifier(max_epochs=1, random_state=0).fit(X, y)
    assert len(seen) == 3 and {w.filename for w in seen} == {__file__}
