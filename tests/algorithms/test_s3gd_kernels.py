"""The cuda prox-SGD loop (one single-block launch per outer loop) against the
numba cpu engine on the same problem and the same batches: every method, loss
and penalty, float64 tightly, float32 within float32 rounding."""


import numpy as np
import pytest

from kbackends import get_kernel
from kbackends.testing import kernel_module, prox_sgd_problem
from kbackends import to_numpy

pytestmark = pytest.mark.cuda


def _problem(seed=0):
    return prox_sgd_problem(n=40, d=6, m=5, k=3, seed=seed)


@pytest.mark.parametrize("method", ["s3gd", "svrg", "sgd"])
@pytest.mark.parametrize("loss, l1, l2", [("logistic", 0.0, 0.01), ("squared_hinge", 0.02, 0.0),
                                          ("smooth_hinge", 0.01, 0.005)])
def test_matches_the_numba_engine(gpu, dtype_name, method, loss, l1, l2):
    X, cls, cw, Z, G, idx, gw = _problem()
    batches = np.random.default_rng(1).integers(0, X.shape[0], size=(2 * 3, 7))  # 7 rows: groups not filled
    w0 = np.full(X.shape[1] + 1, 0.1)
    kw = {"method": method, "loss": loss, "beta": 5.0, "eta": 0.3, "l1": l1, "l2": l2, "k_in": 3, "n_outer": 2,
          "record_step": 4}
    host = [np.asarray(a, dtype=dtype_name) if np.asarray(a).dtype.kind == "f" else a
            for a in (X, cls, w0, batches, cw, Z, G, idx, gw)]
    want = get_kernel("prox_sgd_run", "cpu")(*host, xp=np, **kw)
    got = get_kernel("prox_sgd_run", gpu)(*[gpu.asarray(a) for a in host], xp=gpu.xp, **kw)
    tol = 2e-5 if dtype_name == "float32" else 1e-11
    for a, b in zip(got, want):
        assert to_numpy(a).dtype == np.dtype(dtype_name)
        np.testing.assert_allclose(np.asarray(to_numpy(a), dtype=np.float64), b, rtol=tol, atol=tol)
    assert np.any(to_numpy(got[0]) != w0.astype(dtype_name))


def test_the_cuda_backend_uses_the_kernel(gpu):
    prox_sgd_run = kernel_module("prox_sgd", "cuda").prox_sgd_run

    assert get_kernel("prox_sgd_run", gpu) is prox_sgd_run
