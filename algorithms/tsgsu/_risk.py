"""The SU risk (Eq. (7) and (9)): margin losses, the engine's derivative hook, su_risk."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from kbackends import get_kernel, resolve
from kbackends.losses import EVAL_MARGIN_LOSSES as EVAL_LOSSES
from kbackends.losses import MARGIN_LOSSES, Loss
from kbackends.ops import resolve_hint

from .._boundary.validation import check_choice, check_X
from ._inputs import _pointwise

CORRECTIONS = ("abs", "relu", "none")


@dataclass(frozen=True)
class _SURisk:
    """The SU risk's constants for one prior and loss, and the engine's derivative hook."""

    prior: float
    loss: str
    correction: str

    @property
    def pi_s(self):
        return self.prior**2 + (1.0 - self.prior) ** 2

    @property
    def c(self):
        return 1.0 / (2.0 * self.prior - 1.0)

    def source_losses(self):
        """Per-source losses of the uncorrected risk (Eq. (7)): L_S on the similar
        points (weight pi_S), L_U on the unlabeled points (weight 1)."""
        value, deriv = MARGIN_LOSSES[self.loss]
        c, pp, pn = self.c, self.prior, 1.0 - self.prior
        l_s = Loss(
            "su_similar",
            value=lambda f, y, xp: c * (value(f, 1.0, xp) - value(f, -1.0, xp)),
            derivative=lambda f, y, xp: c * (deriv(f, 1.0, xp) - deriv(f, -1.0, xp)),
            max_abs_derivative=abs(c),
        )
        l_u = Loss(
            "su_unlabeled",
            value=lambda f, y, xp: c * (pp * value(f, -1.0, xp) - pn * value(f, 1.0, xp)),
            derivative=lambda f, y, xp: c * (pp * deriv(f, -1.0, xp) - pn * deriv(f, 1.0, xp)),
            max_abs_derivative=abs(c),
        )
        return l_s, l_u

    def parts(self, f_s, f_u, xp, with_variance=False):
        """The two correctable parts A and B of Eq. (9) on a batch (0-d arrays);
        with ``with_variance`` also the variances of those batch estimates."""
        value, _ = EVAL_LOSSES[self.loss]
        c, ps, pp, pn = self.c, self.pi_s, self.prior, 1.0 - self.prior
        ls_pos, lu_pos = value(f_s, 1.0, xp), value(f_u, 1.0, xp)
        ls_neg, lu_neg = value(f_s, -1.0, xp), value(f_u, -1.0, xp)
        a = c * (ps * xp.mean(ls_pos) - pn * xp.mean(lu_pos))
        b = c * (pp * xp.mean(lu_neg) - ps * xp.mean(ls_neg))
        if not with_variance:
            return a, b
        n_s, n_u = ls_pos.shape[0], lu_pos.shape[0]
        var_a = c * c * (ps * ps * xp.var(ls_pos) / n_s + pn * pn * xp.var(lu_pos) / n_u)
        var_b = c * c * (pp * pp * xp.var(lu_neg) / n_u + ps * ps * xp.var(ls_neg) / n_s)
        return a, b, var_a, var_b

    def risk(self, f_s, f_u, xp):
        """delta(A) + delta(B): the corrected empirical risk (without the penalty)."""
        a, b = self.parts(f_s, f_u, xp)
        return float(self._delta(a, xp) + self._delta(b, xp))

    def _delta(self, v, xp):
        if self.correction == "abs":
            return xp.abs(v)
        if self.correction == "relu":
            return xp.maximum(v, 0.0 * v)
        return v

    def _delta_prime(self, v, xp):
        if self.correction == "abs":
            return 2.0 * xp.astype(v >= 0, v.dtype) - 1.0
        if self.correction == "relu":
            return xp.astype(v > 0, v.dtype)
        return 1.0

    def derivatives(self, batches, xp, state=None, smoothing=0.0, margin=0.0, backend=None):
        """Engine hook: Eq. (19)'s per-point coefficients on the two batches (see
        :meth:`derivative_terms`), through the backend's ``su_derivatives`` kernel (on
        cuda one launch where the array code is about 95 calls; ``backend`` None: this
        object's array code)."""
        sim, unl = batches
        terms = self.derivative_terms if backend is None else functools.partial(
            get_kernel("su_derivatives", backend), risk=self)
        sim.g, unl.g = terms(sim.f, unl.f, xp=xp, state=state, smoothing=smoothing, margin=margin)

    def derivative_terms(self, f_s, f_u, *, xp, state=None, smoothing=0.0, margin=0.0):
        """Eq. (19)'s per-point coefficients ``(g_S, g_U)`` on the batches' predictions.

        ``g_S = c pi_S (delta'(A) l'(f, +1) - delta'(B) l'(f, -1))`` on the similar
        batch and ``g_U = c (pi_+ delta'(B) l'(f, -1) - pi_- delta'(A) l'(f, +1))``
        on the unlabeled batch (the engine then averages over each batch). The
        paper evaluates A and B on the mini-batches; with ``smoothing`` s > 0 the
        signs are taken on their running averages ``s * old + (1 - s) * batch``
        (kept in ``state``), which damps the sign flips of near-zero batch parts.
        With ``margin`` z > 0 a part counts as negative only when its (averaged)
        estimate is below ``-z`` standard errors of that estimate: a flip is a
        reaction to overfitting, not to sampling noise.
        """
        _, deriv = MARGIN_LOSSES[self.loss]
        c, ps, pp, pn = self.c, self.pi_s, self.prior, 1.0 - self.prior
        if self.correction == "none":
            da = db = 1.0
        else:
            if margin > 0.0:
                a, b, var_a, var_b = self.parts(f_s, f_u, xp, with_variance=True)
            else:
                (a, b), var_a, var_b = self.parts(f_s, f_u, xp), 0.0, 0.0
            if state is not None and smoothing > 0.0:
                if "a" in state:
                    a = smoothing * state["a"] + (1.0 - smoothing) * a
                    b = smoothing * state["b"] + (1.0 - smoothing) * b
                    var_a = smoothing * state["var_a"] + (1.0 - smoothing) * var_a
                    var_b = smoothing * state["var_b"] + (1.0 - smoothing) * var_b
                state["a"], state["b"], state["var_a"], state["var_b"] = a, b, var_a, var_b
            if margin > 0.0:
                # Variance of an exponential average of independent batch values.
                shrink = (1.0 - smoothing) / (1.0 + smoothing)
                a = a + margin * xp.sqrt(var_a * shrink)
                b = b + margin * xp.sqrt(var_b * shrink)
            da, db = self._delta_prime(a, xp), self._delta_prime(b, xp)
        g_s = c * ps * (da * deriv(f_s, 1.0, xp) - db * deriv(f_s, -1.0, xp))
        g_u = c * (pp * db * deriv(f_u, -1.0, xp) - pn * da * deriv(f_u, 1.0, xp))
        return g_s, g_u

    def hook(self, smoothing=0.0, margin=0.0):
        """The engine's ``derivatives`` hook, ``hook(batches, xp, backend=None)``, with its
        own running-average state (the engine passes its backend: on a worker of a
        distributed fit, the worker's)."""
        state = {}
        return lambda batches, xp, backend=None: self.derivatives(batches, xp, state, smoothing, margin, backend)


