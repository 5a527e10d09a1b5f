"""The cuda engine's SBP run a window of iterations at a time (``_kernels/_cuda_window.py``:
three launches an iteration, a host read of where a level missed once a window) against
the cpu engine's compiled run on the same state: the same draws, responses and averaged
responses to rounding, through cold levels (the first iteration, renormalisations, a miss
in the middle of a window) and warm ones; and its launches counted (a whole fit through it:
tests/algorithms/test_sbp_cuda_run.py)."""

import numpy as np
import pytest
import scipy.sparse as sp

from algorithms.sbp import _kernels as sbp_kernels  # importing algorithms.sbp registers the kernels
from algorithms.sbp._kernels import _cuda_window
from kbackends import get_kernel, launch_counts, ops, resolve, to_numpy
from kbackends.kernel_tools import WARM_STATE
from kbackends.testing import two_blobs

pytestmark = pytest.mark.cuda

T = 24  # iterations of the launch count


def _run(bk, X, Y, *, n_iter, threshold, chunks):
    """``n_iter`` iterations in ``chunks`` calls of backend ``bk``'s run (the window run on
    a cuda backend), RBF kernel; returns the state on the host and the scratch."""
    if bk.name == "cpu":
        run = get_kernel("sbp_run", bk)
    else:
        run = get_kernel("sbp_window_run", bk)
    n = Y.shape[0]
    scalars, warm = np.array([1.0, 0.0, 0.0, 0.0, 0.0]), np.zeros(WARM_STATE)
    C, C_bar, idx_log, s_log = (bk.asarray(a) for a in (np.zeros(n, dtype=Y.dtype), np.zeros(n),
                                                          np.zeros(n_iter, dtype=np.int64), np.zeros(n_iter)))
    Xd = ops.to_backend(X, bk) if sp.issparse(X) else bk.asarray(X)
    Y_d, ones = bk.asarray(Y), bk.asarray(np.ones(n))
    extra = {}
    if sp.issparse(X):
        extra["sq_norms"] = bk.asarray(np.asarray(X.multiply(X).sum(axis=1), dtype=Y.dtype).ravel())
    uniforms = bk.asarray(np.random.default_rng(1).random(n_iter))
    scratch = {}
    edges = np.linspace(0, n_iter, chunks + 1).astype(int)
    for t0, t1 in zip(edges[:-1], edges[1:]):
        run(Xd, Y_d, C, C_bar, ones, uniforms[t0:t1], scalars, idx_log, s_log, warm, xp=bk.xp, t0=int(t0), eta0=1.0,
            volume=0.05 * n, kernel_code=0, gamma=0.4, renormalise_below=threshold, scratch=scratch, **extra)
    return (to_numpy(idx_log), to_numpy(s_log), to_numpy(C), to_numpy(C_bar), scalars, warm), scratch


def _problem(dtype, sparse):
    X, y = two_blobs(90, 5, 3)
    X[np.abs(X) < 0.7] = 0.0
    X = X.astype(dtype)
    Y = np.where(y > 0, 1.0, -1.0).astype(dtype)
    Y[::9] *= -1  # label noise: rows stay under water
    return (sp.csr_matrix(X) if sparse else X), Y


@pytest.mark.parametrize(("sparse", "dtype", "window", "graph"), [
    (False, np.float64, 4, True), (True, np.float64, 8, True), (False, np.float32, 32, False),
])
def test_the_window_run_equals_the_cpu_run(gpu, monkeypatch, sparse, dtype, window, graph):
    """90 rows, 60 iterations in two calls, a renormalisation threshold the scale crosses
    (the next level is cold: a miss inside a window, the rest of the window redone); with
    ``graph`` the whole windows through ``CapturedGraph`` (under the simulator, called as
    they are: the iterations' places read on the device, the responses back in C)."""
    monkeypatch.setattr(_cuda_window, "WINDOW", window)
    monkeypatch.setattr(sbp_kernels, "WINDOW_GRAPH", graph)
    X, Y = _problem(dtype, sparse)
    args = {"n_iter": 60, "threshold": 0.5, "chunks": 2}
    want, _ = _run(resolve("cpu"), X, Y, **args)
    got, scratch = _run(gpu, X, Y, **args)
    np.testing.assert_array_equal(got[0], want[0])  # the draws
    renormalised = int((want[1] < 0.5).sum())
    assert renormalised >= 3
    cold = scratch["window"].cold_levels  # the first level, one after each renormalisation, a few misses
    assert renormalised + 1 <= cold < 60 // 2
    tol = 1e-9 if dtype == np.float64 else 1e-4  # float32 responses: 60 updates rounded apart
    for g, w in zip(got[1:5], want[1:5]):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_three_launches_an_iteration(gpu, monkeypatch):
    """The warm iterations: the band pass, the level with the draw, the update with the
    average and the follow."""
    monkeypatch.setattr(_cuda_window, "WINDOW", 8)
    X, Y = _problem(np.float64, False)
    before = launch_counts()
    _, scratch = _run(gpu, X, Y, n_iter=T, threshold=0.0, chunks=1)
    launches = sum(launch_counts().values()) - sum(before.values())
    cold = scratch["window"].cold_levels
    assert 1 <= cold <= 4  # the first level and the few misses of a fit with no renormalisation
    # 3 launches an iteration (a cold one: the level op's 2 and 2), the rest of a window after a miss
    assert 3 * T <= launches <= 3 * T + cold * (3 * 8 + 4)
