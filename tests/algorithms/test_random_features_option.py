"""The engine algorithms' ``features`` option: stored in the model and its file, the same
model on cpu and cuda, refused with the Laplacian kernel."""

import numpy as np
import pytest

import algorithms
from algorithms import dsg, tsgs3vm, tsgsu
from algorithms.datasets import make_su_data
from kbackends import to_numpy
from kbackends.testing import two_blobs

FIT = {"n_iter": 6, "batch_size": 32, "block_size": 8, "gamma": 0.3, "random_state": 2, "early_stopping": False}


@pytest.mark.parametrize("features", ["orthogonal", "qmc"])
def test_the_model_keeps_its_features_through_a_file(features, tmp_path):
    X, y = two_blobs(80, 5, 0)
    model = dsg.fit(X, y, features=features, **FIT)
    assert model.features == features
    back = algorithms.load(model.save(tmp_path / "m.npz"))
    assert back.features == features
    np.testing.assert_array_equal(dsg.decision_function(back, X), dsg.decision_function(model, X))
    # the blocks are what predicts: the same coefficients on Monte-Carlo blocks answer otherwise
    other = type(model)(**{**model.__dict__, "features": "monte_carlo"})
    assert not np.allclose(dsg.decision_function(other, X), dsg.decision_function(model, X))


def test_the_default_is_monte_carlo_and_the_same_model_as_naming_it():
    X, y = two_blobs(80, 5, 0)
    default = dsg.fit(X, y, **FIT)
    named = dsg.fit(X, y, features="monte_carlo", **FIT)
    assert default.features == "monte_carlo"
    assert to_numpy(default.coef).tobytes() == to_numpy(named.coef).tobytes()
    assert dsg.DSGClassifier().get_params()["features"] == "monte_carlo"


def test_each_engine_algorithm_fits_with_each_features_and_refuses_them_with_the_laplacian():
    X, y = two_blobs(80, 5, 0)
    y_semi = np.where(np.arange(80) % 2 == 0, -1, y)  # every other row unlabeled
    X_s, X_u = make_su_data(X, 2 * y - 1, 30, 40, prior=0.7, replace=True, random_state=0)
    fits = {
        "dsg": lambda **kw: dsg.fit(X, y, **FIT, **kw),
        "tsgs3vm": lambda **kw: tsgs3vm.fit(X, y_semi, n_iter=4, batch_size=16,
                                            block_size=8, gamma=0.3, random_state=0, unlabeled_label=-1, **kw),
        "tsgsu": lambda **kw: tsgsu.fit(X_s, X_u, prior=0.7, n_iter=4, batch_size=16, block_size=8, gamma=0.3,
                                        random_state=0, **kw),
    }
    for name, fit in fits.items():
        assert fit(features="qmc").features == "qmc", name
        with pytest.raises(ValueError, match="not rotation invariant"):
            fit(features="orthogonal", kernel="laplacian")


@pytest.mark.cuda
@pytest.mark.parametrize("features", ["orthogonal", "qmc"])
def test_the_same_model_on_cpu_and_cuda(gpu, features):
    """The blocks are the same numbers on both engines, so the fits agree to float64 rounding."""
    X, y = two_blobs(80, 5, 0)
    cpu = dsg.fit(X, y, features=features, dtype="float64", backend="cpu", **FIT)
    cuda = dsg.fit(X, y, features=features, dtype="float64", backend=gpu, **FIT)
    assert cuda.features == features
    np.testing.assert_allclose(to_numpy(cuda.coef), to_numpy(cpu.coef), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(to_numpy(dsg.decision_function(cuda, X, backend=gpu)),
                               dsg.decision_function(cpu, X), rtol=1e-9, atol=1e-12)
