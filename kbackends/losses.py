"""Every loss of the library, in one place: the engine's array losses, the SU margin
losses and the linear models' psi / dpsi (the prox-SGD kernels compile the scalar one).

Three families, by what their callers hold:

* :class:`Loss` objects, ``value(f, y, xp)`` and ``derivative(f, y, xp)`` elementwise on
  arrays of any array-API namespace, for the functional-gradient engine (DSG, TSGS3VM,
  TSGSU). ``f`` and ``y`` have the same shape, (batch,) or (batch, n_outputs); ``y`` is
  +-1 for the margin losses (one column per class for one-vs-rest), one-hot for
  :data:`SOFTMAX`, real for :data:`SQUARED`, and ignored by the unlabeled losses of
  S3VMs (:data:`UNLABELED_LOSSES`). Tables: :data:`SUPERVISED_LOSSES`,
  :data:`UNLABELED_LOSSES`.
* Margin losses ``l(z, t)`` with a scalar label ``t = +-1`` (TSGSU's SU risk, Bao et
  al. 2018): :data:`MARGIN_LOSSES` maps a name to ``(value(z, t, xp), derivative(z, t,
  xp))``; :data:`EVAL_MARGIN_LOSSES` adds the 0-1 loss, for evaluation only.
* The losses ``psi(u; y)`` of the linear models (S3GD, prox-SVRG, prox-SGD; Wang et
  al., Eqs. 26-27), named by the integer codes of :data:`PSI_CODES` so a compiled loop
  can branch on them: :func:`psi` and :func:`dpsi` on arrays, :func:`dpsi_scalar` on
  scalars for Numba (``register_jitable``: the cpu kernel compiles this function).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from numba.extending import register_jitable

__all__ = [
    "Loss",
    "HINGE",
    "SQUARED_HINGE",
    "LOGISTIC",
    "SQUARED",
    "SOFTMAX",
    "SUPERVISED_LOSSES",
    "SYMMETRIC_HINGE",
    "SQUARED_SYMMETRIC_HINGE",
    "RAMP",
    "RAMP_S",
    "DIFFERENTIABLE_APPROXIMATION",
    "UNLABELED_LOSSES",
    "MARGIN_LOSSES",
    "EVAL_MARGIN_LOSSES",
    "PSI_CODES",
    "psi",
    "dpsi",
    "dpsi_scalar",
    "dpsi_typed",
]


# --- the engine's losses l(f, y) ---------------------------------------------------------


@dataclass(frozen=True)
class Loss:
    """A loss l(f, y) with its derivative dl/df, elementwise on arrays.

    Attributes
    ----------
    name : str
    value : callable ``(f, y, xp) -> array``
        The per-entry loss, same shape as ``f``.
    derivative : callable ``(f, y, xp) -> array``
        dl/df, same shape as ``f``.
    max_abs_derivative : float
        A bound M on |dl/df| near the data (CDSG's checking rule).
    curvature : float, default 1.0
        The preconditioned (Gauss-Newton) step assumes curvature 1 in f; a loss
        with curvature c divides its step by c (squared hinge: 2).
    """

    name: str
    value: Callable
    derivative: Callable
    max_abs_derivative: float
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


# --- margin losses l(z, t), t = +-1 (TSGSU) ----------------------------------------------

# name -> (value(z, t, xp), derivative in z (z, t, xp)); all satisfy l(z, +1) - l(z, -1) = -z,
# the condition under which the uncorrected SU risk is convex (Bao et al. 2018).
MARGIN_LOSSES = {
    # (z t - 1)^2 / 4, the paper's choice (and SU-SL's)
    "squared": (lambda z, t, xp: 0.25 * (z * t - 1.0) ** 2, lambda z, t, xp: 0.5 * t * (z * t - 1.0)),
    # log(1 + exp(-t z)): the engine's logistic loss with a scalar label
    "logistic": (LOGISTIC.value, LOGISTIC.derivative),
}

# For evaluation only (no derivative): the SU risk of the 0-1 loss is an unbiased
# estimate of the misclassification rate (the rewriting of Eq. (3) holds for any loss).
# The tie f = 0 is class -1, as predict has it.
EVAL_MARGIN_LOSSES = {
    **MARGIN_LOSSES,
    "zero_one": (lambda z, t, xp: xp.astype((z <= 0) if t > 0 else (z > 0), z.dtype), None),
}


# --- the linear models' losses psi(u; y), y = +-1 (S3GD / prox-SVRG / prox-SGD) ---------------

# logistic: log(1 + exp(-y u)); squared_hinge: (1/2) max(0, 1 - y u)^2 (Eq. 27);
# smooth_hinge: (1/beta) log(1 + exp(-beta (y u - 1))) (Eq. 26, sharpness beta).
PSI_CODES = {"logistic": 0, "squared_hinge": 1, "smooth_hinge": 2}


def psi(u, y, code, beta, xp):
    """The loss ``psi(u; y)`` elementwise.

    Parameters
    ----------
    u, y : arrays of the same shape (or broadcastable)
        Scores ``w . x`` and labels +-1.
    code : int
        ``PSI_CODES[name]``.
    beta : float
        The smooth hinge's sharpness (unused by the others).
    xp : array namespace

    Returns
    -------
    array of the broadcast shape of ``u`` and ``y``
    """
    if code == 1:
        return 0.5 * xp.maximum(1.0 - y * u, 0.0) ** 2
    return _softplus(-y * u, xp) if code == 0 else _softplus(-beta * (y * u - 1.0), xp) / beta


def _softplus(a, xp):
    """``log(1 + exp(a))`` as ``max(a, 0) + log1p(exp(-|a|))``: no overflow, equal to
    ``logaddexp(0, a)`` to rounding, and 2-3x faster in NumPy (its ``exp`` is vectorised,
    ``logaddexp`` is not): S3GD's early stop evaluates it at every epoch."""
    return xp.maximum(a, 0.0) + xp.log1p(xp.exp(-xp.abs(a)))


def dpsi(u, y, code, beta, xp):
    """``d psi(u; y) / du`` elementwise, in the arithmetic of :func:`dpsi_scalar` (the
    prox-SGD reference kernel is the compiled one's oracle).

    Parameters are those of :func:`psi`; returns an array of their broadcast shape.
    """
    if code == 0:
        return -y / (1.0 + xp.exp(y * u))
    if code == 1:
        return -y * xp.maximum(1.0 - y * u, 0.0)
    return -y / (1.0 + xp.exp(beta * (y * u - 1.0)))


# Numba's on-disk cache of the kernel that compiles this does not see edits here:
# clear the __pycache__ of the prox-SGD kernel's package after changing it.
@register_jitable
def dpsi_scalar(u, y, code, beta):
    """``d psi(u; y) / du`` for one score ``u`` and label ``y`` (floats), compiled into
    the prox-SGD cpu kernel (a plain Python function elsewhere)."""
    if code == 0:
        return -y / (1.0 + math.exp(y * u))
    if code == 1:
        r = 1.0 - y * u
        return -y * r if r > 0.0 else 0.0
    return -y / (1.0 + math.exp(beta * (y * u - 1.0)))


@register_jitable
def dpsi_typed(u, y, code, beta, one):
    """:func:`dpsi_scalar` in the float type of ``one`` (``one`` = 1 of that type): every
    constant is made from ``one``, so a float32 CUDA kernel stays float32 (no float64
    literal promotes it; the PTX pass checks)."""
    zero = one - one
    if code == 0:
        return -y / (one + math.exp(y * u))
    if code == 1:
        r = one - y * u
        return -y * r if r > zero else zero
    return -y / (one + math.exp(beta * (y * u - one)))
