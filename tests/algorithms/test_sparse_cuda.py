"""DSG, TSGS3VM and TSGSU fits and predictions on CSR X on the cuda engine
(issue 14, point 2): the model of the dense input on the same engine, up to the
rounding of the products (the same random stream: same batches, same blocks).

Run under the simulator (``NUMBA_ENABLE_CUDASIM=1 python -m pytest -m cuda``),
where a scipy.sparse CSR stands in for a cupyx one, or on a GPU.

The transfer guard (:func:`kbackends.testing.transfer_guard`) watches
``array_api_strict`` arrays, and no sparse library holds those; what would
synchronise a cupyx matrix inside an iteration is guarded here instead on the
CSR class that stands in for it: gathering rows (``X[rows]``, ``X[a:b]``:
cupyx reads the result's size on the host), densifying, converting, leaving
the device (``get``). None may run inside a ``kbackends.sync_free`` region.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import kbackends
from algorithms import DSGClassifier, dsg, tsgs3vm, tsgsu
from kbackends import to_numpy
from kbackends.testing import transfer_guard

pytestmark = pytest.mark.cuda  # the backend: the `gpu` fixture (tests/conftest.py)

TOL = {"float32": 1e-4, "float64": 1e-10}



def _data(n=40, d=10, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.25, format="csr", random_state=seed, dtype=np.float64)
    y = np.where(X @ rng.standard_normal(d) > 0, 1, -1)
    return X.astype(dtype), y


def _close(a, b, dtype_name):
    np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=0, atol=TOL[dtype_name])


@pytest.mark.parametrize(("variant", "dtype_name"), [("dsg", "float64"), ("cdsg", "float32")])
def test_dsg_csr_is_the_dense_fit(gpu, variant, dtype_name):
    X, y = _data()
    kw = dict(variant=variant, n_iter=3, batch_size=16, block_size=8, gamma=0.5, random_state=0, backend=gpu,
              early_stopping=False, dtype=dtype_name)
    ms, md = dsg.fit(X, y, **kw), dsg.fit(X.toarray(), y, **kw)
    assert ms.backend == md.backend == gpu.name and ms.dtype == dtype_name and ms.n_blocks == md.n_blocks
    _close(ms.coef, md.coef, dtype_name)
    fs = ms.decision_function(X.tocsc(), backend=gpu)  # any format, on the device
    _close(fs, md.decision_function(X.toarray(), backend=gpu), dtype_name)
    np.testing.assert_array_equal(to_numpy(dsg.predict(ms, X, backend=gpu)), to_numpy(dsg.predict(md, X.toarray(),
                                                                                                  backend=gpu)))


def test_tsgs3vm_and_tsgsu_csr_are_the_dense_fits(gpu):
    X, y = _data()
    y_semi = np.where(np.arange(len(y)) < 16, (y == 1).astype(int), -1)
    kw = dict(n_iter=3, batch_size=16, block_size=8, gamma=0.5, random_state=0, backend=gpu)
    ms, md = tsgs3vm.fit(X, y_semi, **kw), tsgs3vm.fit(X.toarray(), y_semi, **kw)
    _close(ms.coef, md.coef, "float32")
    _close(tsgs3vm.decision_function(ms, X, backend=gpu), tsgs3vm.decision_function(md, X.toarray(), backend=gpu),
           "float32")
    X_s, X_u = X[:20], X[20:]
    kw = dict(prior=0.6, n_iter=2, batch_size=8, block_size=8, gamma=0.5, random_state=0, backend=gpu)
    ms, md = tsgsu.fit(X_s, X_u, **kw), tsgsu.fit(X_s.toarray(), X_u.toarray(), **kw)
    _close(ms.coef, md.coef, "float32")


def test_estimator_on_csr(gpu):
    X, y = _data()
    est = DSGClassifier(n_iter=3, batch_size=16, block_size=8, gamma="median", early_stopping=False, random_state=0,
                        backend=gpu.name)  # the median heuristic on the CSR rows too
    dense = DSGClassifier(**est.get_params()).fit(X.toarray(), y)
    est.fit(sp.coo_matrix(X), y)
    assert est.model_.gamma == pytest.approx(dense.model_.gamma, rel=1e-6)
    _close(est.decision_function(sp.csr_array(X)), dense.decision_function(X.toarray()), "float32")


_SYNCING = ("__getitem__", "toarray", "todense", "tocoo", "tocsc", "get", "sum_duplicates", "sort_indices")


@pytest.fixture
def guarded_csr(monkeypatch):
    """The CSR classes (scipy's, standing in for cupyx's) refuse, inside a sync-free
    region, what would read the device on the host or copy X."""
    trips = []
    for cls in (sp.csr_matrix, sp.csr_array):
        for name in _SYNCING:
            original = getattr(cls, name, None)
            if original is None:
                continue

            def wrapper(self, *args, _name=name, _original=original, **kwargs):
                if kbackends.in_sync_free_region():
                    trips.append(_name)
                    msg = f"CSR {_name} inside a sync-free loop"
                    raise AssertionError(msg)
                return _original(self, *args, **kwargs)

            monkeypatch.setattr(cls, name, wrapper)
    return trips


@pytest.mark.transfer_guard
def test_sparse_fits_gather_no_rows_inside_an_iteration(gpu, guarded_csr):
    X, y = _data()
    y_semi = np.where(np.arange(len(y)) < 16, (y == 1).astype(int), -1)
    with transfer_guard() as log:
        dsg.fit(X, y, n_iter=3, batch_size=16, block_size=8, gamma=0.5, random_state=0, backend=gpu,
                early_stopping=True, cache_predictions=True)  # held-out rows and prediction caches on CSR too
        dsg.fit(X, y, variant="cdsg", n_iter=3, batch_size=16, block_size=8, gamma=0.5, random_state=0,
                backend=gpu, early_stopping=False, precondition=None)
        tsgs3vm.fit(X, y_semi, n_iter=3, batch_size=16, block_size=8, gamma=0.5, random_state=0, backend=gpu)
    assert log.regions == 3 and log.blocked == [] and guarded_csr == []
