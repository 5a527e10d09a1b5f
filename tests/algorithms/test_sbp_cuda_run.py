"""The cuda engine's SBP run (``_kernels/_cuda_run.py``: many iterations in one launch
of one block) against the cpu engine's compiled run on the same state: the same draws,
responses and averaged responses to rounding, through cold levels (the first
iteration, renormalisations) and warm ones; and a whole fit through it equal to the
step-by-step cuda iteration's model."""

import numpy as np
import pytest
import scipy.sparse as sp

import algorithms.sbp  # noqa: F401  (registers the kernels)
from algorithms import sbp
from algorithms.sbp import _kernels as sbp_kernels
from algorithms.sbp import _loop
from algorithms.sbp._kernels import _cuda_level, _cuda_run
from kbackends import get_kernel, ops, resolve, to_numpy
from kbackends.kernel_tools import WARM_STATE
from kbackends.testing import two_blobs

pytestmark = pytest.mark.cuda


def _state(n, n_iter, dtype):
    return (np.zeros(n, dtype=dtype), np.zeros(n), np.array([1.0, 0.0, 0.0, 0.0, 0.0]), np.zeros(WARM_STATE),
            np.zeros(n_iter, dtype=np.int64), np.zeros(n_iter))


def _run(bk, X, Y, *, n_iter, sq_norms, threshold, gamma, kernel_code, chunks):
    """``sbp_run`` of backend ``bk`` over ``n_iter`` iterations in ``chunks`` calls, the
    arrays on its device; returns them on the host."""
    run = get_kernel("sbp_run", bk)
    n = Y.shape[0]
    C, C_bar, scalars, warm, idx_log, s_log = _state(n, n_iter, Y.dtype)
    C, C_bar, idx_log, s_log, Y_d, ones = (bk.asarray(a) for a in (C, C_bar, idx_log, s_log, Y, np.ones(n)))
    X = ops.to_backend(X, bk) if sp.issparse(X) else bk.asarray(X)
    uniforms = bk.asarray(np.random.default_rng(1).random(n_iter))
    extra = {} if sq_norms is None else {"sq_norms": bk.asarray(sq_norms)}
    edges = np.linspace(0, n_iter, chunks + 1).astype(int)
    for t0, t1 in zip(edges[:-1], edges[1:]):
        run(X, Y_d, C, C_bar, ones, uniforms[t0:t1], scalars, idx_log, s_log, warm, xp=bk.xp, t0=int(t0), eta0=1.0,
            volume=0.05 * n, kernel_code=kernel_code, gamma=gamma, renormalise_below=threshold, **extra)
    return to_numpy(idx_log), to_numpy(s_log), to_numpy(C), to_numpy(C_bar), scalars, warm


@pytest.mark.parametrize(("sparse", "kernel_code", "dtype"), [
    (False, 0, np.float64), (True, 0, np.float64), (False, 1, np.float64), (True, 1, np.float32),
    (False, 0, np.float32),
])
def test_the_cuda_run_equals_the_cpu_run(gpu, sparse, kernel_code, dtype):
    """float64, 90 rows, 60 iterations in two calls, with the RBF kernel a
    renormalisation threshold that the scale crosses (each time, the next level is
    cold: the host's, between launches)."""
    X, y = two_blobs(90, 5, 3)
    X[np.abs(X) < 0.7] = 0.0
    X = X.astype(dtype)
    Y = np.where(y > 0, 1.0, -1.0).astype(dtype)
    Y[::9] *= -1  # label noise: rows stay under water
    rows = sp.csr_matrix(X) if sparse else X
    sq_norms = np.asarray(rows.multiply(rows).sum(axis=1), dtype=np.float64).ravel().astype(dtype) if sparse else None
    args = {"n_iter": 60, "sq_norms": sq_norms, "threshold": 0.5, "gamma": 0.4, "kernel_code": kernel_code,
            "chunks": 2}
    want = _run(resolve("cpu"), rows, Y, **args)
    got = _run(gpu, rows, Y, **args)
    np.testing.assert_array_equal(got[0], want[0])  # the draws
    if kernel_code == 0:  # the RBF run renormalises (cold levels between launches); the linear one never projects
        assert (want[1] < 0.5).sum() >= 3
    tol = 1e-9 if dtype == np.float64 else 1e-4  # float32 responses: 60 updates rounded apart
    for g, w in zip(got[1:5], want[1:5]):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    np.testing.assert_allclose(got[5][:4], want[5][:4], rtol=tol, atol=tol)  # the bands


