"""The cuda form of the engine's preconditioned block step (kernels/gauss_newton)
against its array-API reference on the same inputs: the float64 system of one and
of two sources (accumulated in place), with and without the intercept, one output
and more outputs than a pass of the column kernel sums, batches and blocks not a
multiple of the block's threads; then the regularised solve and the changes."""

import numpy as np
import pytest

from kbackends import get_kernel, resolve, to_numpy
from kbackends.testing import TOLERANCE, kernel_module, oracle

pytestmark = pytest.mark.cuda


def _source(rng, B, F, k, dtype):
    phi = np.cos(rng.uniform(-3, 3, (B, F))).astype(dtype)
    g = np.where(rng.random((B, k)) < 0.5, -1.0, 0.0).astype(dtype) * rng.uniform(0.5, 2.0)
    return phi, g


def _system(fn, bk, sources, fit_intercept):
    cov = rhs = None
    for (phi, g), weight in sources:
        cov, rhs = fn(bk.asarray(phi), bk.asarray(g), cov, rhs, xp=bk.xp, weight=weight, fit_intercept=fit_intercept)
    return cov, rhs


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("B, F, k, n_sources", [(1, 1, 1, 1), (7, 5, 1, 2), (40, 33, 5, 1), (70, 9, 3, 2)])
def test_system_matches_the_reference(gpu, dtype_name, B, F, k, n_sources, fit_intercept):
    rng = np.random.default_rng(B * F + k)
    sources = [(_source(rng, B + 3 * s, F, k, dtype_name), weight) for s, weight in zip(range(n_sources), (1.0, 0.3))]
    cpu = resolve("cpu")
    want = [to_numpy(a) for a in _system(oracle("gn_system"), cpu, sources, fit_intercept)]
    got = [to_numpy(a) for a in _system(get_kernel("gn_system", gpu), gpu, sources, fit_intercept)]
    n_cols = F + fit_intercept
    for name, a, b, shape in zip(("cov", "rhs"), got, want, ((n_cols, n_cols), (n_cols, k))):
        assert a.dtype == np.float64 and a.shape == b.shape == shape, name
        # entries are means of products of values <= 2 in magnitude, summed in the compute dtype
        np.testing.assert_allclose(a, b, rtol=0, atol=8 * TOLERANCE[dtype_name], err_msg=name)
    if fit_intercept:  # the intercept's row and column: the columns' weighted means, and the weights
        total = sum(weight for _, weight in sources)
        np.testing.assert_allclose(got[0][F, F], total, rtol=1e-12)
        np.testing.assert_allclose(got[0][F, :F], got[0][:F, F], rtol=0, atol=0)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("F, k", [(1, 1), (33, 1), (6, 5)])
def test_solve_matches_the_reference(gpu, dtype_name, F, k, fit_intercept):
    rng = np.random.default_rng(F + k)
    n_cols = F + fit_intercept
    A = rng.standard_normal((3 * n_cols, n_cols))
    cov = A.T @ A / (3 * n_cols)  # a covariance, as gn_system's
    rhs = rng.standard_normal((n_cols, k))
    dtype = np.dtype(dtype_name)
    kw = {"ridge": 0.3, "eta": 0.7, "n_features": F, "fit_intercept": fit_intercept}
    want = oracle("gn_solve")(cov.copy(), rhs, xp=np, dtype=dtype, **kw)
    got = get_kernel("gn_solve", gpu)(gpu.asarray(cov.copy()), gpu.asarray(rhs), xp=gpu.xp,
                                      dtype=gpu.xp.float32 if dtype_name == "float32" else gpu.xp.float64, **kw)
    for name, a, b in zip(("delta", "delta_b"), map(to_numpy, got), want):
        assert a.dtype == dtype and a.shape == b.shape, name
        scale = np.abs(b).max() + 1.0
        np.testing.assert_allclose(a, b, rtol=0, atol=TOLERANCE[dtype_name] * scale, err_msg=name)
    if not fit_intercept:
        assert not np.any(to_numpy(got[1]))


@pytest.mark.parametrize("K, n", [(1, 1), (5, 34), (3, 257)])
def test_the_inverses_of_built_ahead_systems_match_the_reference(gpu, K, n):
    """gn_inverses (on cuda by Cholesky factors) against the stack's linalg.inv: the
    regularised covariances of the step, well and poorly conditioned."""
    rng = np.random.default_rng(K + n)
    A = rng.standard_normal((K, 2 * n, n)) * np.logspace(0, 3, n)  # columns of very different scales
    systems = np.matmul(np.swapaxes(A, 1, 2), A) / (2 * n) + 1e-3 * np.eye(n)
    want = oracle("gn_inverses")(systems, xp=np)
    got = to_numpy(get_kernel("gn_inverses", gpu)(gpu.asarray(systems), xp=gpu.xp))
    assert got.shape == (K, n, n) and got.dtype == np.float64
    np.testing.assert_allclose(np.matmul(got, systems), np.broadcast_to(np.eye(n), (K, n, n)), atol=1e-7)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9 * np.abs(want).max())


def test_the_ridge_is_the_mean_feature_variance_and_spares_the_intercept(gpu):
    # a diagonal system solves by hand: step_j = rhs_j / (cov_jj + ridge * mean(cov_jj, j < F))
    F = 4
    diag = np.array([1.0, 2.0, 3.0, 6.0, 5.0])  # the last entry is the intercept's
    rhs = np.ones((F + 1, 1))
    got = get_kernel("gn_solve", gpu)(gpu.asarray(np.diag(diag)), gpu.asarray(rhs), xp=gpu.xp, ridge=0.5, eta=1.0,
                                      n_features=F, fit_intercept=True, dtype=gpu.xp.float64)
    mean = diag[:F].mean()
    np.testing.assert_allclose(to_numpy(got[0])[:, 0], -1.0 / (diag[:F] + 0.5 * mean), rtol=1e-14)
    np.testing.assert_allclose(to_numpy(got[1]), [-1.0 / diag[F]], rtol=1e-14)


@pytest.mark.parametrize("k", [1, 3])
def test_the_cupy_solve_keeps_cusolvers_contract(monkeypatch, k):
    """The device path of ``_solve_in_place`` solves by cupyx.lapack.posv (Cholesky), which
    returns the solution and leaves its arguments' values alone: checked here with a
    stand-in of that contract, one output or several, on a system built as the step's is."""
    import sys
    import types

    _cuda = kernel_module("gauss_newton", "cuda")

    def posv(a, b):
        np.linalg.cholesky(a)  # refuses what is not positive definite, as potrf reports it
        return np.linalg.solve(a, b)

    lapack = types.ModuleType("cupyx.lapack")
    lapack.posv = posv
    cupyx = types.ModuleType("cupyx")
    cupyx.lapack = lapack
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    monkeypatch.setitem(sys.modules, "cupyx.lapack", lapack)
    monkeypatch.setattr(_cuda, "is_cupy_namespace", lambda xp: True)
    rng = np.random.default_rng(k)
    phi = np.hstack([np.cos(rng.uniform(-3, 3, (40, 5))), np.ones((40, 1))])
    a = phi.T @ phi / 40 + np.diag([0.1] * 5 + [0.0])  # the step's system: PD with the intercept unpenalised
    b = np.ascontiguousarray(rng.standard_normal((6, k)))
    got = _cuda._solve_in_place(a.copy(), b.copy(), np)
    np.testing.assert_allclose(got, np.linalg.solve(a, b), rtol=1e-10)
