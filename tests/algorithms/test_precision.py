"""The dtype policy by conditioning (algorithms._boundary.precision): data at a common
offset keep their accuracy in float32 (SBP centres them, the model keeps the centre;
the random-feature fits compute in float64 with a warning where the cast loses the
spread), the scan runs in row chunks, and data without an offset give the same model."""

import tracemalloc
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.datasets import make_classification

import algorithms
from algorithms._boundary import precision
from kbackends import resolve, to_numpy


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(1600, 8, n_informative=5, random_state=0)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X[:1200], y[:1200], X[1200:], y[1200:]


def _accuracy(est, X, y):
    return float(np.mean(est.predict(X) == y))


@pytest.mark.parametrize("offset", [1e4, 1e6])
def test_sbp_at_an_offset_keeps_its_float64_accuracy(data, offset):
    Xtr, ytr, Xte, yte = data
    kw = dict(random_state=0, n_iter=600)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # centring is silent: nothing is lost
        fast = algorithms.SBPClassifier(**kw).fit(Xtr + offset, ytr)
    full = algorithms.SBPClassifier(dtype="float64", **kw).fit(Xtr + offset, ytr)
    assert fast.model_.dtype == "float32"
    assert fast.model_.centre is not None and np.allclose(fast.model_.centre, Xtr.mean(axis=0) + offset)
    base = _accuracy(full, Xte + offset, yte)
    assert base > 0.8
    assert abs(_accuracy(fast, Xte + offset, yte) - base) <= 0.01


def test_no_offset_no_centre_same_model(data):
    Xtr, ytr, _, _ = data
    a = algorithms.SBPClassifier(random_state=0, n_iter=300).fit(Xtr, ytr).model_
    b = algorithms.SBPClassifier(random_state=0, n_iter=300, dtype="float32").fit(Xtr.astype(np.float32), ytr).model_
    assert a.centre is None and b.centre is None
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.support_vectors, b.support_vectors)


def test_centred_model_saves_loads_and_predicts_the_same(data, tmp_path):
    Xtr, ytr, Xte, _ = data
    model = algorithms.SBPClassifier(random_state=0, n_iter=300).fit(Xtr + 1e4, ytr).model_
    path = model.save(tmp_path / "m.npz")
    loaded = algorithms.load(path)
    assert loaded.centre == model.centre
    np.testing.assert_array_equal(loaded.decision_function(Xte + 1e4), model.decision_function(Xte + 1e4))
    # float32 and list input are centred in their own dtype before the cast, as in the fit
    np.testing.assert_allclose(model.decision_function((Xte + 1e4).tolist()), model.decision_function(Xte + 1e4))


def test_a_bad_centre_in_a_file_is_refused(data, tmp_path):
    import json

    Xtr, ytr, _, _ = data
    model = algorithms.SBPClassifier(random_state=0, n_iter=100).fit(Xtr + 1e4, ytr).model_
    path = model.save(tmp_path / "m.npz")
    with np.load(path) as f:
        arrays = dict(f)
    header = json.loads(bytes(arrays["__header__"]).decode())
    header["fields"]["centre"] = header["fields"]["centre"][:-1]
    arrays["__header__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match="centre"):
        algorithms.load(tmp_path / "bad.npz")


def test_linear_kernel_at_an_offset_computes_in_float64(data):
    Xtr, ytr, _, _ = data
    with pytest.warns(UserWarning, match="not translation invariant"):
        m = algorithms.SBPClassifier(random_state=0, n_iter=50, kernel="linear").fit(Xtr + 1e4, ytr).model_
    assert m.dtype == "float64" and m.centre is None


def test_random_features_centre_where_the_cast_loses_the_spread(data, tmp_path):
    """DSG at an offset of 1e7 on unit-spread features: the float32 cast would round the
    spread away (0.893 against float64's 0.920); the fit centres X in float64 before the
    cast, keeps float32, and the model (saved and loaded too) predicts raw rows."""
    Xtr, ytr, Xte, yte = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing lost, nothing to warn of
        fast = algorithms.DSGClassifier(random_state=0).fit(Xtr + 1e7, ytr)
    full = algorithms.DSGClassifier(random_state=0, dtype="float64").fit(Xtr + 1e7, ytr)
    assert fast.model_.dtype == "float32" and fast.model_.centre is not None
    np.testing.assert_allclose(fast.model_.centre, (Xtr + 1e7).mean(axis=0), rtol=1e-12)
    assert abs(_accuracy(fast, Xte + 1e7, yte) - _accuracy(full, Xte + 1e7, yte)) <= 0.01
    fast.model_.save(tmp_path / "m.npz")
    loaded = algorithms.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.predict(Xte + 1e7), fast.predict(Xte + 1e7))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = algorithms.DSGClassifier(random_state=0, n_iter=50).fit(Xtr + 1e3, ytr).model_
        assert plain.dtype == "float32" and plain.centre is None  # a small offset: the plain cast