def test_bands_past_shared_memory_sorted_in_device_memory(gpu, monkeypatch):
    """Bands too large for the block's shared arrays are sorted by one thread in device
    memory: the same run (forced here with shared arrays of one value; under the
    simulator, which sizes them when it runs)."""
    monkeypatch.setattr(_cuda_run, "SHARED_BAND", 1)
    test_the_cuda_run_equals_the_cpu_run(gpu, False, 0, np.float64)


@pytest.mark.parametrize(("switch", "module"), [("CUDA_RUN", "_cuda_run"), ("WINDOW_RUN", "_cuda_window")])
def test_a_fit_through_a_cuda_run_equals_the_step_by_step_fit(gpu, monkeypatch, switch, module):
    """The loop's compiled path on cuda (the one-block run, the window run): the model of
    the step-by-step iteration; a callback sees each iteration's figures and stops the fit."""
    X, y = two_blobs(80, 4, 5)
    args = {"nu": 0.1, "gamma": 0.3, "n_iter": 40, "random_state": 0, "dtype": "float64", "backend": gpu}
    step_by_step = sbp.fit(X, y, **args)
    monkeypatch.setattr(_loop, switch, True)
    used, compiled = [], _loop._compiled_kernel
    monkeypatch.setattr(_loop, "_compiled_kernel", lambda bk: used.append(compiled(bk)) or used[-1])
    run = sbp.fit(X, y, **args)
    assert used[-1].__module__ == f"algorithms.sbp._kernels.{module}"
    seen = []  # a callback sees every iteration (one launch each) and can stop the fit
    sbp.fit(X, y, **{**args, "callback": lambda info: seen.append(info) or info["iteration"] == 7})
    assert [info["iteration"] for info in seen] == list(range(1, 8)) and seen[-1]["n_under"] >= 1
    for key in ("coef", "intercept"):
        np.testing.assert_allclose(to_numpy(getattr(run, key)), to_numpy(getattr(step_by_step, key)), rtol=1e-9,
                                   atol=1e-12)
    np.testing.assert_allclose(to_numpy(run.decision_function(X)), to_numpy(step_by_step.decision_function(X)),
                               rtol=1e-9, atol=1e-12)


def test_the_step_by_step_level_warm_on_the_device_gives_the_cold_model(gpu, monkeypatch, dtype="float64"):
    """WARM_LEVEL: the step-by-step iteration's level from the warm bands (one block), the
    cold kernel only where they miss: the cold level's model to 1e-9, most levels warm."""
    X, y = two_blobs(60, 4, 7)
    args = {"nu": 0.1, "gamma": 0.3, "n_iter": 24, "random_state": 0, "dtype": dtype, "backend": gpu}
    cold = sbp.fit(X, y, **args)
    made = []

    class Counted(_cuda_level.WarmBiasedLevel):
        def __init__(self, *a):
            super().__init__(*a)
            made.append(self)

    monkeypatch.setattr(_cuda_level, "WarmBiasedLevel", Counted)
    monkeypatch.setattr(sbp_kernels, "WARM_LEVEL", True)
    warm = sbp.fit(X, y, **args)
    (level,) = made
    assert level.cold_calls <= 12  # the first iteration and after renormalisations
    tol = 1e-9
    np.testing.assert_allclose(to_numpy(warm.decision_function(X)), to_numpy(cold.decision_function(X)), rtol=tol,
                               atol=tol)
    assert (to_numpy(warm.predict(X)) == to_numpy(cold.predict(X))).all()


def test_the_warm_level_on_the_device_follows_a_basin_that_moves_many_ranks(gpu):
    """An SBP iteration moves a basin's heights together (one kernel row): by many ranks
    for a band of a few dozen. The bands follow the heights (the mean move of those in
    them), so the level after such a move is found warm, and it is the cold level."""
    rng = np.random.default_rng(3)
    n, xp = 1500, gpu.xp
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    c = rng.normal(size=n)
    cold = get_kernel("water_level_biased", gpu)
    level = _cuda_level.WarmBiasedLevel(cold, n, xp)
    y_d, volume = xp.asarray(y), 0.1 * n
    level(xp.asarray(c), y_d, volume, xp=xp)  # the first level is cold
    for shift in (2.0, -1.5, 3.0):  # hundreds of ranks of the positives' basin
        c = c + shift * (y > 0) + rng.normal(scale=1e-3, size=n)
        got = level(xp.asarray(c), y_d, volume, xp=xp)
        want = cold(xp.asarray(c), y_d, volume, xp=xp)
        np.testing.assert_allclose([float(v) for v in got], [float(v) for v in want], rtol=1e-12, atol=1e-12)
    assert level.cold_calls == 1
