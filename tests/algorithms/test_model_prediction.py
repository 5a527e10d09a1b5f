"""Models own their prediction: every model class's decision_function / predict is the
module functions', on every backend; the chunked kernel expansion; the BLAS guard."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from threadpoolctl import threadpool_info

from algorithms import KernelExpansionModel, LinearModel, RFFModel, dsg, s3gd, sbp
from algorithms._models.prediction import kernel_expansion
from algorithms._engine.threads import single_threaded_blas
from kbackends import resolve


def _standardised(loader):
    X, y = loader(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y


@pytest.fixture(scope="module")
def fitted():
    """(module, model, X, y) for each model class, binary and multi-class, and regression."""
    Xb, yb = _standardised(load_breast_cancer)
    Xi, yi = _standardised(load_iris)
    Xr, yr = _standardised(load_diabetes)
    small = {"n_iter": 15, "batch_size": 64, "block_size": 32, "random_state": 0}
    return {
        "rff_binary": (dsg, dsg.fit(Xb, yb, **small), Xb, yb),
        "rff_softmax": (dsg, dsg.fit(Xi, yi, loss="logistic", **small), Xi, yi),
        "rff_regression": (dsg, dsg.fit(Xr, yr, loss="squared", **small), Xr, yr),
        "expansion_binary": (sbp, sbp.fit(Xb, yb, nu=0.05, n_iter=200, random_state=0), Xb, yb),
        "expansion_ovr": (sbp, sbp.fit(Xi, yi, nu=0.05, n_iter=100, random_state=0), Xi, yi),
        "linear_binary": (s3gd, s3gd.fit(Xb, yb, step=0.1, max_epochs=2, random_state=0), Xb, yb),
        "linear_ovr": (s3gd, s3gd.fit(Xi, yi, step=0.1, max_epochs=2, random_state=0), Xi, yi),
    }


CASES = ["rff_binary", "rff_softmax", "rff_regression", "expansion_binary", "expansion_ovr", "linear_binary",
         "linear_ovr"]
MODEL_TYPES = {"rff": RFFModel, "expansion": KernelExpansionModel, "linear": LinearModel}


@pytest.mark.parametrize("case", CASES)
def test_the_model_method_is_the_module_function(fitted, case):
    module, model, X, y = fitted[case]
    assert isinstance(model, MODEL_TYPES[case.split("_")[0]])
    f = model.decision_function(X)
    np.testing.assert_array_equal(f, module.decision_function(model, X))
    n_outputs = 1 if case.endswith(("binary", "regression")) else 3
    assert f.shape == ((X.shape[0],) if n_outputs == 1 else (X.shape[0], n_outputs))
    pred = model.predict(X)
    np.testing.assert_array_equal(pred, module.predict(model, X))
    if case.endswith("regression"):
        np.testing.assert_array_equal(pred, f)
        assert np.corrcoef(pred, y)[0, 1] > 0.5
    else:
        # Labels are the decision's sign (binary, ties to the first class) or its argmax.
        index = (f > 0).astype(int) if f.ndim == 1 else np.argmax(f, axis=1)
        np.testing.assert_array_equal(pred, np.asarray(model.classes)[index])
        assert np.mean(pred == y) > 0.8


@pytest.mark.parametrize("case", CASES)
def test_prediction_runs_on_the_inputs_backend(fitted, backend, case):
    _, model, X, _ = fitted[case]
    f = model.decision_function(backend.asarray(X))
    pred = model.predict(backend.asarray(X))
    assert type(f) is type(backend.asarray(X))
    # Computed in the model's dtype (float32 for the engine's fits by default): the
    # backends' summation orders differ by its rounding.
    reference = model.decision_function(X)
    tol = (1e-9 if model.dtype == "float64" else 1e-5) * max(1.0, float(np.abs(reference).max()))
    np.testing.assert_allclose(backend.to_numpy(f), reference, rtol=0, atol=tol)
    if case.endswith("regression"):  # values: the sums' order differs across backends
        np.testing.assert_allclose(backend.to_numpy(pred), model.predict(X), rtol=0, atol=tol)
    else:
        np.testing.assert_array_equal(backend.to_numpy(pred), model.predict(X))


@pytest.mark.parametrize("case", ["rff_binary", "expansion_ovr", "linear_ovr"])
def test_array_likes_take_the_models_dtype_and_wrong_widths_are_refused(fitted, case):
    _, model, X, _ = fitted[case]
    f = model.decision_function(X[:3].tolist())
    assert f.dtype == np.dtype(model.dtype)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :-1])


def test_linear_model_raw_decision_and_task(fitted):
    bk = resolve("cpu")
    for case, task in (("linear_binary", "binary"), ("linear_ovr", "ovr")):
        _, model, X, _ = fitted[case]
        assert model.task == task
        raw = model.raw_decision(X, bk)
        assert raw.shape == (X.shape[0], model.coef.shape[0])
        np.testing.assert_allclose(raw, X @ model.coef.T + model.intercept, rtol=1e-12)


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_kernel_expansion_in_chunks_is_the_full_product(kernel):
    rng = np.random.default_rng(0)
    X, S, coef = rng.standard_normal((37, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    sq = ((X[:, None, :] - S[None, :, :]) ** 2).sum(-1)
    K = np.exp(-0.3 * sq) if kernel == "rbf" else X @ S.T
    for chunk_elements in (1, 5 * 4, 5 * 37, 1 << 22):  # one row, several, exactly all, all
        got = kernel_expansion(X, S, coef, kernel=kernel, gamma=0.3, xp=np, chunk_elements=chunk_elements)
        np.testing.assert_allclose(got, K @ coef, rtol=1e-12, atol=1e-12)


def _blas_threads():
    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


def test_single_threaded_blas_limits_the_cpu_backend_only_when_asked():
    before = _blas_threads()
    if not before:
        pytest.skip("threadpoolctl finds no BLAS library here")
    with single_threaded_blas(resolve("cpu")):
        assert all(n == 1 for n in _blas_threads())
    assert _blas_threads() == before
    with single_threaded_blas(resolve("cpu"), when=False):
        assert _blas_threads() == before