def test_tsgs3vm_centres_both_sources_on_one_centre(data):
    """TSGS3VM at an offset of 1e7: the labelled rows' centre, the unlabelled rows on it
    (given apart or marked in y), float32, within 0.02 of the float64 fit."""
    Xtr, ytr, Xte, yte = data
    y_semi = np.where(np.arange(ytr.size) < 100, ytr, -1)
    kw = {"random_state": 0, "n_iter": 60}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        marked = algorithms.TSGS3VMClassifier(**kw).fit(Xtr + 1e7, y_semi)
    full = algorithms.TSGS3VMClassifier(dtype="float64", **kw).fit(Xtr + 1e7, y_semi)
    assert marked.model_.dtype == "float32" and marked.model_.centre is not None
    assert abs(_accuracy(marked, Xte + 1e7, yte) - _accuracy(full, Xte + 1e7, yte)) <= 0.02
    from algorithms import tsgs3vm

    apart = tsgs3vm.fit(Xtr[:100] + 1e7, ytr[:100], Xtr[100:] + 1e7, random_state=0, n_iter=60)
    assert apart.dtype == "float32" and apart.centre is not None
    assert abs(float(np.mean(tsgs3vm.predict(apart, Xte + 1e7) == yte)) - _accuracy(full, Xte + 1e7, yte)) <= 0.03


def test_tsgsu_centres_both_sources_on_one_centre(data, recwarn):
    """TSGSU at an offset of 1e7: the similar points' centre, the unlabelled points on it,
    float32, within 0.02 of the float64 fit's accuracy."""
    from algorithms import tsgsu

    Xtr, ytr, Xte, yte = data
    keep = np.flatnonzero((ytr == 1) | (np.arange(ytr.size) % 3 == 0))  # positives ~70%: a prior away from 1/2
    X, y_pm = Xtr[keep], np.where(ytr[keep] == 1, 1, -1)
    kw = {"prior": float(np.mean(y_pm == 1)), "random_state": 0, "n_iter": 60}
    X_s, X_u = tsgsu.make_su_data(X + 1e7, y_pm, 150, 400, random_state=0)
    fast = tsgsu.fit(X_s, X_u, **kw)
    assert not [w for w in recwarn if "times its spread" in str(w.message)]
    full = tsgsu.fit(X_s, X_u, dtype="float64", **kw)
    assert fast.dtype == "float32" and fast.centre is not None
    acc = [float(np.mean(tsgsu.predict(m, Xte + 1e7) == np.where(yte == 1, 1, -1))) for m in (fast, full)]
    assert acc[1] > 0.6 and abs(acc[0] - acc[1]) <= 0.02, acc  # the test rows: half each class


def test_a_warm_start_continues_on_the_first_fits_centre(data, recwarn):
    """At an offset of 1e7, a warm start's first fit centres X (float32, no warning) and its
    continuation centres the new rows on that centre: the model keeps float64's accuracy."""
    Xtr, ytr, Xte, yte = data
    fits = {}
    for dtype in (None, "float64"):
        est = algorithms.DSGClassifier(random_state=0, n_iter=20, warm_start=True, dtype=dtype).fit(Xtr + 1e7, ytr)
        centre = est.model_.centre
        est.set_params(n_iter=40).fit(Xtr[::-1] + 1e7, ytr[::-1])  # the rows in another order: another mean's rounding
        fits[dtype] = (est, centre)
    fast, centre = fits[None]
    assert not [w for w in recwarn if "times its spread" in str(w.message)]
    assert fast.model_.dtype == "float32" and centre is not None and fast.model_.centre == centre
    assert fast.n_iter_ == 40 and fits["float64"][0].model_.centre is None
    acc = [_accuracy(est, Xte + 1e7, yte) for est, _ in fits.values()]
    assert acc[1] > 0.8 and abs(acc[0] - acc[1]) <= 0.02, acc


