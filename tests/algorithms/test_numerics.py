"""Numerics that must not go silently wrong: the median heuristic at any scale,
non-finite fits refused at fit time, non-finite decision values refused at predict."""

import dataclasses

import numpy as np
import pytest
from sklearn.datasets import make_circles

from algorithms import _engine
from algorithms import dsg
from algorithms import s3gd
from algorithms import sbp
from algorithms._boundary.finite import check_finite_fit
from algorithms._boundary.validation import median_gamma
from kbackends import resolve


@pytest.fixture(scope="module")
def circles():
    X, y = make_circles(n_samples=600, noise=0.05, factor=0.5, random_state=0)
    return X, y


@pytest.mark.parametrize("scale", [1e-7, 1e-3, 1e4, 1e150, 1e-150])
def test_median_gamma_is_scale_invariant(circles, scale):
    X, _ = circles
    bk = resolve("cpu")
    assert median_gamma(X * scale, bk, 0) * scale * scale == pytest.approx(median_gamma(X, bk, 0), rel=1e-9)


def test_median_gamma_ignores_a_common_offset(circles):
    X, _ = circles
    bk = resolve("cpu")
    assert median_gamma(X + 1e6, bk, 0) == pytest.approx(median_gamma(X, bk, 0), rel=1e-6)


def test_median_gamma_identical_rows_is_neutral():
    assert median_gamma(np.full((20, 3), 1e-9), resolve("cpu"), 0) == 1.0


def test_median_on_tiny_features_learns(circles):
    """Features at a 1e-7 scale get their own width (0.55 accuracy with the old absolute cut)."""
    X, y = circles
    accs = []
    for s in (1.0, 1e-7):
        model = dsg.fit(X * s, y, gamma="median", n_iter=30, batch_size=256, block_size=64, random_state=0)
        accs.append(float(np.mean(dsg.predict(model, X * s) == y)))
    assert accs[0] > 0.95
    assert accs[1] == pytest.approx(accs[0], abs=0.02)


def test_median_on_huge_features_says_what_to_do(circles):
    X, y = circles
    # Refused at the boundary (squared row sums overflow float64), before the median heuristic.
    with pytest.raises(ValueError, match=r"`X` has values up to .*standardise the features"):
        dsg.fit(X * 1e200, y, gamma="median", n_iter=2, batch_size=64, block_size=16, random_state=0)


def test_fit_with_non_finite_features_raises(monkeypatch):
    """A fit whose coefficients end non-finite is refused with what to change, instead
    of returning a model that predicts classes[0] everywhere. Inputs that would make it
    so are refused earlier (the boundary: squared row sums must be finite), so the
    engine's result is made non-finite here."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match=r"`X` has values up to .*standardise the features"):
        dsg.fit(X * np.float32(1e19), y, gamma=1.0, n_iter=3, batch_size=64, block_size=16, random_state=0)
    run = _engine.loop._run

    def poisoned(*args, **kwargs):
        result = run(*args, **kwargs)
        return dataclasses.replace(result, coef=result.coef * np.nan)

    monkeypatch.setattr(_engine.loop, "_run", poisoned)
    with pytest.raises(ValueError, match=r"non-finite coefficients.*lower `step`.*standardise `X`"):
        dsg.fit(X, y, gamma=1.0, n_iter=3, batch_size=64, block_size=16, random_state=0)


def test_sbp_fit_refuses_non_finite_model(circles, monkeypatch):
    X, y = circles
    run = sbp._fit.run

    def nan_run(*args, **kwargs):
        result = run(*args, **kwargs)
        result["alpha_bar"] = result["alpha_bar"] * np.nan
        return result

    monkeypatch.setattr(sbp._fit, "run", nan_run)
    with pytest.raises(ValueError, match=r"SBP ended with non-finite coefficients.*lower `gamma`"):
        sbp.fit(X, y, nu=0.05, gamma=1.0, n_iter=20, random_state=0)


def test_check_finite_fit_names_the_arrays():
    X = np.ones((3, 2))
    check_finite_fit({"coefficients": np.ones(2)}, X, np, algorithm="S3GD", hint="lower `step`")
    with pytest.raises(ValueError, match=r"S3GD ended with non-finite intercept .*lower `step`"):
        check_finite_fit({"coefficients": np.ones(2), "intercept": np.array([np.inf])}, X, np,
                         algorithm="S3GD", hint="lower `step`")


def test_predict_refuses_non_finite_decision_values(circles):
    X, y = circles
    linear = s3gd.fit(X, y, lam=1e-3, max_epochs=2, random_state=0, method="sgd")
    big = np.full((3, 2), 1e150)  # squares finite: the boundary takes them
    big[0] = 0.0  # one finite decision value, two overflowing
    linear = dataclasses.replace(linear, coef=np.full_like(linear.coef, 1e200))
    with pytest.raises(ValueError, match=r"decision values of 2 row\(s\) of `X` are NaN or inf"):
        s3gd.predict(linear, big)

    model = dsg.fit(X, y, gamma=1.0, n_iter=3, batch_size=64, block_size=16, random_state=0)
    broken = dataclasses.replace(model, intercept=model.intercept * np.nan)
    with pytest.raises(ValueError, match=r"NaN or inf"):
        dsg.predict(broken, X[:5])

    kernel = sbp.fit(X, y, nu=0.05, gamma=1.0, n_iter=50, random_state=0)
    broken = dataclasses.replace(kernel, coef=kernel.coef * np.nan)
    with pytest.raises(ValueError, match=r"NaN or inf"):
        sbp.predict(broken, X[:5])


def test_engine_computes_in_float32_by_default(circles):
    """float64 input is computed as the float32 path (same model as a float32 cast),
    `dtype="float64"` keeps full float64, and predict computes in the model's dtype."""
    X, y = circles
    args = {"gamma": 1.0, "n_iter": 5, "batch_size": 128, "block_size": 32, "random_state": 0}
    default = dsg.fit(X, y, **args)
    cast = dsg.fit(X.astype(np.float32), y, **args)
    full = dsg.fit(X, y, dtype="float64", **args)
    assert default.dtype == "float32" and full.dtype == "float64"
    np.testing.assert_array_equal(default.coef, cast.coef)
    f32 = dsg.decision_function(default, X)
    f64 = dsg.decision_function(full, X.astype(np.float32))
    assert f32.dtype == np.float32 and f64.dtype == np.float64
    np.testing.assert_allclose(f32, f64, rtol=0, atol=1e-4)


def test_engine_keeps_float64_outside_float32_range(circles):
    X, y = circles
    args = {"gamma": 1e-70, "n_iter": 2, "batch_size": 128, "block_size": 16, "random_state": 0}
    with pytest.warns(UserWarning, match="computing in float64"):
        assert dsg.fit(X * 1e35, y, **args).dtype == "float64"
    assert dsg.fit(X, y, **{**args, "gamma": 1.0}).dtype == "float32"
