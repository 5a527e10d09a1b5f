"""The loop ops of kbackends.ops (steps, rff_predict_add, csr_rows_dense, the rff ops with
check_input=False): on every backend each gives what the registered kernel's array-API
reference gives on the same inputs, and none checks or moves its inputs."""

import numpy as np
import pytest
import scipy.sparse as sp

from kbackends import ops, resolve, to_numpy
from kbackends.losses import SUPERVISED_LOSSES
from kbackends.random import omega_block
from kbackends.testing import TOLERANCE, oracle

LOOP_OPS = ("cache_batch", "loss_derivative", "block_update", "gn_system", "gn_solve", "mean_loss",
            "rff_predict_add", "csr_rows_dense")


def test_the_loop_ops_are_exported():
    assert set(LOOP_OPS) <= set(ops.__all__)


def _close(got, want, dtype_name, scale=1.0):
    got = np.asarray(to_numpy(got), dtype=np.float64)
    np.testing.assert_allclose(got, np.asarray(want, dtype=np.float64), rtol=0, atol=TOLERANCE[dtype_name] * scale)


def test_the_engine_steps_match_their_references(backend, dtype_name):
    rng = np.random.default_rng(3)
    n, B, F, k = 30, 8, 5, 2
    on = backend.asarray
    cache = rng.standard_normal((n, k)).astype(dtype_name)
    y = np.where(rng.random((n, k)) < 0.5, -1.0, 1.0).astype(dtype_name)
    idx, intercept = rng.integers(0, n, B), rng.standard_normal(k).astype(dtype_name)
    f, yb = ops.cache_batch(on(cache), on(y), on(idx), on(intercept), backend=backend)
    want_f, want_y = oracle("cache_batch")(cache, y, idx, intercept, xp=np)
    _close(f, want_f, dtype_name, 4)
    _close(yb, want_y, dtype_name)

    loss = SUPERVISED_LOSSES["logistic"]
    g = ops.loss_derivative(f, yb, loss=loss, weight=0.5, backend=backend)
    want_g = oracle("loss_derivative")(want_f, want_y, xp=np, loss=loss, weight=0.5)
    _close(g, want_g, dtype_name, 4)

    X = rng.standard_normal((B, 3)).astype(dtype_name)
    omega, phase = omega_block(0, 0, F, 3, dtype=dtype_name)
    phi = ops.rff_features(on(X), on(omega), on(phase), backend=backend, check_input=False)
    cov, rhs = ops.gn_system(phi, g, None, None, weight=1.0, fit_intercept=True, backend=backend)
    phi_np = oracle("rff_features")(X, omega, phase, xp=np, form="cos")
    want_cov, want_rhs = oracle("gn_system")(phi_np, want_g, None, None, xp=np, weight=1.0, fit_intercept=True)
    _close(cov, want_cov, "float64" if dtype_name == "float64" else dtype_name, 4)
    _close(rhs, want_rhs, "float64" if dtype_name == "float64" else dtype_name, 4)
    delta, delta_b = ops.gn_solve(cov, rhs, ridge=0.1, eta=0.5, n_features=F, fit_intercept=True,
                                  dtype=phi.dtype, backend=backend)
    want_delta, want_b = oracle("gn_solve")(want_cov, want_rhs, xp=np, ridge=0.1, eta=0.5, n_features=F,
                                            fit_intercept=True, dtype=np.dtype(dtype_name))
    _close(delta, want_delta, dtype_name, 100)
    _close(delta_b, want_b, dtype_name, 100)

    stored = np.zeros((3 * F, k), dtype=dtype_name)
    stored_d = on(stored)
    new_intercept, summed = ops.block_update(stored_d, on(want_delta), on(intercept), on(want_b), None, None,
                                             start=F, scale=0.5, fit_intercept=True, scale_sum=0.0,
                                             backend=backend)
    want_intercept, _ = oracle("block_update")(stored, want_delta, intercept, want_b, None, None, xp=np, start=F,
                                               scale=0.5, fit_intercept=True, scale_sum=0.0)
    _close(stored_d, stored, dtype_name, 4)  # updated in place, rows F to 2F only
    assert not np.any(to_numpy(stored_d)[:F]) and not np.any(to_numpy(stored_d)[2 * F:])
    _close(new_intercept, want_intercept, dtype_name, 4)
    assert summed is None

    Xn = rng.standard_normal((n, 3)).astype(dtype_name)
    f_all = ops.rff_predict_add(on(Xn), on(omega), on(phase), on(want_delta), on(cache), shrink=0.9,
                                backend=backend)
    want_all = oracle("rff_predict_add")(Xn, omega, phase, want_delta, cache, xp=np, form="cos", shrink=0.9)
    _close(f_all, want_all, dtype_name, 10)
    mean = ops.mean_loss(f_all, on(y), on(intercept), None, loss=loss, backend=backend)
    _close(mean, oracle("mean_loss")(want_all, y, intercept, None, xp=np, loss=loss), dtype_name, 10)


def test_the_rff_ops_without_checks_call_the_kernel(backend, dtype_name):
    rng = np.random.default_rng(4)
    X = rng.standard_normal((9, 3)).astype(dtype_name)
    omega, phase = omega_block(1, 0, 4, 3, dtype=dtype_name)
    coef, g = rng.standard_normal((4, 2)).astype(dtype_name), rng.standard_normal((2, 9)).astype(dtype_name)
    args = [backend.asarray(a) for a in (X, omega, phase)]
    for trusted, checked in (
        (ops.rff_predict(*args, backend.asarray(coef), backend=backend, check_input=False),
         ops.rff_predict(X, omega, phase, coef, backend=backend)),
        (ops.rff_weighted_sum(*args, backend.asarray(g), backend=backend, check_input=False),
         ops.rff_weighted_sum(X, omega, phase, g, backend=backend)),
    ):
        np.testing.assert_array_equal(to_numpy(trusted), to_numpy(checked))


def test_without_checks_nothing_is_checked():
    cpu = resolve("cpu")
    X = np.array([[np.nan, 1.0]])
    omega, phase = omega_block(0, 0, 2, 2, dtype="float64")
    with pytest.raises(ValueError, match="NaN|finite"):
        ops.rff_features(X, omega, phase, backend=cpu)
    assert np.isnan(ops.rff_features(X, omega, phase, backend=cpu, check_input=False)).any()


def test_csr_rows_dense_matches_the_rows(backend, dtype_name):
    if backend.name not in ops.SPARSE_BACKENDS:
        pytest.skip("no sparse kernels on this backend")
    X = sp.random(12, 5, density=0.4, format="csr", random_state=2, dtype=dtype_name)
    rows = np.array([3, 0, 3, 11])
    got = ops.csr_rows_dense(ops.as_csr(ops.to_backend(X, backend)), backend.asarray(rows), backend=backend)
    np.testing.assert_array_equal(to_numpy(got), X[rows].toarray())
