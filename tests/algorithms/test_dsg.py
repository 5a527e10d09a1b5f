"""DSG / UDSG / CDSG: learning on real data next to scikit-learn peers, the
engine's bookkeeping, cross-backend agreement, save/load, errors."""

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_digits
from sklearn.model_selection import train_test_split

import algorithms
from algorithms import dsg
from algorithms._engine.steps import _Averager, _cdsg_step, step_size
from kbackends.testing import host, make_backend


@pytest.fixture(scope="module")
def cancer(cancer):
    """The shared standardised breast cancer data (conftest), split 70 / 30."""
    X, y = cancer
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


FAST = {"n_iter": 30, "batch_size": 256, "block_size": 64, "random_state": 0}


@pytest.mark.parametrize("variant", ["dsg", "udsg", "cdsg"])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "logistic"])
def test_variants_learn_breast_cancer(cancer, variant, loss):
    from sklearn.svm import SVC

    X, Xt, y, yt = cancer
    model = dsg.fit(X, y, loss=loss, variant=variant, **FAST)
    acc = (dsg.predict(model, Xt) == yt).mean()
    svc = SVC().fit(X, y).score(Xt, yt)
    assert acc >= svc - 0.03, (acc, svc)


def test_paper_plain_steps_learn(cancer):
    """precondition=None: the paper's unpreconditioned steps theta / t."""
    X, Xt, y, yt = cancer
    model = dsg.fit(X, y, precondition=None, step=2.0, n_iter=60, batch_size=256, block_size=64, random_state=0)
    assert (dsg.predict(model, Xt) == yt).mean() > 0.9


@pytest.mark.slow
def test_ijcnn1_subset_next_to_peers(real_data):
    """Real data, the acceptance's dataset: a 10k-row subset of ijcnn1 train, the
    first 20k rows of its test file. DSG beats RBFSampler + SGD with the same
    kernel width and comes within 1.5 points of the exact SVC."""
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC

    X, y, Xt, yt = real_data("ijcnn1")
    rng = np.random.default_rng(0)
    rows = rng.choice(len(y), 10_000, replace=False)
    X, y, Xt, yt = X[rows], y[rows], Xt[:20_000], yt[:20_000]
    model = dsg.fit(X, y, gamma=1.0, n_iter=60, batch_size=2048, random_state=0)
    ours = (dsg.predict(model, Xt) == yt).mean()
    peer = make_pipeline(
        RBFSampler(n_components=2048, gamma=1.0, random_state=0),
        SGDClassifier(loss="hinge", alpha=1e-5, max_iter=20, tol=None, random_state=0),
    ).fit(X, y).score(Xt, yt)
    svc = SVC(C=10, gamma=1.0).fit(X, y).score(Xt, yt)
    assert ours > peer, (ours, peer)
    assert ours > svc - 0.015, (ours, svc)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_multiclass_digits(loss):
    X, y = load_digits(return_X_y=True)
    X, Xt, y, yt = train_test_split(X / 16.0, y, test_size=0.3, random_state=0)
    model = dsg.fit(X, y, loss=loss, gamma=0.02, n_iter=40, batch_size=512, random_state=0)
    assert model.task == ("ovr" if loss == "hinge" else "softmax")
    f = dsg.decision_function(model, Xt)
    assert f.shape == (len(yt), 10)
    assert (dsg.predict(model, Xt) == yt).mean() > 0.95


def test_regression_next_to_kernel_ridge():
    from sklearn.kernel_ridge import KernelRidge

    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.3, random_state=0)
    # 309 training rows: small blocks, so one block cannot fit the batch noise.
    est = algorithms.DSGRegressor(gamma=0.02, n_iter=40, batch_size=256, block_size=16, precondition=1.0, random_state=0)
    ours = est.fit(X, y).score(Xt, yt)
    peer = KernelRidge(kernel="rbf", gamma=0.02, alpha=1.0).fit(X, y - y.mean()).score(Xt, yt - y.mean())
    assert ours > peer - 0.1, (ours, peer)


def test_string_labels_and_classes_order(cancer):
    X, Xt, y, yt = cancer
    names = np.array(["benign", "malignant"])[y]
    clf = algorithms.DSGClassifier(**FAST).fit(X, names)
    assert list(clf.classes_) == ["benign", "malignant"]
    assert (clf.predict(Xt) == np.array(["benign", "malignant"])[yt]).mean() > 0.9


def test_same_seed_same_model_other_seed_other_model(cancer):
    X, _, y, _ = cancer
    a = dsg.fit(X, y, **FAST)
    b = dsg.fit(X, y, **FAST)
    c = dsg.fit(X, y, **{**FAST, "random_state": 1})
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.coef.shape == c.coef.shape and not np.allclose(a.coef, c.coef)