def test_partial_fit_centres_every_batch_on_the_first_ones_centre(data, recwarn):
    """partial_fit at an offset of 1e7: the first batch decides the centre (its column means),
    every later batch is centred on it; float32, no warning, float64's accuracy."""
    Xtr, ytr, Xte, yte = data
    models = {}
    for dtype in (None, "float64"):
        est = algorithms.DSGClassifier(random_state=0, batch_size=64, dtype=dtype)
        for rows in np.array_split(np.arange(ytr.size), 4):
            est.partial_fit(Xtr[rows] + 1e7, ytr[rows], classes=[0, 1])
        models[dtype] = est
    fast = models[None]
    assert not [w for w in recwarn if "times its spread" in str(w.message)]
    first = np.array_split(np.arange(ytr.size), 4)[0]
    assert fast.model_.dtype == "float32"
    np.testing.assert_allclose(fast.model_.centre, (Xtr[first] + 1e7).mean(axis=0), rtol=1e-12)
    acc = [_accuracy(est, Xte + 1e7, yte) for est in models.values()]
    assert acc[1] > 0.8 and abs(acc[0] - acc[1]) <= 0.02, acc


def test_the_random_features_centre_alike_on_every_backend(data, backend):
    """At an offset of 1e7 every backend centres X on the same column means (the scan's
    sums on the device), computes in float32 and predicts raw rows as the cpu engine's
    centred model does."""
    Xtr, ytr, Xte, yte = data
    small = {"n_iter": 6, "batch_size": 64, "block_size": 16, "random_state": 3}
    ref = algorithms.dsg.fit(Xtr + 1e7, ytr, **small)
    model = algorithms.dsg.fit(backend.asarray(Xtr + 1e7), backend.asarray(ytr), backend=backend, **small)
    assert model.backend == backend.name and model.dtype == "float32"
    np.testing.assert_allclose(model.centre, ref.centre, rtol=1e-12)
    labels = to_numpy(algorithms.dsg.predict(model, backend.asarray(Xte + 1e7)))
    assert np.mean(labels == algorithms.dsg.predict(ref, Xte + 1e7)) >= 0.98


def test_scan_in_chunks_matches_the_whole_array(monkeypatch):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1000, 5)) * [1, 2, 3, 0, 5] + [1e4, -3, 0, 7, 1e-3]
    monkeypatch.setattr(precision, "SCAN_ROWS", 64)
    s = precision.scan(X, np)
    np.testing.assert_allclose(s.mean, X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(s.var, X.var(axis=0), rtol=1e-9, atol=1e-12)
    a = np.abs(X)
    assert s.largest == a.max() and s.smallest == a[a > 0].min()
    out = precision.centred_cast(X, s.mean, np, np.float32)
    np.testing.assert_array_equal(out, (X - s.mean).astype(np.float32))


def test_the_policy_makes_no_float64_copy_of_X():
    X = np.random.default_rng(0).normal(size=(1_000_000, 20)) + 1e4  # 160 MB
    bk = resolve("cpu")
    tracemalloc.start()
    out, centre = precision.compute_array(X, bk, None, expansion="rbf")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert centre is not None and out.dtype == np.float32
    assert peak < 0.8 * X.nbytes  # the float32 result (half) and chunk-sized temporaries


@pytest.mark.parametrize("how", ["one feature at 50x", "an offset of 30"])
def test_s3gd_warns_where_a_scale_costs_accuracy(data, how):
    Xtr, ytr, _, _ = data
    X = Xtr.copy()
    if how == "an offset of 30":
        X += 30.0
    else:
        X[:, 0] *= 50.0
    with pytest.warns(UserWarning, match="largest column RMS"):
        algorithms.S3GDClassifier(random_state=0, max_epochs=2).fit(X, ytr)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=ConvergenceWarning)  # two epochs: the cap, not the scale
        algorithms.S3GDClassifier(random_state=0, max_epochs=2).fit(Xtr, ytr)


def test_tsgsu_prior_of_one_is_refused_by_name(data):
    """Similar points of one class only: the estimated proportion of U in S is 0 (prior 1),
    which divided by zero (ZeroDivisionError) instead of naming the setting."""
    Xtr, ytr, _, _ = data
    s = np.where((np.arange(Xtr.shape[0]) < 600) & (ytr == 1), 1, 0)
    with pytest.raises(ValueError, match="every unlabeled point would be positive"):
        algorithms.TSGSUClassifier(random_state=0).fit(Xtr, s)
