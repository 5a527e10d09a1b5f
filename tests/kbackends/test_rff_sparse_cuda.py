"""The cuda rff kernels on CSR input (issue 14, point 2): the values of the same
kernels on the dense matrix, over several row chunks, in both forms and both
dtypes, and for named row subsets (:class:`kbackends.ops.CSRRows`, repeats
included) the values of the gathered rows.

Run under the simulator (``NUMBA_ENABLE_CUDASIM=1 python -m pytest -m cuda``),
where a scipy.sparse CSR stands in for a cupyx one, or on a GPU.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from kbackends import ops, to_numpy
from kbackends.random import omega_block
from kbackends.testing import kernel_module

launch = kernel_module(None, "cuda_launch")

pytestmark = pytest.mark.cuda  # the backend: the `gpu` fixture (tests/conftest.py)

TOL = {"float32": 2e-5, "float64": 1e-12}  # relative to what is summed



@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(launch, "CHUNK_BYTES", 256)  # a few rows a chunk


def _problem(dtype_name, n=13, d=7, m=4, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.3, format="csr", random_state=seed, dtype=np.float64)
    X.data = rng.standard_normal(X.nnz)
    X = X.tolil()
    X[4, :] = 0  # an empty row
    X = X.tocsr().astype(dtype_name)
    X.eliminate_zeros()
    omega, phase = (np.asarray(a) for a in omega_block(seed, 0, m, d, gamma=0.5, dtype=dtype_name, backend="cpu"))
    return X, omega, phase, rng


def _device(X, gpu):
    """``X`` as the backend holds it: cupyx on a GPU, scipy under the simulator."""
    return ops.as_csr(ops.to_backend(X, gpu))


def _close(got, expected, dtype_name, scale=1.0):
    got, expected = to_numpy(got), to_numpy(expected)
    assert got.dtype == np.dtype(dtype_name) and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=TOL[dtype_name] * max(1.0, scale))


@pytest.mark.parametrize("form", ["cos", "cossin"])
def test_csr_ops_equal_dense_over_chunks(gpu, small_chunks, dtype_name, form):
    X, omega, phase, rng = _problem(dtype_name)
    m = omega.shape[0]
    assert launch.chunk_rows(X.shape[0], 3 * m * X.dtype.itemsize) < X.shape[0] // 2  # several chunks
    n_out = m * (2 if form == "cossin" else 1)
    coef = rng.standard_normal((n_out, 3)).astype(dtype_name)
    g = rng.standard_normal((2, X.shape[0])).astype(dtype_name)
    Xs, Xd = _device(X, gpu), gpu.asarray(X.toarray())
    om, ph, cf, gg = (gpu.asarray(a) for a in (omega, phase, coef, g))
    for op, extra, scale in ((ops.rff_features, (), 1.0), (ops.rff_predict, (cf,), np.abs(coef).sum(0).max()),
                             (ops.rff_weighted_sum, (gg,), np.abs(g).sum(1).max())):
        got = op(Xs, om, ph, *extra, form=form, backend=gpu)
        _close(got, op(Xd, om, ph, *extra, form=form, backend=gpu), dtype_name, scale)
        # the cpu backend's CSR kernels agree too (its float32 sums run in another order)
        _close(got, op(X, omega, phase, *(to_numpy(e) for e in extra), form=form, backend="cpu"), dtype_name,
               10 * scale)
    got = ops.rff_predict(Xs, om, ph, cf[:, 0], form=form, backend=gpu)  # one target: 1-D coef
    _close(got, ops.rff_predict(Xd, om, ph, cf[:, 0], form=form, backend=gpu), dtype_name, np.abs(coef[:, 0]).sum())


def test_named_rows_equal_gathered_rows(gpu, small_chunks, dtype_name):
    """A CSRRows (what the engine passes for a mini-batch on cuda) reads the rows it
    names, in order, repeats included, bit for bit as the gathered CSR rows."""
    _cuda = kernel_module("rff", "cuda")
    X, omega, phase, rng = _problem(dtype_name)
    rows = np.array([3, 4, 0, 3, 12, 7, 7], dtype=np.int64)  # repeats and the empty row
    Xs = _device(X, gpu)
    named = ops.CSRRows(Xs, gpu.asarray(rows))
    assert named.shape == (rows.size, X.shape[1]) and named.dtype == X.dtype
    gathered = _device(X[rows], gpu)
    om, ph = gpu.asarray(omega), gpu.asarray(phase)
    coef = gpu.asarray(rng.standard_normal((omega.shape[0], 2)).astype(dtype_name))
    g = gpu.asarray(rng.standard_normal((2, rows.size)).astype(dtype_name))
    kw = {"xp": gpu.xp, "form": "cos"}
    pairs = [(_cuda.rff_features(named, om, ph, **kw), _cuda.rff_features(gathered, om, ph, **kw)),
             (_cuda.rff_features(named, om, ph, xp=gpu.xp, form="cossin"),
              _cuda.rff_features(gathered, om, ph, xp=gpu.xp, form="cossin")),
             (_cuda.rff_predict(named, om, ph, coef, **kw), _cuda.rff_predict(gathered, om, ph, coef, **kw)),
             (_cuda.rff_weighted_sum(named, om, ph, g, **kw), _cuda.rff_weighted_sum(gathered, om, ph, g, **kw))]
    for a, b in pairs:
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    # and the rows are the right ones: the dense features of those rows
    _close(_cuda.rff_features(named, om, ph, xp=gpu.xp, form="cos"),
           ops.rff_features(X.toarray()[rows], omega, phase, backend="cpu"), dtype_name)


def test_sparse_taken_on_cuda_kinds_only(gpu):
    X, omega, phase, _ = _problem("float64")
    assert ops.SPARSE_BACKENDS == ("cpu", "cudasim", "cuda")
    out = ops.rff_features(X.tocoo(), omega, phase, backend=gpu)  # any format, converted once
    assert out.shape == (X.shape[0], omega.shape[0])
    with pytest.raises(TypeError, match="`omega` has dtype float32 but `X` has float64"):
        ops.rff_features(X, omega.astype(np.float32), phase, backend=gpu)
    bad = X.copy()
    bad.data[0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        ops.rff_features(bad, omega, phase, backend=gpu)
