"""Losses of the kernel machines: value and first derivative in the prediction.

Every loss works on arrays of any array-API namespace: ``f`` and ``y`` have the
same shape, (batch,) or (batch, n_outputs). ``y`` is +-1 for the margin losses
(one column per class for one-vs-rest), one-hot for ``softmax`` and real for
``squared``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Loss:
    """A loss l(f, y) with its derivative dl/df."""

    name: str
    value: Callable  # (f, y, xp) -> per-entry loss, same shape as f
    derivative: Callable  # (f, y, xp) -> dl/df, same shape as f
    max_abs_derivative: float  # bound M on |dl/df| near the data (CDSG's checking rule)
    # The preconditioned (Gauss-Newton) step assumes curvature 1 in f; a loss with
    # curvature c divides its step by c (squared hinge: 2).
    curvature: float = 1.0


def _sigmoid_neg(m, xp):
    """sigma(-m) = 1 / (1 + exp(m)) without overflow."""
    return 0.5 * (1.0 - xp.tanh(0.5 * m))


HINGE = Loss(
    "hinge",
    value=lambda f, y, xp: xp.maximum(1.0 - y * f, 0.0),
    derivative=lambda f, y, xp: xp.where(y * f < 1.0, -y, 0.0 * y),
    max_abs_derivative=1.0,
)
SQUARED_HINGE = Loss(
    "squared_hinge",
    value=lambda f, y, xp: xp.maximum(1.0 - y * f, 0.0) ** 2,
    derivative=lambda f, y, xp: -2.0 * y * xp.maximum(1.0 - y * f, 0.0),
    max_abs_derivative=4.0,
    curvature=2.0,
)
LOGISTIC = Loss(
    "logistic",
    value=lambda f, y, xp: xp.logaddexp(0.0 * f, -y * f),
    derivative=lambda f, y, xp: -y * _sigmoid_neg(y * f, xp),
    max_abs_derivative=1.0,
)
SQUARED = Loss(
    "squared",
    value=lambda f, y, xp: 0.5 * (f - y) ** 2,
    derivative=lambda f, y, xp: f - y,
    max_abs_derivative=1.0,
)


def _softmax(f, xp):
    shifted = f - xp.max(f, axis=-1, keepdims=True)
    e = xp.exp(shifted)
    return e / xp.sum(e, axis=-1, keepdims=True)


def _softmax_value(f, y, xp):
    shifted = f - xp.max(f, axis=-1, keepdims=True)
    log_norm = xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))
    # Spread the per-sample loss over the columns so shapes match the other losses.
    return -y * (shifted - log_norm)


SOFTMAX = Loss(
    "softmax",
    value=_softmax_value,
    derivative=lambda f, y, xp: _softmax(f, xp) - y,
    max_abs_derivative=1.0,
)

SUPERVISED_LOSSES = {
    loss.name: loss for loss in (HINGE, SQUARED_HINGE, LOGISTIC, SQUARED)
}


# --- unlabeled losses of S3VMs (Geng et al. 2019, Table 2), u(f) with r = |f| ---------------
# They ignore ``y``. Symmetric in f: they push unlabeled points out of the margin.

def _hinge_at(s, r, xp):
    """H_s(r) = max(0, s - r)."""
    return xp.maximum(s - r, 0.0 * r)


SYMMETRIC_HINGE = Loss(
    "shg",
    value=lambda f, y, xp: _hinge_at(1.0, xp.abs(f), xp),
    derivative=lambda f, y, xp: -xp.sign(f) * xp.astype(xp.abs(f) < 1.0, f.dtype),
    max_abs_derivative=1.0,
)
SQUARED_SYMMETRIC_HINGE = Loss(
    "sshg",
    value=lambda f, y, xp: 0.5 * _hinge_at(1.0, xp.abs(f), xp) ** 2,
    derivative=lambda f, y, xp: -xp.sign(f) * _hinge_at(1.0, xp.abs(f), xp),
    max_abs_derivative=1.0,
)
RAMP_S = -0.3  # the ramp's second hinge H_s, s < 1 (Collobert et al. 2006 use s = -0.3)
RAMP = Loss(
    "ramp",
    value=lambda f, y, xp: _hinge_at(1.0, xp.abs(f), xp) - _hinge_at(RAMP_S, xp.abs(f), xp),
    # H_1'(|f|) - H_s'(|f|), times d|f|/df; H_s' = -1 below s, 0 above (always 0 for s < 0)
    derivative=lambda f, y, xp: -xp.sign(f) * xp.astype((xp.abs(f) < 1.0) & (xp.abs(f) >= RAMP_S), f.dtype),
    max_abs_derivative=1.0,
)
DIFFERENTIABLE_APPROXIMATION = Loss(
    "da",
    value=lambda f, y, xp: xp.exp(-5.0 * f * f),
    derivative=lambda f, y, xp: -10.0 * f * xp.exp(-5.0 * f * f),
    max_abs_derivative=2.72,  # max of 10 |f| exp(-5 f^2), at |f| = 1/sqrt(10)
)

UNLABELED_LOSSES = {
    loss.name: loss
    for loss in (SYMMETRIC_HINGE, SQUARED_SYMMETRIC_HINGE, RAMP, DIFFERENTIABLE_APPROXIMATION)
}
