"""The cuda loss derivatives (kernels/loss) against their array-API reference, for
every loss of the engine: those with a device code (one launch) on both sides of
their kinks, and those without one, which must run the reference on the device."""

import numpy as np
import pytest

from kbackends import get_kernel, resolve, to_numpy
from kbackends.losses import SOFTMAX, SUPERVISED_LOSSES, UNLABELED_LOSSES
from kbackends.testing import TOLERANCE, kernel_module, oracle

pytestmark = pytest.mark.cuda

LOSSES = {**SUPERVISED_LOSSES, **UNLABELED_LOSSES, "softmax": SOFTMAX}


def _batch(name, dtype):
    # the kinks (y f = 1, |f| = 1, f = 0) and values around them, for two outputs
    f = np.array([-3.0, -1.0, -0.999, -0.3, 0.0, 0.25, 0.999, 1.0, 1.5, 40.0, -40.0], dtype=dtype)
    f = np.stack([f, -f[::-1]], axis=1)
    if name == "softmax":
        y = np.zeros_like(f)
        y[np.arange(f.shape[0]) % 2 == 0, 0] = 1.0
        y[np.arange(f.shape[0]) % 2 == 1, 1] = 1.0
    elif name in UNLABELED_LOSSES:
        y = None
    else:
        y = np.where(np.arange(f.size).reshape(f.shape) % 3 == 0, -1.0, 1.0).astype(dtype)
    return f, y


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_derivative_matches_the_reference(gpu, dtype_name, name):
    f, y = _batch(name, dtype_name)
    kw = {"loss": LOSSES[name], "weight": 0.7}
    want = oracle("loss_derivative")(f, y, xp=np, **kw)
    got = get_kernel("loss_derivative", gpu)(gpu.asarray(f), None if y is None else gpu.asarray(y), xp=gpu.xp, **kw)
    got = to_numpy(got)
    assert got.dtype == want.dtype == np.dtype(dtype_name) and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=4 * TOLERANCE[dtype_name])


def test_every_supervised_and_most_unlabeled_losses_have_a_device_code():
    codes = kernel_module("loss", "cuda")
    assert set(codes.CODES) == set(SUPERVISED_LOSSES)
    assert set(codes.UNLABELED_CODES) <= set(UNLABELED_LOSSES) and len(codes.UNLABELED_CODES) >= 3
    assert len(set(codes.CODES.values()) | set(codes.UNLABELED_CODES.values())) == 7  # no code twice


def test_the_cpu_engine_runs_the_reference():
    f, y = _batch("hinge", "float32")
    got = get_kernel("loss_derivative", resolve("cpu"))(f, y, xp=np, loss=LOSSES["hinge"], weight=2.0)
    np.testing.assert_array_equal(got, LOSSES["hinge"].derivative(f, y, np) * 2.0)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n", [1, 33, 300])
@pytest.mark.parametrize("name", sorted(SUPERVISED_LOSSES) + ["shg"])
def test_mean_loss_matches_the_reference(gpu, dtype_name, name, n, weighted):
    """The held-out mean loss of early stopping: one block for the supervised losses
    (more rows than threads, two outputs), the reference for weights and other losses."""
    rng = np.random.default_rng(n)
    f = rng.uniform(-3, 3, (n, 2)).astype(dtype_name)
    y = np.where(rng.random((n, 2)) < 0.5, -1.0, 1.0).astype(dtype_name)
    intercept = np.array([0.25, -0.5], dtype=dtype_name)
    weights = rng.random(n) / n if weighted else None
    kw = {"loss": LOSSES[name]}
    want = oracle("mean_loss")(f, y, intercept, weights, xp=np, **kw)
    got = get_kernel("mean_loss", gpu)(gpu.asarray(f), gpu.asarray(y), gpu.asarray(intercept),
                                       None if weights is None else gpu.asarray(weights), xp=gpu.xp, **kw)
    got = to_numpy(got)
    assert got.shape == () and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=16 * TOLERANCE[dtype_name], atol=0)