def test_fit_matches_across_backends(cancer, backend):
    """The whole fit, not just a kernel: same seed -> same features and batches
    on every backend, so the models agree to rounding."""
    X, Xt, y, yt = cancer
    small = {"n_iter": 4, "batch_size": 32, "block_size": 8, "random_state": 3, "gamma": 0.05, "dtype": "float64"}
    ref = dsg.fit(X, y, **small)
    model = dsg.fit(backend.asarray(X), backend.asarray(y), backend=backend, **small)
    assert model.backend == backend.name
    np.testing.assert_allclose(host(model.coef), ref.coef, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(host(dsg.predict(model, backend.asarray(Xt))), dsg.predict(ref, Xt))


def test_save_load_round_trip_across_backends(cancer, tmp_path):
    X, Xt, y, yt = cancer
    model = dsg.fit(X, y, **FAST)
    path = model.save(tmp_path / "m.npz")
    strict = make_backend("array_api_strict")
    loaded = algorithms.load(path, backend=strict)
    assert loaded.backend == "array_api_strict"
    labels = dsg.predict(loaded, strict.asarray(Xt))
    np.testing.assert_array_equal(host(labels), dsg.predict(model, Xt))
    # and back: a strict-trained model predicts the same on cpu
    trained = dsg.fit(strict.asarray(X), strict.asarray(y), **{**FAST, "n_iter": 5})
    back = algorithms.load(trained.save(tmp_path / "s.npz"), backend="cpu")
    np.testing.assert_array_equal(dsg.predict(back, Xt), host(dsg.predict(trained, strict.asarray(Xt))))


def test_load_rejects_other_files(tmp_path):
    np.savez(tmp_path / "x.npz", a=np.ones(2))
    with pytest.raises(ValueError, match="not a model file"):
        algorithms.load(tmp_path / "x.npz")


def test_callback_sees_progress_and_can_stop(cancer):
    X, _, y, _ = cancer
    seen = []
    model = dsg.fit(X, y, callback=lambda info: seen.append(info) or info["iteration"] == 5, **FAST)
    assert [s["iteration"] for s in seen] == [1, 2, 3, 4, 5]
    assert model.params["n_iter_done"] == 5 and model.n_blocks == 5
    assert seen[-1]["batch_loss"] < seen[0]["batch_loss"]


def test_udsg_reuses_blocks(cancer):
    X, _, y, _ = cancer
    model = dsg.fit(X, y, variant="udsg", udsg_pattern=(1, 2), **FAST)
    assert model.n_blocks == 10  # 30 iterations, one new block in every three


def test_averaging_changes_the_iterate_and_still_learns(cancer):
    X, Xt, y, yt = cancer
    last = dsg.fit(X, y, **FAST)
    avg = dsg.fit(X, y, average=True, **FAST)
    assert not np.allclose(last.coef, avg.coef)
    assert (dsg.predict(avg, Xt) == yt).mean() > 0.93


def test_scale_underflow_is_folded_in(cancer):
    """lam * step = 0.5 per iteration halves old blocks: after 120 iterations the
    global scale would be 2**-120; it is folded into the coefficients instead."""
    X, Xt, y, yt = cancer
    model = dsg.fit(X, y, lam=0.5, schedule="constant", n_iter=120, batch_size=64, block_size=8, random_state=0)
    coef = model.coef[:, 0]
    assert np.all(np.isfinite(coef))
    first, last = np.abs(coef[:8]).max(), np.abs(coef[-8:]).max()
    assert first < last * 2.0**-100  # block 0 was shrunk 119 times by one half


def test_averager_matches_the_naive_average():
    """The O(1) average (the engine's block_update adds each change to ``stored`` and its
    term to the average's correction) against the mean of the iterates."""
    from kbackends.testing import oracle

    rng = np.random.default_rng(0)
    xp = make_backend("cpu").xp
    stored = np.zeros((4, 1))
    avg = _Averager(xp, (4, 1), np.float64)
    scale, iterates = 1.0, []
    for t in range(30):
        start = int(rng.integers(0, 4))
        delta = rng.standard_normal((4 - start, 1))
        scale *= 0.7
        zero = np.zeros(1)
        oracle("block_update")(stored, delta, zero, zero, avg.correction, zero, xp=xp, start=start, scale=1.0,
                               fit_intercept=False, scale_sum=avg.scale_sum)  # delta in stored units
        avg.end_iteration(scale)
        iterates.append(stored * scale)
        if t in (10, 20):  # fold the scale in, as the engine does before underflow
            stored = avg.rescale(stored, scale)
            scale = 1.0
    np.testing.assert_allclose(avg.average(stored), np.mean(iterates, axis=0), rtol=1e-12)


def test_cdsg_line_search_solves_inequality_9():
    beta = np.array([0.05, -0.3, 0.2, 0.0])
    g, gamma_t, bound, batch = 0.5, 0.1, 1.0, 64
    k, eta = _cdsg_step(beta, g, gamma_t, bound, batch)
    assert k is not None and eta > gamma_t
    lhs = 2 * (beta[k] - eta * g) ** 2 + 2 * (eta * bound) ** 2 / batch**2
    rhs = beta[k] ** 2 + (gamma_t * g) ** 2
    assert lhs == pytest.approx(rhs, rel=1e-9)  # the boundary of the feasible steps
    for j in range(4):  # no other block allows a longer step
        e = eta * 1.001
        assert 2 * (beta[j] - e * g) ** 2 + 2 * (e * bound) ** 2 / batch**2 > rhs
    assert _cdsg_step(np.array([-1.0]), g, gamma_t, bound, batch) == (None, 0.0)


def test_step_schedules():
    assert step_size("theta_over_t", 2.0, 0.1, 4) == 0.5
    assert step_size("constant", 2.0, 0.1, 4) == 2.0
    assert step_size("inverse_scaling", 2.0, 0.1, 5) == pytest.approx(2.0 / 2.0)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"loss": "huber"}, ValueError, "`loss` must be one of"),
        ({"variant": "sgd"}, ValueError, "`variant` must be one of"),
        ({"n_iter": 0}, ValueError, "`n_iter` must be 'auto' or an integer >= 1"),
        ({"gamma": -1.0}, ValueError, r"`gamma` must be one of \('median', 'scale'\) or a positive float"),
        ({"lam": 0.9, "step": 2.0, "schedule": "constant"}, ValueError, "step 2 times lam 0.9 is >= 1"),
        ({"dtype": "int32"}, TypeError, "`dtype` must be float32 or float64"),
        ({"random_state": "x"}, TypeError, "`random_state` must be None"),
    ],
)
def test_bad_hyper_parameters(cancer, kwargs, error, match):
    X, _, y, _ = cancer
    with pytest.raises(error, match=match):
        dsg.fit(X, y, **{**FAST, **kwargs})


