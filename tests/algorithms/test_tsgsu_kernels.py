"""TSGSU's per-point coefficients in one block (algorithms/tsgsu/_kernels) against the risk object's
array code, over three consecutive calls (the running averages kept on the device):
both margin losses, every correction, with and without smoothing and margin, batch
sizes below, at and above the block's threads, and the sign flips of the parts."""

import numpy as np
import pytest

from algorithms import tsgsu
from kbackends import get_kernel, to_numpy
from kbackends.testing import TOLERANCE

pytestmark = pytest.mark.cuda


CASES = [  # (loss, correction, smoothing, margin, n_s, n_u): every option once against the defaults
    ("squared", "abs", 0.9, 2.0, 40, 70),  # TSGSU's defaults
    ("squared", "abs", 0.9, 2.0, 1, 3),
    ("squared", "abs", 0.0, 0.0, 40, 70),
    ("squared", "abs", 0.9, 0.0, 40, 70),
    ("squared", "abs", 0.0, 2.0, 40, 70),
    ("squared", "relu", 0.9, 2.0, 40, 70),
    ("squared", "none", 0.9, 2.0, 40, 70),
    ("logistic", "abs", 0.9, 2.0, 40, 70),
    ("logistic", "relu", 0.0, 0.0, 1, 3),
]


@pytest.mark.parametrize("loss, correction, smoothing, margin, n_s, n_u", CASES)
def test_matches_the_risk_objects_code(gpu, dtype_name, loss, correction, smoothing, margin, n_s, n_u):
    risk = tsgsu._SURisk(prior=0.7, loss=loss, correction=correction)
    rng = np.random.default_rng(n_s + n_u)
    want_state, got_state = {}, {}
    kernel = get_kernel("su_derivatives", gpu)
    for call in range(3):  # the parts drift: the signs and the running averages move
        f_s = rng.normal(0.3 * call - 0.5, 1.0, (n_s, 1)).astype(dtype_name)
        f_u = rng.normal(0.5 - 0.4 * call, 1.5, (n_u, 1)).astype(dtype_name)
        kw = {"smoothing": smoothing, "margin": margin}
        want = risk.derivative_terms(f_s, f_u, xp=np, state=want_state, **kw)
        got = kernel(gpu.asarray(f_s), gpu.asarray(f_u), xp=gpu.xp, risk=risk, state=got_state, **kw)
        for name, a, b in zip(("g_s", "g_u"), got, want):
            a = to_numpy(a)
            assert a.dtype == np.dtype(dtype_name) and a.shape == np.shape(b), name
            scale = 1.0 + np.abs(b).max()
            np.testing.assert_allclose(a, b, rtol=0, atol=64 * TOLERANCE[dtype_name] * scale, err_msg=f"{name} {call}")
    if smoothing > 0.0 and correction != "none":
        kept = to_numpy(got_state["device"])
        np.testing.assert_allclose(kept, [float(want_state[k]) for k in ("a", "b", "var_a", "var_b")],
                                   rtol=1e-4 if dtype_name == "float32" else 1e-10, atol=1e-6)


def test_other_shapes_run_the_reference(gpu):
    """Two outputs (no kernel form): the risk object's code on the device's arrays."""
    risk = tsgsu._SURisk(prior=0.3, loss="squared", correction="abs")
    f_s, f_u = np.ones((4, 2)), np.zeros((5, 2))
    got = get_kernel("su_derivatives", gpu)(gpu.asarray(f_s), gpu.asarray(f_u), xp=gpu.xp, risk=risk, state={},
                                            smoothing=0.9, margin=2.0)
    want = risk.derivative_terms(f_s, f_u, xp=np, state={}, smoothing=0.9, margin=2.0)
    for a, b in zip(got, want):
        np.testing.assert_allclose(to_numpy(a), b)
