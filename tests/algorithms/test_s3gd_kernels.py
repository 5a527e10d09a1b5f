"""S3GD's prox-SGD run (algorithms/s3gd/_kernels), registered with kbackends when
algorithms.s3gd is imported: the cuda loop (one single-block launch per outer loop)
against the numba cpu engine on the same problem and the same batches, every method,
loss and penalty, float64 tightly, float32 within float32 rounding; the cpu loop on
CSR rows against dense rows."""

import os

import numpy as np
import pytest
import scipy.sparse as sp

import kbackends
from algorithms.s3gd._kernels import _cuda as prox_cuda  # also registers the kernels
from kbackends import get_kernel, to_numpy
from kbackends.testing import kernel_module, prox_sgd_problem

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def _problem(seed=0):
    return prox_sgd_problem(n=40, d=6, m=5, k=3, seed=seed)


@pytest.mark.parametrize("method", ["s3gd", "svrg", "sgd"])
@pytest.mark.parametrize("loss, l1, l2, scaled", [("logistic", 0.0, 0.01, False), ("squared_hinge", 0.02, 0.0, True),
                                                  ("smooth_hinge", 0.01, 0.005, False), ("logistic", 0.0, 0.01, True)])
@pytest.mark.cuda
def test_matches_the_numba_engine(gpu, dtype_name, method, loss, l1, l2, scaled):
    X, cls, cw, Z, G, idx, gw = _problem()
    batches = np.random.default_rng(1).integers(0, X.shape[0], size=(2 * 3, 7))  # 7 rows: groups not filled
    w0 = np.full(X.shape[1] + 1, 0.1)
    kw = {"method": method, "loss": loss, "beta": 5.0, "eta": 0.3, "l1": l1, "l2": l2, "k_in": 3, "n_outer": 2,
          "record_step": 4}
    host = [np.asarray(a, dtype=dtype_name) if np.asarray(a).dtype.kind == "f" else a
            for a in (X, cls, w0, batches, cw, Z, G, idx, gw)]
    scale = np.random.default_rng(2).uniform(0.2, 2.0, X.shape[0]).astype(dtype_name) if scaled else None
    want = get_kernel("prox_sgd_run", "cpu")(*host, xp=np, row_scale=scale, **kw)
    got = get_kernel("prox_sgd_run", gpu)(*[gpu.asarray(a) for a in host], xp=gpu.xp,
                                          row_scale=None if scale is None else gpu.asarray(scale), **kw)
    tol = 2e-5 if dtype_name == "float32" else 1e-11
    for a, b in zip(got, want):
        assert to_numpy(a).dtype == np.dtype(dtype_name)
        np.testing.assert_allclose(np.asarray(to_numpy(a), dtype=np.float64), b, rtol=tol, atol=tol)
    assert np.any(to_numpy(got[0]) != w0.astype(dtype_name))


@pytest.mark.cuda
def test_the_cuda_backend_uses_the_kernel(gpu):
    assert get_kernel("prox_sgd_run", gpu) is prox_cuda.prox_sgd_run


@pytest.mark.cuda
@pytest.mark.skipif(SIMULATOR or "cuda" not in kbackends.available_backends(), reason="cuda.core launches need a GPU")
def test_the_fast_launch_gives_numbas_results_bit_for_bit(dtype_name, monkeypatch):
    """The prox-SGD kernels launched through cuda.core (kbackends.kernel_tools.run_kernel)
    give what Numba's own launch gives, to the bit."""
    gpu = kbackends.resolve("cuda")
    launch = kernel_module(None, "cuda_launch")
    X, cls, cw, Z, G, idx, gw = prox_sgd_problem()
    rng = np.random.default_rng(5)
    host = [np.asarray(a, dtype=dtype_name) if np.asarray(a).dtype.kind == "f" else a
            for a in (X, cls, np.full(X.shape[1] + 1, 0.1), rng.integers(0, X.shape[0], (4, 7)), cw, Z, G, idx, gw)]
    kw = {"method": "s3gd", "loss": "logistic", "beta": 5.0, "eta": 0.3, "l1": 0.0, "l2": 0.01, "k_in": 2,
          "n_outer": 2, "record_step": 1}
    results = {}
    for fast in (False, True):
        monkeypatch.setattr(launch, "launch_counts", {"fast": 0, "numba": 0})
        monkeypatch.setattr(launch, "FAST_LAUNCH", fast)
        got = prox_cuda.prox_sgd_run(*(gpu.asarray(a) for a in host), xp=gpu.xp, **kw)
        results[fast] = [to_numpy(a) for a in got]
        assert launch.launch_counts["fast" if fast else "numba"] > 0
        assert launch.launch_counts["numba" if fast else "fast"] == 0
    for a, b in zip(results[True], results[False]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("method", ["s3gd", "svrg", "sgd"])
@pytest.mark.parametrize("l1", [0.0, 0.02])  # without l1: the lazy O(nnz) steps; with: the O(d) loop on CSR rows
def test_prox_sgd_loop_on_csr_rows_matches_dense(method, l1):
    X, cls, cw, Z, G, idx, gw = prox_sgd_problem(n=60, d=8, m=7, k=3, seed=0)
    X = np.where(np.abs(X) > 0.8, X, 0.0)
    batches = np.random.default_rng(1).integers(0, X.shape[0], size=(3 * 4, 5))
    w0 = np.full(X.shape[1] + 1, 0.1)
    run = get_kernel("prox_sgd_run", "cpu")
    kw = {"xp": np, "method": method, "loss": "logistic", "beta": 5.0, "eta": 0.3, "l1": l1, "l2": 0.01, "k_in": 4,
          "n_outer": 3, "record_step": 6}
    dense = run(X, cls, w0, batches, cw, Z, G, idx, gw, **kw)
    for lazy in (True, False):
        got = run(sp.csr_matrix(X), cls, w0, batches, cw, Z, G, idx, gw, lazy=lazy, **kw)
        for a, b in zip(got, dense):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    assert np.any(dense[0] != w0)
    # importance weights on the rows' terms: CSR (both loops) as dense; weights of 1, the unweighted run to the bit
    scale = np.random.default_rng(2).uniform(0.2, 2.0, X.shape[0])
    scaled = run(X, cls, w0, batches, cw, Z, G, idx, gw, row_scale=scale, **kw)
    for lazy in (True, False):
        got = run(sp.csr_matrix(X), cls, w0, batches, cw, Z, G, idx, gw, lazy=lazy, row_scale=scale, **kw)
        for a, b in zip(got, scaled):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
        ones = run(sp.csr_matrix(X), cls, w0, batches, cw, Z, G, idx, gw, lazy=lazy, row_scale=np.ones(60), **kw)
        np.testing.assert_array_equal(ones[0], run(sp.csr_matrix(X), cls, w0, batches, cw, Z, G, idx, gw, lazy=lazy,
                                                   **kw)[0])
    np.testing.assert_array_equal(run(X, cls, w0, batches, cw, Z, G, idx, gw, row_scale=np.ones(60), **kw)[0], dense[0])
    assert np.max(np.abs(scaled[0] - dense[0])) > 1e-3