def test_bad_data(cancer):
    X, Xt, y, _ = cancer
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="`X` contains NaN"):
        dsg.fit(Xn, y, **FAST)
    with pytest.raises(ValueError, match="`y` has 10 entries but `X` has"):
        dsg.fit(X, y[:10], **FAST)
    with pytest.raises(ValueError, match="only one class"):
        dsg.fit(X, np.zeros(len(X)), **FAST)
    model = dsg.fit(X, y, **FAST)
    with pytest.raises(ValueError, match="has 5 features, but the model was fitted with 30"):
        dsg.predict(model, Xt[:, :5])


def test_float32_stays_float32(cancer):
    X, Xt, y, yt = cancer
    model = dsg.fit(X.astype(np.float32), y, **FAST)
    assert model.coef.dtype == np.float32
    assert dsg.decision_function(model, Xt.astype(np.float32)).dtype == np.float32
    assert (dsg.predict(model, Xt.astype(np.float32)) == yt).mean() > 0.93


def test_cdsg_resumed_in_rounds_is_the_uninterrupted_run(cancer):
    """The engine's state carries CDSG's lagged rule (the derivative on its way to the
    host, its block and factor): a run resumed every few iterations, as the distributed
    fit and partial_fit do, is the uninterrupted run, bit for bit."""
    from algorithms import _engine

    X, _, y, _ = cancer
    model = dsg.fit(X, y, variant="cdsg", n_iter=12, batch_size=64, block_size=16, random_state=0)
    captured = {}

    def rounds(sources, bk, settings, dtype):
        result = None
        for stop in (3, 7, 12):
            result = _engine.loop._run(sources, bk, settings, dtype, resume=None if result is None else result.state,
                                       stop=stop)
        captured["result"] = result
        return result

    resumed = dsg.build(X, y, variant="cdsg", n_iter=12, batch_size=64, block_size=16, random_state=0).solve(rounds)
    assert captured["result"].n_iter_done == 12
    np.testing.assert_array_equal(np.asarray(resumed.coef), np.asarray(model.coef))
    np.testing.assert_array_equal(np.asarray(resumed.intercept), np.asarray(model.intercept))
