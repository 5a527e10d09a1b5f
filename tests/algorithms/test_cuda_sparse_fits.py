"""CSR X on the cuda engine (scipy.sparse standing in for cupyx.scipy.sparse under the
simulator): the response update and the anchor ops equal their dense results, SBP and
S3GD fit CSR X to the dense model, and no per-iteration CSR row indexing (the cupyx call
that reads a size back to the host) is made inside the loops."""

import numpy as np
import pytest
import scipy.sparse as sp

from algorithms import s3gd
from algorithms import sbp
from kbackends import ops, to_numpy
from kbackends.testing import kernel_module, two_blobs

pytestmark = pytest.mark.cuda


def _sparse_blobs(n=60, d=6, seed=1):
    X, y = two_blobs(n, d, seed)
    X[np.abs(X) < 2.0] = 0.0  # about 30 % stored: stays sparse (half or more would be made dense)
    return X, y


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(kernel_module(None, "cuda_launch"), "CHUNK_BYTES", 256)  # several row chunks


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_response_update_on_csr_equals_dense(gpu, dtype_name, kernel, small_chunks):
    X, _ = _sparse_blobs()
    X = X.astype(dtype_name)
    rng = np.random.default_rng(0)
    y = np.where(rng.random(60) > 0.5, 1.0, -1.0)
    c, coef, idx = rng.normal(size=60), rng.normal(size=4), np.array([3, 7, 7, 50])
    got = ops.kernel_response_update(sp.csr_matrix(X), idx, coef, y, c, kernel=kernel, gamma=0.3, backend=gpu)
    want = ops.kernel_response_update(X, idx, coef, y, c, kernel=kernel, gamma=0.3, backend=gpu)
    assert got.dtype == np.dtype(dtype_name)
    tol = 1e-5 if dtype_name == "float32" else 1e-12
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=tol, atol=tol)


def test_anchor_ops_on_csr_equal_dense(gpu, dtype_name, small_chunks):
    X, _ = _sparse_blobs()
    X = X.astype(dtype_name)
    S = sp.csr_matrix(X)
    A = X[[1, 5, 9, 20]]
    tol = 1e-5 if dtype_name == "float32" else 1e-12
    i1, w1 = ops.anchor_graph(S, A, 2, backend=gpu)
    i2, w2 = ops.anchor_graph(X, A, 2, backend=gpu)
    np.testing.assert_array_equal(to_numpy(i1), to_numpy(i2))
    np.testing.assert_allclose(to_numpy(w1), to_numpy(w2), rtol=tol, atol=tol)
    np.testing.assert_array_equal(to_numpy(ops.snap_to_samples(A + 0.01, S, backend=gpu)),
                                  to_numpy(ops.snap_to_samples(A + 0.01, X, backend=gpu)))
    acc = ops.anchor_accumulate(i1, w1, S, 4, backend=gpu)
    np.testing.assert_allclose(to_numpy(acc), to_numpy(ops.anchor_accumulate(i2, w2, X, 4, backend=gpu)),
                               rtol=tol, atol=tol)
    np.testing.assert_array_equal(to_numpy(acc), to_numpy(ops.anchor_accumulate(i1, w1, S, 4, backend=gpu)))
    np.testing.assert_allclose(to_numpy(ops.kmeans(S, 3, n_iter=3, random_state=0, backend=gpu)),
                               to_numpy(ops.kmeans(X, 3, n_iter=3, random_state=0, backend=gpu)), rtol=tol, atol=tol)


# SBP in float64 (its default computes in float32): the CSR and dense fits are compared
# to 1e-9, where only the summation order of the kernel products differs.
FITS = {
    "sbp": (sbp, {"nu": 0.2, "gamma": 0.2, "n_iter": 8, "random_state": 0, "dtype": "float64"}),
    "sbp_batch": (sbp, {"nu": 0.2, "gamma": 0.2, "n_iter": 5, "batch_size": 3, "random_state": 0,
                        "dtype": "float64"}),
    "s3gd": (s3gd, {"max_epochs": 1, "n_anchors": 6, "random_state": 0}),
    "svrg": (s3gd, {"max_epochs": 1, "method": "svrg", "random_state": 0}),
}


@pytest.mark.parametrize("name", list(FITS))
def test_fit_on_csr_equals_dense(gpu, name):
    module, kw = FITS[name]
    X, y = _sparse_blobs()
    model = module.fit(sp.csr_matrix(X), y, backend=gpu, **kw)
    dense = module.fit(X, y, backend=gpu, **kw)
    if module is sbp:
        # kept as CSR (scipy under the simulator, cupyx on a GPU; model format 3 when saved)
        assert ops.is_sparse(model.support_vectors)
    np.testing.assert_allclose(to_numpy(model.decision_function(sp.csr_matrix(X))),
                               to_numpy(dense.decision_function(X)), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(to_numpy(module.predict(model, sp.csr_matrix(X))), to_numpy(module.predict(dense, X)))


@pytest.mark.parametrize("name", ["sbp_batch", "s3gd"])
def test_loops_index_no_csr_rows_per_iteration(gpu, name, monkeypatch):
    """cupyx's CSR row indexing reads the result's size back to the host: the loops must
    not use it per iteration (SBP densifies its sampled rows on the device; the S3GD
    kernel reads the CSR arrays). Counted on scipy's stand-in: the number of row
    indexings must not grow with the iterations."""
    module, kw = FITS[name]
    X, y = _sparse_blobs()
    calls = []
    getitem = sp.csr_matrix.__getitem__

    def counting(self, key):
        calls.append(1)
        return getitem(self, key)

    monkeypatch.setattr(sp.csr_matrix, "__getitem__", counting)
    counts = []
    for more in (1, 3):
        args = dict(kw)
        if module is sbp:
            args["n_iter"] = kw["n_iter"] * more
        else:
            args["max_epochs"] = kw["max_epochs"] * more
        calls.clear()
        module.fit(sp.csr_matrix(X), y, backend=gpu, **args)
        counts.append(len(calls))
    assert counts[0] == counts[1]