def su_risk(model, X_similar, X_unlabeled, *, loss=None, correction=None, backend="auto"):
    """The empirical SU risk (Eq. (9) without the penalty) of ``model`` on SU data.

    A label-free validation criterion: the SU rewriting of the classification
    risk holds for any loss, so on held-out SU data it estimates the model's
    risk without labels.

    Parameters
    ----------
    model : RFFModel from :func:`fit`
    X_similar, X_unlabeled : arrays as in :func:`fit`
    loss : {"squared", "logistic", "zero_one"}, optional
        Default the model's training loss. "zero_one" with ``correction="none"``
        is an unbiased estimate of the misclassification rate.
    correction : {"abs", "relu", "none"}, optional
        Default the model's.
    backend : as in :func:`fit`

    Returns
    -------
    float
    """
    bk = resolve(backend, resolve_hint(X_similar), resolve_hint(X_unlabeled))
    xp = bk.xp
    X_s = check_X(_pointwise(X_similar), bk, model.dtype, name="X_similar", accept_sparse=True)
    X_u = check_X(X_unlabeled, bk, model.dtype, name="X_unlabeled", accept_sparse=True)
    p = model.params
    loss = loss or p["loss"]
    check_choice("loss", loss, tuple(EVAL_LOSSES))
    correction = correction or p["correction"]
    check_choice("correction", correction, CORRECTIONS)
    risk = _SURisk(prior=p["prior"], loss=loss, correction=correction)
    return risk.risk(model.raw_decision(X_s, bk), model.raw_decision(X_u, bk), xp)
