"""kbackends.losses: every derivative against central differences of its value, the SU
margin losses' defining identity, and the compiled scalar dpsi against the array one."""

import math

import numpy as np
import pytest
from numba import njit

from kbackends.losses import (
    EVAL_MARGIN_LOSSES,
    MARGIN_LOSSES,
    PSI_CODES,
    SOFTMAX,
    SUPERVISED_LOSSES,
    UNLABELED_LOSSES,
    dpsi,
    dpsi_scalar,
    psi,
)

# Scores away from every kink (y f = 1, |f| = 1, |f| = -0.3) for labels alternating +-1.
F = np.array([-1.7, -0.6, -0.2, 0.05, 0.4, 0.9, 1.3, 2.5])
Y = np.array([1.0, -1.0, 1.0, 1.0, 1.0, -1.0, 1.0, -1.0])
H = 1e-6


def _central(value, f):
    return (value(f + H) - value(f - H)) / (2 * H)


@pytest.mark.parametrize("name", [*SUPERVISED_LOSSES, *UNLABELED_LOSSES])
def test_engine_loss_derivatives_match_central_differences(backend, name):
    loss = SUPERVISED_LOSSES.get(name) or UNLABELED_LOSSES[name]
    xp = backend.xp
    f, y = backend.asarray(F), backend.asarray(Y)
    numeric = _central(lambda g: backend.to_numpy(loss.value(g, y, xp)), f)
    np.testing.assert_allclose(backend.to_numpy(loss.derivative(f, y, xp)), numeric, atol=1e-6, err_msg=name)


def test_softmax_derivative_is_the_gradient_of_the_summed_loss(backend):
    xp = backend.xp
    rng = np.random.default_rng(0)
    f0 = rng.standard_normal((5, 3)) * 3
    y = backend.asarray(np.eye(3)[[0, 2, 1, 1, 0]])
    grad = backend.to_numpy(SOFTMAX.derivative(backend.asarray(f0), y, xp))
    for k in range(3):
        step = np.zeros_like(f0)
        step[:, k] = H
        total = [backend.to_numpy(xp.sum(SOFTMAX.value(backend.asarray(f0 + s), y, xp), axis=1)) for s in (step, -step)]
        np.testing.assert_allclose(grad[:, k], (total[0] - total[1]) / (2 * H), atol=1e-6)
    # The per-sample loss is -log softmax at the true class.
    p = np.exp(f0) / np.exp(f0).sum(axis=1, keepdims=True)
    loss = backend.to_numpy(xp.sum(SOFTMAX.value(backend.asarray(f0), y, xp), axis=1))
    np.testing.assert_allclose(loss, -np.log(p[np.arange(5), [0, 2, 1, 1, 0]]), rtol=1e-12)


@pytest.mark.parametrize("name", list(MARGIN_LOSSES))
def test_margin_losses_have_the_su_symmetry_and_their_derivatives(backend, name):
    value, derivative = MARGIN_LOSSES[name]
    xp = backend.xp
    z = backend.asarray(F)
    # l(z, +1) - l(z, -1) = -z: what makes the uncorrected SU risk convex (Bao et al. 2018).
    np.testing.assert_allclose(backend.to_numpy(value(z, 1.0, xp) - value(z, -1.0, xp)), -F, atol=1e-12)
    for t in (1.0, -1.0):
        numeric = _central(lambda g: backend.to_numpy(value(g, t, xp)), z)
        np.testing.assert_allclose(backend.to_numpy(derivative(z, t, xp)), numeric, atol=1e-6)


def test_zero_one_counts_errors_with_ties_to_the_negative_class(backend):
    value, derivative = EVAL_MARGIN_LOSSES["zero_one"]
    z = backend.asarray(np.array([-1.0, 0.0, 2.0]))
    assert derivative is None
    np.testing.assert_array_equal(backend.to_numpy(value(z, 1.0, backend.xp)), [1.0, 1.0, 0.0])
    np.testing.assert_array_equal(backend.to_numpy(value(z, -1.0, backend.xp)), [0.0, 0.0, 1.0])


@pytest.mark.parametrize("name", list(PSI_CODES))
def test_dpsi_matches_central_differences_of_psi(backend, dtype_name, name):
    xp, code = backend.xp, PSI_CODES[name]
    u = backend.asarray(F.astype(dtype_name))
    y = backend.asarray(Y.astype(dtype_name))
    got = dpsi(u, y, code, 5.0, xp)
    assert got.dtype == u.dtype
    uf, yf = backend.asarray(F), backend.asarray(Y)
    numeric = _central(lambda g: backend.to_numpy(psi(g, yf, code, 5.0, xp)), uf)
    np.testing.assert_allclose(backend.to_numpy(got), numeric, atol=1e-6 if dtype_name == "float64" else 1e-5)


def test_psi_values_at_known_points():
    u = np.array([0.0, 1.0, 3.0])
    y = np.ones(3)
    np.testing.assert_allclose(psi(u, y, PSI_CODES["logistic"], 1.0, np), np.log1p(np.exp(-u)))
    np.testing.assert_array_equal(psi(u, y, PSI_CODES["squared_hinge"], 1.0, np), [0.5, 0.0, 0.0])
    # A sharp smooth hinge is the hinge max(0, 1 - y u) (Eq. 26).
    np.testing.assert_allclose(psi(u, y, PSI_CODES["smooth_hinge"], 200.0, np), [1.0, 0.0, 0.0], atol=4e-3)


@njit
def _compiled_dpsi(u, y, code, beta):
    out = np.empty_like(u)
    for i in range(u.shape[0]):
        out[i] = dpsi_scalar(u[i], y[i], code, beta)
    return out


@pytest.mark.parametrize("name", list(PSI_CODES))
def test_compiled_scalar_dpsi_is_the_array_dpsi(name):
    code = PSI_CODES[name]
    u = np.concatenate([F, [-800.0, -40.0, 0.0, 1.0, 40.0, 800.0]])
    y = np.concatenate([Y, [1.0, -1.0, 1.0, 1.0, -1.0, 1.0]])
    with np.errstate(over="ignore"):
        expected = dpsi(u, y, code, 3.0, np)
    compiled = _compiled_dpsi(u, y, code, 3.0)
    # Same formula; only exp differs (LLVM's, NumPy's SIMD one, libm's) in the last bits.
    np.testing.assert_allclose(compiled, expected, rtol=1e-14, atol=0)
    plain = np.array([dpsi_scalar(a, b, code, 3.0) if abs(a) < 700 else math.nan for a, b in zip(u, y)])
    keep = np.abs(u) < 700  # math.exp raises OverflowError where numpy gives inf
    np.testing.assert_allclose(plain[keep], expected[keep], rtol=1e-14, atol=0)
