"""TSGSU: similar-unlabeled (SU) classification by triply stochastic functional gradients.

Shi, Gu, Geng, Huang et al., "Triply stochastic gradient method for large-scale
nonlinear similar unlabeled classification" (Machine Learning, 2021), on the SU
risk of Bao, Niu & Sugiyama (ICML 2018). The data are pairs of points known to
share a (unknown) class and unlabeled points; the class prior ``pi_+`` (known,
or estimated by :func:`estimate_prior`) turns them into an unbiased estimate of
the classification risk. Marginalising the pairs (Eq. (5)-(7)), every point of a
similar pair is a draw from ``p~_S = (pi_+^2 p_+ + pi_-^2 p_-) / pi_S`` with
``pi_S = pi_+^2 + pi_-^2``, and the corrected empirical risk (Eq. (9), the
consistent correction of Lu et al. 2020) is

    J(f) = (lam/2) ||f||^2 + delta(A(f)) + delta(B(f)),
    A = c * (pi_S mean_S l(f, +1) - pi_- mean_U l(f, +1)),
    B = c * (pi_+ mean_U l(f, -1) - pi_S mean_S l(f, -1)),    c = 1 / (2 pi_+ - 1),

with ``delta`` the identity (``correction="none"``: Bao et al.'s unbiased risk,
convex for the squared loss), ``|.|`` (``"abs"``, the paper's choice) or
``max(0, .)`` (``"relu"``). ``A`` and ``B`` are the two parts of the risk that a
flexible model can drive negative.

Each iteration (Eq. (18)-(26)) draws a mini-batch of similar points, a
mini-batch of unlabeled points and a block of random features (the three
sources of randomness), evaluates ``A`` and ``B`` on the mini-batches, and
takes the functional gradient ``delta'(A) dA + delta'(B) dB`` on the new block,
shrinking the older blocks by ``1 - eta lam``. By default (beyond the paper,
``correction_smoothing`` and ``correction_margin``) the signs ``delta'`` are taken at
running averages of the batch values of A and B, and a part counts as negative only
when it is below two standard errors of that average: the correction then reacts
to overfitting, not to the noise of the batch estimates. It runs on the shared engine
(:mod:`algorithms._engine`) with two sources, the similar points and the
unlabeled points; the correction is the engine's ``derivatives`` hook, since
``delta'`` weighs both sources' derivatives by the sign of a sum over both
batches.

Also here: :func:`make_su_data` (the paper's protocol for building SU data from
a labeled set), :func:`estimate_prior` (class-prior estimation from SU data)
and :func:`su_sl_fit` (Bao et al.'s closed-form SU-SL baseline).

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import load_breast_cancer
>>> from algorithms import tsgsu
>>> X, y = load_breast_cancer(return_X_y=True)
>>> X = (X - X.mean(0)) / X.std(0)
>>> y = np.where(y == 1, 1, -1)  # the majority class is +1 (pi_+ > 1/2)
>>> X_s, X_u = tsgsu.make_su_data(X, y, n_pairs=150, n_unlabeled=250, replace=True, random_state=0)
>>> X_s.shape, X_u.shape
((150, 2, 30), (250, 30))
>>> model = tsgsu.fit(X_s, X_u, prior=float(np.mean(y == 1)), random_state=0)
>>> float((tsgsu.predict(model, X) == y).mean()) > 0.7
True
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import check_is_fitted

from kbackends import resolve
from kbackends._xp_utils import to_numpy
from kbackends.random import KERNELS

from . import _engine, distributed
from ._estimator import FunctionalClassifier
from ._losses import Loss
from ._model import RFFModel
from ._validation import (
    check_choice,
    check_gamma,
    check_nonneg_float,
    check_positive_int,
    check_X,
    is_numpy_like,
    seed_from,
    sklearn_validate,
)
from .dsg import decision_function, predict

__all__ = [
    "fit",
    "decision_function",
    "predict",
    "make_su_data",
    "estimate_prior",
    "su_sl_fit",
    "su_risk",
    "select_params",
    "Selection",
    "su_scorer",
    "SUSLModel",
    "TSGSUClassifier",
]

CORRECTIONS = ("abs", "relu", "none")


# --- margin losses l(z, t), t = +-1 -------------------------------------------------------


def _sigmoid_neg(m, xp):
    return 0.5 * (1.0 - xp.tanh(0.5 * m))


# name -> (value(z, t, xp), derivative in z (z, t, xp)); all satisfy l(z, +1) - l(z, -1) = -z,
# the condition under which the uncorrected SU risk is convex (Bao et al. 2018).
MARGIN_LOSSES = {
    # (z t - 1)^2 / 4, the paper's choice (and SU-SL's)
    "squared": (lambda z, t, xp: 0.25 * (z * t - 1.0) ** 2, lambda z, t, xp: 0.5 * t * (z * t - 1.0)),
    # log(1 + exp(-t z))
    "logistic": (lambda z, t, xp: xp.logaddexp(0.0 * z, -t * z), lambda z, t, xp: -t * _sigmoid_neg(t * z, xp)),
}


# For evaluation only (no derivative): the SU risk of the 0-1 loss is an unbiased
# estimate of the misclassification rate (the rewriting of Eq. (3) holds for any loss).
# The tie f = 0 is class -1, as predict has it.
EVAL_LOSSES = {
    **MARGIN_LOSSES,
    "zero_one": (lambda z, t, xp: xp.astype((z <= 0) if t > 0 else (z > 0), z.dtype), None),
}


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

    def derivatives(self, batches, xp, state=None, smoothing=0.0, margin=0.0):
        """Engine hook: Eq. (19)'s per-point coefficients on the two batches.

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
        sim, unl = batches
        c, ps, pp, pn = self.c, self.pi_s, self.prior, 1.0 - self.prior
        if self.correction == "none":
            da = db = 1.0
        else:
            if margin > 0.0:
                a, b, var_a, var_b = self.parts(sim.f, unl.f, xp, with_variance=True)
            else:
                (a, b), var_a, var_b = self.parts(sim.f, unl.f, xp), 0.0, 0.0
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
        sim.g = c * ps * (da * deriv(sim.f, 1.0, xp) - db * deriv(sim.f, -1.0, xp))
        unl.g = c * (pp * db * deriv(unl.f, -1.0, xp) - pn * da * deriv(unl.f, 1.0, xp))

    def hook(self, smoothing=0.0, margin=0.0):
        """The engine's ``derivatives`` hook, with its own running-average state."""
        state = {}
        return lambda batches, xp: self.derivatives(batches, xp, state, smoothing, margin)


# --- input handling -----------------------------------------------------------------------


def _pointwise(X_similar, name="X_similar"):
    """(n_pairs, 2, d) -> (2 n_pairs, d) (pair i on rows 2i, 2i+1); 2-D passes through."""
    if X_similar is None:
        msg = f"`{name}` is required, got None"
        raise ValueError(msg)
    if not hasattr(X_similar, "__array_namespace__") and not isinstance(X_similar, np.ndarray):
        X_similar = np.asarray(X_similar)
    ndim = X_similar.ndim
    if ndim == 3:
        if X_similar.shape[1] != 2:
            msg = f"`{name}` as pairs must have shape (n_pairs, 2, n_features), got {tuple(X_similar.shape)}"
            raise ValueError(msg)
        xp = X_similar.__array_namespace__() if hasattr(X_similar, "__array_namespace__") else np
        return xp.reshape(X_similar, (X_similar.shape[0] * 2, X_similar.shape[2]))
    if ndim != 2:
        msg = (
            f"`{name}` must be (n_pairs, 2, n_features) pairs or (2 * n_pairs, n_features) points, "
            f"got ndim={ndim}"
        )
        raise ValueError(msg)
    return X_similar


def check_prior(prior, name="prior"):
    """A class prior pi_+ in (0, 1) away from 1/2 (where the SU risk is singular)."""
    ok = isinstance(prior, numbers.Real) and not isinstance(prior, bool) and np.isfinite(prior)
    if not ok or not 0.0 < prior < 1.0:
        msg = f"`{name}` must be a float in (0, 1) (the class prior pi_+), got {prior!r}"
        raise ValueError(msg)
    if abs(2.0 * prior - 1.0) < 1e-3:
        msg = (
            f"`{name}`={prior!r} is (within 5e-4 of) 1/2: the SU risk divides by 2 pi_+ - 1, so SU "
            "classification is undefined for balanced classes"
        )
        raise ValueError(msg)
    return float(prior)


def _split_folds(rng, n_units, n_unlabeled, k, max_units=None, max_unlabeled=None):
    """k random disjoint folds of the similar units (pairs or points) and of the
    unlabeled points, optionally of random subsets of at most ``max_*`` of each."""
    folds_s = np.array_split(rng.permutation(n_units)[:max_units], k)
    folds_u = np.array_split(rng.permutation(n_unlabeled)[:max_unlabeled], k)
    return folds_s, folds_u


def _fold_rows(folds_s, folds_u, pairs):
    """Per fold: (fit rows, held-out rows) of the similar points and of the unlabeled
    points, sorted; a similar unit is a pair (rows 2i, 2i + 1) when ``pairs``."""

    def rows(units, as_pairs):
        units = np.sort(units)
        return np.stack([2 * units, 2 * units + 1], axis=1).reshape(-1) if as_pairs else units

    for k in range(len(folds_s)):
        rest_s = np.concatenate([f for j, f in enumerate(folds_s) if j != k])
        rest_u = np.concatenate([f for j, f in enumerate(folds_u) if j != k])
        yield rows(rest_s, pairs), rows(folds_s[k], pairs), rows(rest_u, False), rows(folds_u[k], False)


# --- fit ------------------------------------------------------------------------------------


def fit(
    X_similar,
    X_unlabeled,
    *,
    prior=None,
    loss="squared",
    correction="abs",
    correction_smoothing=0.9,
    correction_margin=2.0,
    lam=0.1,
    kernel="rbf",
    gamma="median",
    n_iter=100,
    batch_size=1000,
    block_size=32,
    step=0.5,
    schedule="auto",
    precondition=1.0,
    average=True,
    feature_budget=None,
    fit_intercept=True,
    random_state=None,
    backend="auto",
    dtype=None,
    callback=None,
):
    """Fit a kernel SU classifier by triply stochastic functional gradients.

    Parameters
    ----------
    X_similar : array of shape (n_pairs, 2, n_features) or (2 * n_pairs, n_features)
        Similar pairs (both points share an unknown class), or their points
        after marginalisation (Eq. (7): each a draw from ``p~_S``).
    X_unlabeled : array of shape (n_unlabeled, n_features)
        Unlabeled points, drawn from the marginal ``p(x)``.
    prior : float in (0, 1), not 1/2, optional
        The class prior ``pi_+ = p(y = +1)``. None estimates it with
        :func:`estimate_prior` (which assumes ``pi_+ > 1/2``, as the paper does:
        SU data cannot tell the classes apart, so +1 is the larger class).
    loss : {"squared", "logistic"}, default "squared"
        The margin loss ``l(z, t)``: ``(z t - 1)^2 / 4`` (the paper's) or
        ``log(1 + exp(-t z))``.
    correction : {"abs", "relu", "none"}, default "abs"
        ``delta`` in Eq. (9), applied to each of the two parts of the risk that
        can go negative, on every mini-batch; "none" is Bao et al.'s unbiased risk.
    correction_smoothing : float in [0, 1), default 0.9
        Beyond the paper: ``delta'`` is taken at running averages of the batch
        values of A and B (this weight on the past) instead of at the batch
        values. A and B are partial risks (``pi_+ E_+ l(f, +1)`` and
        ``pi_- E_- l(f, -1)``) that are near zero for a good fit, so their batch
        values flip sign by noise and the batch rule (0, the paper's) turns the
        step around at random: measured on phishing and Skin_NonSkin it lost
        1-2 points of accuracy against "none"; the averaged sign does not.
    correction_margin : float >= 0, default 2.0
        Beyond the paper: a part counts as negative (its sign flipped by the
        correction) only when its averaged estimate is below this many standard
        errors of that estimate (from the batch variances), so the correction
        reacts to overfitting, not to sampling noise. The SU terms carry the
        factor ``1 / (2 pi_+ - 1)`` (7.7 on phishing), and there the noise-driven
        flips cost 0.6 points against "none" (86.04% vs 86.68%, 5 seeds) where
        a margin of 2 does not (86.71%). 0: the sign of the estimate itself.
    lam : float > 0, default 0.1
        RKHS penalty ``(lam / 2) ||f||^2``. The SU gradient is noisy (its terms
        are scaled by ``1 / (2 pi_+ - 1)``), so it needs more than a supervised fit.
    kernel : {"rbf", "laplacian"}, default "rbf"
    gamma : "median" or float > 0, default "median"
        Kernel width ``exp(-gamma ||x - x'||^2)``; "median" is the median heuristic
        on the pooled points.
    n_iter : int, default 100
        Iterations (each adds a block of ``block_size`` random features). The
        paper's setting: 100 iterations of batches of 1000.
    batch_size : int, default 1000
        Points drawn from each of the similar and the unlabeled data per iteration.
    block_size : int, default 32
        Random features added per iteration.
    step : float > 0, default 0.5
        Initial step ``theta``; the step of iteration t follows ``schedule``.
    schedule : {"auto", "theta_over_t", "constant", "inverse_scaling"}, default "auto"
        As in :func:`algorithms.dsg.fit` ("auto": theta / t for plain steps,
        theta / (1 + lam theta t) for preconditioned ones).
    precondition : float > 0 or None, default 1.0
        Beyond the paper, as in :func:`algorithms.dsg.fit`: each block step is
        preconditioned by the curvature of the squared-loss risk on the block,
        ``Phi_U^T Phi_U / (2 B)`` over the unlabeled batch (the similar points'
        part of the uncorrected risk is linear in f), plus this relative ridge: a
        Gauss-Newton step on the block. None: the paper's plain functional
        gradient steps (they need a tuned ``step``).
    average : bool, default True
        Return the Polyak average of the iterates (beyond the paper; it damps
        the noise of the SU gradient).
    feature_budget : int or None, default None
        At most this many random features; then old blocks are revisited (as in
        :func:`algorithms.tsgs3vm.fit`).
    fit_intercept : bool, default True
        Learn an unpenalised constant term (the SU-SL baseline has one too).
    random_state : None, int or numpy Generator
        Seeds the random features and the mini-batches.
    backend : {"auto", "cpu", "cuda", ...}, default "auto"
    dtype : float32 or float64, optional
    callback : callable, optional
        Called after each iteration with a dict (iteration, n_blocks, step,
        block, batch_loss: the uncorrected batch risk); returning True stops.

    Returns
    -------
    RFFModel
        ``algorithm="tsgsu"``, classes (-1, +1); predict with :func:`predict`,
        ``params["prior"]`` holds the prior used.

    Raises
    ------
    ValueError
        Bad shapes, a prior of 1/2 or outside (0, 1), or an estimate of it
        that is undefined (see :func:`estimate_prior`).
    """
    if distributed.is_dask_array(X_similar):  # data-parallel on the current dask.distributed Client
        return distributed.fit(fit, "tsgsu", **locals())
    bk = resolve(backend, X_similar, X_unlabeled)
    xp = bk.xp
    X_s = check_X(_pointwise(X_similar), bk, dtype, name="X_similar")
    X_u = check_X(X_unlabeled, bk, X_s.dtype, name="X_unlabeled")
    if X_u.shape[1] != X_s.shape[1]:
        msg = f"`X_unlabeled` has {X_u.shape[1]} features but `X_similar` has {X_s.shape[1]}"
        raise ValueError(msg)
    check_choice("loss", loss, tuple(MARGIN_LOSSES))
    check_choice("correction", correction, CORRECTIONS)
    correction_smoothing = check_nonneg_float("correction_smoothing", correction_smoothing)
    if correction_smoothing >= 1.0:
        msg = f"`correction_smoothing` must be in [0, 1), got {correction_smoothing!r}"
        raise ValueError(msg)
    correction_margin = check_nonneg_float("correction_margin", correction_margin)
    check_choice("kernel", kernel, KERNELS)
    check_choice("schedule", schedule, _engine.SCHEDULES)
    lam = check_nonneg_float("lam", lam, positive=True)
    if precondition is not None:
        precondition = check_nonneg_float("precondition", precondition, positive=True)
    step = check_nonneg_float("step", step, positive=True)
    n_iter = check_positive_int("n_iter", n_iter)
    batch_size = check_positive_int("batch_size", batch_size)
    block_size = check_positive_int("block_size", block_size)
    if feature_budget is not None:
        feature_budget = check_positive_int("feature_budget", feature_budget)
    max_blocks = None if feature_budget is None else math.ceil(feature_budget / block_size)
    seed = seed_from(random_state)
    if prior is None:
        prior = estimate_prior(X_similar, X_unlabeled, random_state=seed)
    prior = check_prior(prior)

    risk = _SURisk(prior=prior, loss=loss, correction=correction)
    l_s, l_u = risk.source_losses()
    sources = [
        _engine.Source(X=X_s, y=None, loss=l_s, weight=risk.pi_s, batch_size=batch_size, curvature=0.0),
        _engine.Source(X=X_u, y=None, loss=l_u, weight=1.0, batch_size=batch_size, curvature=0.5),
    ]
    if gamma == "median":  # the heuristic samples the pooled points (a float needs no copy)
        gamma = check_gamma(gamma, xp.concat((X_s, X_u), axis=0), bk, seed)
    gamma = check_gamma(gamma, X_s, bk, seed)
    settings = _engine.EngineSettings(
        n_iter=n_iter,
        block_size=block_size,
        kernel=kernel,
        gamma=gamma,
        seed=seed,
        lam=lam,
        step=step,
        schedule=schedule,
        ridge=precondition,
        average=bool(average),
        max_blocks=max_blocks,
        fit_intercept=bool(fit_intercept),
        callback=callback,
        sampling_seed=seed ^ 0x5DEECE66D,
        derivatives=risk.hook(correction_smoothing, correction_margin),
    )
    result = _engine.run(sources, bk, settings, X_s.dtype)
    params = {
        "prior": prior, "loss": loss, "correction": correction,
        "correction_smoothing": correction_smoothing, "correction_margin": correction_margin, "lam": lam,
        "fit_intercept": bool(fit_intercept), "n_iter": n_iter,
        "batch_size": batch_size, "step": step, "schedule": schedule, "precondition": precondition,
        "n_similar_points": int(X_s.shape[0]), "n_unlabeled": int(X_u.shape[0]),
    }
    return RFFModel.from_engine(
        result, settings, bk, X_s, algorithm="tsgsu", task="binary", classes=np.array([-1, 1]), params=params
    )


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
    bk = resolve(backend, X_similar, X_unlabeled)
    xp = bk.xp
    X_s = check_X(_pointwise(X_similar), bk, model.dtype, name="X_similar")
    X_u = check_X(X_unlabeled, bk, model.dtype, name="X_unlabeled")
    p = model.params
    loss = loss or p["loss"]
    check_choice("loss", loss, tuple(EVAL_LOSSES))
    correction = correction or p["correction"]
    check_choice("correction", correction, CORRECTIONS)
    risk = _SURisk(prior=p["prior"], loss=loss, correction=correction)
    return risk.risk(model.raw_decision(X_s, bk), model.raw_decision(X_u, bk), xp)


# Model-selection criteria: name -> (loss, correction) of the held-out SU risk.
CRITERIA = {"zero_one": ("zero_one", "none"), "squared": ("squared", "abs")}
# select_params' default candidates (lam; width as a multiple of the median heuristic) and folds.
SELECT_LAMS = (0.01, 0.03, 0.1, 0.3)
SELECT_GAMMA_SCALES = (0.03, 0.1, 0.3, 1.0)
SELECT_CV = 3


# --- label-free model selection ---------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """What :func:`select_params` chose.

    Attributes
    ----------
    params : dict
        ``prior``, ``lam`` and ``gamma`` (absolute) of the lowest held-out risk,
        plus the fixed ``fit_params``: ``fit(X_similar, X_unlabeled, **params)``
        fits the chosen model on all the data.
    risks : dict
        ``(lam, gamma_scale) ->`` cross-validated SU risk (the criterion), every candidate.
    gamma_median : float
        The median-heuristic width the scales multiply.
    """

    params: dict
    risks: dict
    gamma_median: float


def select_params(X_similar, X_unlabeled, *, prior=None, lams=SELECT_LAMS, gamma_scales=SELECT_GAMMA_SCALES,
                  cv=SELECT_CV, criterion="zero_one", random_state=None, backend="auto", dtype=None,
                  **fit_params):
    """Choose ``lam`` and the kernel width without labels, by cross-validated SU risk.

    SU data carry no labels, but the SU risk (Eq. (9)) estimates the
    classification risk from SU data alone, so hyper-parameters can be
    validated on it (Bao et al. 2018 and Shi et al. 2021 choose ``lam`` and the
    width by 5-fold cross-validation on it). Here: split the pairs and the
    unlabeled points into ``cv`` folds each, fit every ``(lam, gamma)`` on all
    folds but one and average its risk on the held-out folds; keep the lowest.
    The default criterion is the SU risk of the 0-1 loss, uncorrected: an
    unbiased estimate of the test error itself (the rewriting holds for any
    loss). "squared": the training loss's risk with the abs correction (its
    unbiased version rewards the overfit models that drive it negative), which
    can prefer a better-calibrated but worse-ranking model (phishing, one draw:
    lowest squared risk at 78.8% accuracy, lowest 0-1 risk at 87.2%).

    The width matters as much as ``lam``: the SU gradient is the supervised one
    amplified by ``1 / (2 pi_+ - 1)``, and near balanced classes a smoother
    kernel than the median heuristic's is often better (phishing, pi_+ = 0.565:
    80% accuracy at the median width, 86% at a tenth of it; docs/benchmarks.md).

    Parameters
    ----------
    X_similar, X_unlabeled : arrays as in :func:`fit`
    prior : float, optional
        ``pi_+``; None estimates it once (:func:`estimate_prior`) for all fits.
    lams : sequence of float > 0
        Candidate RKHS penalties.
    gamma_scales : sequence of float > 0
        Candidate widths as multiples of the median heuristic on the pooled points.
    cv : int >= 2, default 3
        Folds (pairs stay whole when ``X_similar`` is given as pairs).
    criterion : {"zero_one", "squared"}, default "zero_one"
        The held-out SU risk that ranks the candidates (see above).
    random_state : None, int or numpy Generator
        Seeds the folds, the median heuristic and every fit.
    backend, dtype : as in :func:`fit`
    **fit_params
        Passed to every fit (``correction``, ``n_iter``, ``batch_size``, ...).

    Returns
    -------
    Selection
        ``fit(X_similar, X_unlabeled, **selection.params)`` refits the choice on all data.

    Examples
    --------
    >>> import numpy as np
    >>> from algorithms import tsgsu
    >>> rng = np.random.default_rng(0)
    >>> y = np.where(rng.random(6000) < 0.7, 1, -1)
    >>> X = rng.normal(size=(6000, 2)) + 1.5 * y[:, None]
    >>> X_s, X_u = tsgsu.make_su_data(X, y, 800, 1600, random_state=0)
    >>> sel = tsgsu.select_params(X_s, X_u, prior=0.7, lams=(0.01, 0.1), gamma_scales=(0.3, 1.0),
    ...                           n_iter=20, random_state=0)
    >>> sorted(sel.params)
    ['gamma', 'lam', 'n_iter', 'prior', 'random_state']
    >>> model = tsgsu.fit(X_s, X_u, **sel.params)
    >>> float((tsgsu.predict(model, X) == y).mean()) > 0.9
    True
    """
    for name in ("lam", "gamma"):
        if name in fit_params:
            msg = f"`{name}` is chosen by select_params; pass the candidates as `lams` / `gamma_scales`"
            raise TypeError(msg)
    lams = [check_nonneg_float("lams", v, positive=True) for v in lams]
    gamma_scales = [check_nonneg_float("gamma_scales", v, positive=True) for v in gamma_scales]
    if not lams or not gamma_scales:
        msg = "`lams` and `gamma_scales` must each hold at least one candidate"
        raise ValueError(msg)
    cv = check_positive_int("cv", cv, minimum=2)
    check_choice("criterion", criterion, tuple(CRITERIA))
    bk = resolve(backend, X_similar, X_unlabeled)
    xp = bk.xp
    pairs = (X_similar.ndim if hasattr(X_similar, "ndim") else np.ndim(X_similar)) == 3
    X_s = check_X(_pointwise(X_similar), bk, dtype, name="X_similar")
    X_u = check_X(X_unlabeled, bk, X_s.dtype, name="X_unlabeled")
    if X_u.shape[1] != X_s.shape[1]:
        msg = f"`X_unlabeled` has {X_u.shape[1]} features but `X_similar` has {X_s.shape[1]}"
        raise ValueError(msg)
    # Folds over whole pairs (rows 2i, 2i + 1) when the input was pairs.
    n_units = X_s.shape[0] // 2 if pairs else X_s.shape[0]
    if min(n_units, X_u.shape[0]) < cv:
        msg = f"`cv`={cv} folds need at least {cv} pairs and {cv} unlabeled points"
        raise ValueError(msg)
    seed = seed_from(random_state)
    if prior is None:
        prior = estimate_prior(to_numpy(X_s), to_numpy(X_u), random_state=seed)
    prior = check_prior(prior)
    folds_s, folds_u = _split_folds(np.random.default_rng(seed), n_units, X_u.shape[0], cv)
    gamma_median = check_gamma("median", xp.concat((X_s, X_u), axis=0), bk, seed)
    fixed = {**fit_params, "random_state": seed}
    criterion_risk = _SURisk(prior, *CRITERIA[criterion])
    risks = dict.fromkeys(((lam, scale) for lam in lams for scale in gamma_scales), 0.0)
    for rows in _fold_rows(folds_s, folds_u, pairs):
        fit_s, val_s, fit_u, val_u = (xp.take(X, bk.asarray(r), axis=0) for X, r in zip((X_s, X_s, X_u, X_u), rows))
        for lam, scale in risks:
            model = fit(fit_s, fit_u, prior=prior, lam=lam, gamma=scale * gamma_median, backend=bk, **fixed)
            f_s, f_u = model.raw_decision(val_s, bk), model.raw_decision(val_u, bk)
            risks[(lam, scale)] += criterion_risk.risk(f_s, f_u, xp) / cv
    lam, scale = min(risks, key=risks.get)
    params = {**fixed, "prior": prior, "lam": lam, "gamma": scale * gamma_median}
    return Selection(params=params, risks=risks, gamma_median=gamma_median)


def su_scorer(estimator, X, s):
    """A label-free scikit-learn scorer for :class:`TSGSUClassifier`: the accuracy
    estimated from SU data, ``1 -`` the uncorrected SU risk of the 0-1 loss of the
    fitted model on ``(X, s)`` (s = 1 similar, 0 unlabeled), as in
    :func:`select_params`. For ``GridSearchCV(TSGSUClassifier(...), grid,
    scoring=tsgsu.su_scorer)``: the classifier's own ``score`` is accuracy against
    true labels, which SU data do not have. (An unbiased estimate: it can leave
    [0, 1] on small folds.)"""
    check_is_fitted(estimator, "model_")
    X_s, X_u = _rows_by_indicator(X, s)
    loss, correction = CRITERIA["zero_one"]
    return 1.0 - su_risk(estimator.model_, X_s, X_u, loss=loss, correction=correction)


# --- SU data from a labeled set -------------------------------------------------------------


def make_su_data(X, y, n_pairs, n_unlabeled, *, prior=None, replace=False, random_state=None,
                 return_labels=False):
    """Build an SU problem from labeled data as the paper's experiments do.

    Each similar pair is positive with probability ``pi_+^2 / pi_S`` (else
    negative) and is two points drawn from that class; each unlabeled point is
    positive with probability ``pi_+``; labels are then dropped.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
    y : array of shape (n_samples,)
        Labels: +1 for the positive class, anything else negative (0/1 and
        -1/+1 both work; the positive label is the larger of two values).
    n_pairs, n_unlabeled : int
    prior : float in (0, 1), optional
        ``pi_+`` to draw at; default the class proportion of ``y``.
    replace : bool, default False
        Draw with replacement (i.i.d. from the empirical distribution), needed
        when a class has fewer points than the draws need. Without replacement
        no point is used twice (across pairs and unlabeled points).
    random_state : None, int or numpy Generator
    return_labels : bool, default False
        Also return the hidden labels (+1 / -1) of the pairs and of the
        unlabeled points (for supervised references on the same points).

    Returns
    -------
    X_similar : ndarray of shape (n_pairs, 2, n_features)
    X_unlabeled : ndarray of shape (n_unlabeled, n_features)
    y_similar, y_unlabeled : ndarrays of shape (n_pairs,) and (n_unlabeled,)
        Only with ``return_labels``.
    """
    X = np.asarray(to_numpy(X) if hasattr(X, "__array_namespace__") else X)
    y = np.asarray(to_numpy(y) if hasattr(y, "__array_namespace__") else y)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        msg = f"`X` must be (n_samples, n_features) and `y` (n_samples,), got {X.shape} and {y.shape}"
        raise ValueError(msg)
    n_pairs = check_positive_int("n_pairs", n_pairs)
    n_unlabeled = check_positive_int("n_unlabeled", n_unlabeled)
    labels = np.unique(y)
    if labels.size != 2:
        msg = f"`y` must have exactly 2 classes, got {labels.size} ({labels[:5].tolist()}...)"
        raise ValueError(msg)
    positive = y == labels[1]
    if prior is None:
        prior = float(np.mean(positive))
    prior = check_prior(prior)
    rng = np.random.default_rng(seed_from(random_state) if not isinstance(random_state, np.random.Generator)
                                else random_state)
    pi_s = prior**2 + (1 - prior) ** 2
    n_pos_pairs = int(rng.binomial(n_pairs, prior**2 / pi_s))
    n_pos_u = int(rng.binomial(n_unlabeled, prior))
    need_pos = 2 * n_pos_pairs + n_pos_u
    need_neg = 2 * (n_pairs - n_pos_pairs) + n_unlabeled - n_pos_u
    pos, neg = np.flatnonzero(positive), np.flatnonzero(~positive)
    if not replace and (need_pos > pos.size or need_neg > neg.size):
        msg = (
            f"the draws need {need_pos} positive and {need_neg} negative points but `y` has {pos.size} and "
            f"{neg.size}; lower `n_pairs` / `n_unlabeled` or pass replace=True"
        )
        raise ValueError(msg)
    p = rng.choice(pos, size=need_pos, replace=replace)
    q = rng.choice(neg, size=need_neg, replace=replace)
    d = X.shape[1]
    pairs = np.concatenate([
        X[p[: 2 * n_pos_pairs]].reshape(-1, 2, d),
        X[q[: 2 * (n_pairs - n_pos_pairs)]].reshape(-1, 2, d),
    ])
    unlabeled = np.concatenate([X[p[2 * n_pos_pairs:]], X[q[2 * (n_pairs - n_pos_pairs):]]])
    y_pairs = np.where(np.arange(n_pairs) < n_pos_pairs, 1, -1)
    y_unl = np.where(np.arange(n_unlabeled) < n_pos_u, 1, -1)
    order_s, order_u = rng.permutation(n_pairs), rng.permutation(n_unlabeled)
    if return_labels:
        return pairs[order_s], unlabeled[order_u], y_pairs[order_s], y_unl[order_u]
    return pairs[order_s], unlabeled[order_u]


# --- SU-SL: Bao et al.'s closed form ----------------------------------------------------------


@dataclass
class SUSLModel:
    """SU-SL: ``f(x) = w . phi(x)`` with ``phi`` linear ``[x, 1]`` or random Fourier
    features ``[sqrt(2/D) cos(x W + b), 1]`` (NumPy, host only)."""

    w: np.ndarray
    features: str
    omega: np.ndarray | None = None
    phase: np.ndarray | None = None
    prior: float = 0.0

    def transform(self, X):
        X = np.asarray(X, dtype=np.float64)
        if self.features == "linear":
            phi = X
        else:
            phi = np.sqrt(2.0 / self.omega.shape[1]) * np.cos(X @ self.omega + self.phase)
        return np.concatenate([phi, np.ones((X.shape[0], 1))], axis=1)

    def decision_function(self, X):
        return self.transform(X) @ self.w

    def predict(self, X):
        return np.where(self.decision_function(X) > 0, 1, -1)


def su_sl_fit(X_similar, X_unlabeled, prior, *, lam=1e-3, features="linear", n_components=1000,
              gamma="median", random_state=None):
    """SU-SL (Bao et al. 2018): the closed-form minimiser of the squared-loss SU risk.

    With ``l(z, t) = (z t - 1)^2 / 4`` the uncorrected risk (7) of a
    linear-in-parameters model ``f = w . phi`` is a convex quadratic,

        R(w) = -c pi_S mean_S f + mean_U (f^2 / 4 + c f / 2) + const,   c = 1 / (2 pi_+ - 1),

    so ``w`` solves the (b x b) system
    ``(Phi_U^T Phi_U / (2 n_U) + lam I') w = c (pi_S mean_S phi - mean_U phi / 2)``
    (``I'`` leaves the bias unpenalised). ``features="linear"``: ``phi = [x, 1]``;
    ``"rff"``: ``n_components`` random Fourier features of the RBF kernel.
    Cost O(n b^2 + b^3), memory O(n b) in float64.

    Returns
    -------
    SUSLModel
    """
    prior = check_prior(prior)
    check_choice("features", features, ("linear", "rff"))
    X_s = np.asarray(to_numpy(_pointwise(X_similar)), dtype=np.float64)
    X_u = np.asarray(to_numpy(X_unlabeled), dtype=np.float64)
    rng = np.random.default_rng(seed_from(random_state))
    model = SUSLModel(w=np.zeros(0), features=features, prior=prior)
    if features == "rff":
        if gamma == "median":
            gamma = check_gamma("median", np.concatenate([X_s, X_u]), resolve("cpu"), int(rng.integers(2**31)))
        gamma = check_gamma(gamma, X_s, None, 0)  # a given width: validated only
        model.omega = rng.normal(scale=math.sqrt(2.0 * gamma), size=(X_s.shape[1], n_components))
        model.phase = rng.uniform(0.0, 2.0 * math.pi, size=n_components)
    phi_s, phi_u = model.transform(X_s), model.transform(X_u)
    c = 1.0 / (2.0 * prior - 1.0)
    pi_s = prior**2 + (1.0 - prior) ** 2
    b = phi_u.shape[1]
    H = phi_u.T @ phi_u / (2.0 * phi_u.shape[0])
    H[np.arange(b - 1), np.arange(b - 1)] += lam
    rhs = c * (pi_s * phi_s.mean(axis=0) - 0.5 * phi_u.mean(axis=0))
    model.w = np.linalg.solve(H, rhs)
    return model


# --- class-prior estimation ------------------------------------------------------------------


def _prior_from_kappa(kappa):
    """pi_+ > 1/2 from kappa = pi_- / pi_S (the root of 2 k p^2 - (2k - 1) p + k - 1 = 0)."""
    return ((2.0 * kappa - 1.0) + math.sqrt(-4.0 * kappa * kappa + 4.0 * kappa + 1.0)) / (4.0 * kappa)


def _bottom_bin_proportion(score_s, score_u, confidences, lo=0.02, hi=0.6, n_bins=60):
    """min over thresholds t of (F_S(t) + z se) / (F_U(t) - z se), F the empirical CDFs:
    the best-bin estimate of the proportion of U in S (Garg et al. 2021, after Scott 2015),
    one per z in ``confidences``."""
    best = [np.inf] * len(confidences)
    n_s, n_u = score_s.size, score_u.size
    for t in np.quantile(score_u, np.linspace(lo, hi, n_bins)):
        a = float(np.mean(score_s <= t))
        b = float(np.mean(score_u <= t))
        se_a, se_b = math.sqrt(a * (1.0 - a) / n_s), math.sqrt(b * (1.0 - b) / n_u)
        for i, z in enumerate(confidences):
            if b - z * se_b > 0:
                best[i] = min(best[i], (a + z * se_a) / (b - z * se_b))
    return best


def estimate_prior(X_similar, X_unlabeled, *, n_components=300, lam=1e-3, confidence=0.0, n_repeats=5,
                   max_samples=20000, random_state=None, return_pi_s=False):
    """Estimate the class prior ``pi_+`` (> 1/2) from SU data by mixture proportion estimation.

    Method. The similar points' density is ``p~_S = (pi_+^2 p_+ + pi_-^2 p_-) / pi_S``
    and the unlabeled density ``p = pi_+ p_+ + pi_- p_-``, so ``p~_S`` contains ``p``
    with the largest proportion ``kappa = pi_- / pi_S`` (the negative class is used
    up first; ``p_+`` and ``p_-`` mutually irreducible, the usual MPE assumption).
    (The other direction, the proportion of ``p~_S`` in ``p`` that Eq. (12) of the
    paper suggests, is ``pi_S / pi_+``, not ``pi_S``: ``p~_D = (p_+ + p_-) / 2``
    still contains part of ``p~_S``; and it does not determine ``pi_+`` near
    ``1/sqrt(2)``.) ``kappa`` is estimated by the best-bin estimator (BBE, Garg
    et al. 2021, the ROC estimator of Scott 2015 on held-out scores): score the
    points with a function that ranks them by ``P(y = +1 | x)``, then
    ``kappa = min_t (F_S(t) + z se) / (F_U(t) - z se)`` over thresholds ``t`` in the
    low tail of the unlabeled scores (F the empirical fractions below ``t``,
    se their binomial standard errors, z = ``confidence``). The ranking function
    is an SU-SL fit on random Fourier features (:func:`su_sl_fit`), cross-fitted
    on two halves of the data so every point is scored by a model that did not
    see it; the estimate is averaged over ``n_repeats`` random halvings (the
    split alone moves a single estimate by 0.01-0.03 on phishing; the average
    of 6 is within 0.016 of the truth on all 5 draws there). Then ``pi_+`` solves
    ``kappa = pi_- / (pi_+^2 + pi_-^2)``, and ``pi_S = pi_+^2 + pi_-^2`` (so
    ``pi_+ = (sqrt(2 pi_S - 1) + 1) / 2``).

    Which side to err on: an impure bottom bin biases ``kappa`` up, so ``pi_+``
    down, towards 1/2; BBE's standard-error term (``confidence`` > 0) adds to
    that, which is the safe side in PU learning but not here: an underestimated
    ``pi_+`` makes one part of the corrected SU risk negative at good
    classifiers, so the correction works against the data (measured on
    phishing: an error of -0.03 costs 1-5 points of accuracy, +0.03 0-3).
    Hence ``confidence=0`` by default.

    Cost: ``2 n_repeats`` SU-SL fits on ``n_components`` random features,
    O(n b^2) with n <= ``max_samples`` points per side; about 2 s on 2 x 10^4
    points with the defaults.

    Parameters
    ----------
    X_similar : array of shape (n_pairs, 2, n_features) or (2 * n_pairs, n_features)
    X_unlabeled : array of shape (n_unlabeled, n_features)
    n_components : int, default 300
        Random features of the ranking function (RBF kernel, median width).
    lam : float, default 1e-3
        Its ridge.
    confidence : float >= 0, default 0.0
        Standard errors added against the estimate (1: BBE's upper bound on
        ``kappa``, a lower one on ``pi_+``; see above for why not by default).
    n_repeats : int >= 1, default 5
        Random halvings the estimate of ``kappa`` is averaged over.
    max_samples : int, default 20000
        Subsample each side to at most this many points.
    random_state : None, int or numpy Generator
    return_pi_s : bool, default False
        Also return the estimated ``pi_S``.

    Returns
    -------
    float
        ``pi_+`` in (1/2, 1); with ``return_pi_s``, the tuple ``(pi_+, pi_S)``.

    Raises
    ------
    ValueError
        When the estimate is undefined: the similar and unlabeled points look
        alike (``kappa`` not below 1 by a standard error, i.e. ``pi_S <= 1/2`` and
        ``pi_+ = 1/2``, where the SU risk is singular, cannot be ruled out), or
        too few points (< 20 per side).

    Examples
    --------
    >>> import numpy as np
    >>> from algorithms import tsgsu
    >>> rng = np.random.default_rng(0)
    >>> y = np.where(rng.random(20000) < 0.7, 1, -1)
    >>> X = rng.normal(size=(20000, 2)) + 3.0 * y[:, None]
    >>> X_s, X_u = tsgsu.make_su_data(X, y, 3000, 6000, random_state=0)
    >>> abs(tsgsu.estimate_prior(X_s, X_u, random_state=0) - 0.7) < 0.05
    True
    """
    X_s = np.asarray(to_numpy(_pointwise(X_similar)) if hasattr(X_similar, "__array_namespace__")
                     else _pointwise(X_similar), dtype=np.float64)
    X_u = np.asarray(to_numpy(X_unlabeled) if hasattr(X_unlabeled, "__array_namespace__") else X_unlabeled,
                     dtype=np.float64)
    if X_u.ndim != 2 or X_u.shape[1] != X_s.shape[1]:
        msg = f"`X_unlabeled` must be (n_unlabeled, {X_s.shape[1]}), got shape {X_u.shape}"
        raise ValueError(msg)
    if X_s.shape[0] < 20 or X_u.shape[0] < 20:
        msg = (f"too few points to estimate the prior: {X_s.shape[0]} similar and {X_u.shape[0]} unlabeled; "
               "at least 20 of each")
        raise ValueError(msg)
    if not (np.all(np.isfinite(X_s)) and np.all(np.isfinite(X_u))):
        msg = "`X_similar` or `X_unlabeled` contains NaN or infinite values"
        raise ValueError(msg)
    n_components = check_positive_int("n_components", n_components)
    confidence = check_nonneg_float("confidence", confidence)
    max_samples = check_positive_int("max_samples", max_samples, minimum=20)
    n_repeats = check_positive_int("n_repeats", n_repeats)
    rng = np.random.default_rng(seed_from(random_state))
    kappas, uppers = [], []
    for _ in range(n_repeats):
        # Two halves (whole pairs, rows 2i and 2i + 1), each scored by a ranker fitted on the other.
        (pairs_a, pairs_b), (u_a, u_b) = _split_folds(rng, X_s.shape[0] // 2, X_u.shape[0], 2,
                                                      max_samples // 2, max_samples)
        rows_a, rows_b = (np.concatenate([2 * p, 2 * p + 1]) for p in (pairs_a, pairs_b))
        seed = int(rng.integers(2**31))
        scores_s, scores_u = [], []
        for fit_s, val_s, fit_u, val_u in ((rows_a, rows_b, u_a, u_b), (rows_b, rows_a, u_b, u_a)):
            # The ranking does not depend on the provisional prior (it scales the risk's
            # terms); 3/4 is any value away from 1/2.
            ranker = su_sl_fit(X_s[fit_s], X_u[fit_u], 0.75, lam=lam, features="rff",
                               n_components=n_components, random_state=seed)
            scores_s.append(ranker.decision_function(X_s[val_s]))
            scores_u.append(ranker.decision_function(X_u[val_u]))
        # The estimate, and one standard error up: does the data show kappa < 1 at all?
        kappa, upper = _bottom_bin_proportion(np.concatenate(scores_s), np.concatenate(scores_u),
                                              (confidence, max(confidence, 1.0)))
        kappas.append(kappa)
        uppers.append(upper)
    kappa, upper = float(np.mean(kappas)), float(np.mean(uppers))
    if not upper < 1.0 - 1e-3:
        msg = (
            f"the class prior cannot be estimated: the similar and unlabeled points look alike "
            f"(the proportion of U in S is {kappa:.3f}, but not below 1 by a standard error: {upper:.3f}; "
            "pi_S <= 1/2 and pi_+ = 1/2 cannot be ruled out, where the SU risk is singular); "
            "pass `prior` if it is known"
        )
        raise ValueError(msg)
    prior = _prior_from_kappa(kappa)
    pi_s = prior**2 + (1.0 - prior) ** 2
    return (prior, pi_s) if return_pi_s else prior


def _rows_by_indicator(X, s):
    """(similar rows, unlabeled rows) of X by the SU indicator s (NumPy or any array):
    of its two values the larger marks the similar points (1 / 0, True / False, 1 / -1)."""
    s = to_numpy(s) if not is_numpy_like(s) else np.asarray(s)
    if s.ndim != 1:
        msg = f"`y` (s) must be 1-D (1: similar, 0: unlabeled), got shape {s.shape}"
        raise ValueError(msg)
    values = np.unique(s)
    if values.size != 2:
        what = f"only 1 class ({values.tolist()})" if values.size < 2 else f"{values.size} values"
        msg = f"`y` (s) has {what}; two values are needed: similar (1) and unlabeled (0) points"
        raise ValueError(msg)
    rows_s, rows_u = np.flatnonzero(s == values[1]), np.flatnonzero(s == values[0])
    if is_numpy_like(X):
        X = np.asarray(X)
        return X[rows_s], X[rows_u]
    xp = X.__array_namespace__()
    dev = getattr(X, "device", None)
    return xp.take(X, xp.asarray(rows_s, device=dev), axis=0), xp.take(X, xp.asarray(rows_u, device=dev), axis=0)


class TSGSUClassifier(FunctionalClassifier):
    """SU classification (TSGSU) as a scikit-learn estimator.

    ``fit(X, s)`` with ``s == 1`` for points of similar pairs (marginalised,
    Eq. (7)) and ``s == 0`` for unlabeled points (any two values: the larger
    marks the similar points); ``predict`` returns +1 / -1
    (+1 the class of prior ``prior``; with ``prior=None`` it is estimated and
    +1 is the larger class). Parameters as in :func:`algorithms.tsgsu.fit`.

    Examples
    --------
    >>> import numpy as np
    >>> from algorithms import TSGSUClassifier, tsgsu
    >>> rng = np.random.default_rng(0)
    >>> y = np.where(rng.random(4000) < 0.7, 1, -1)
    >>> X = rng.normal(size=(4000, 2)) + 2.0 * y[:, None]
    >>> X_s, X_u = tsgsu.make_su_data(X, y, 500, 1000, random_state=0)
    >>> Xf = np.concatenate([X_s.reshape(-1, 2), X_u]); s = np.r_[np.ones(1000), np.zeros(1000)]
    >>> clf = TSGSUClassifier(prior=0.7, random_state=0).fit(Xf, s)
    >>> float((clf.predict(X) == y).mean()) > 0.9
    True
    """

    # fit is its own (y is the SU indicator); decision_function and predict are the shared ones
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)

    def __init__(self, *, prior=None, loss="squared", correction="abs", correction_smoothing=0.9, correction_margin=2.0,
                 lam=0.1, kernel="rbf", gamma="median", n_iter=100, batch_size=1000, block_size=32, step=0.5, schedule="auto", precondition=1.0,
                 average=True, feature_budget=None, fit_intercept=True, random_state=None, backend="auto", dtype=None):
        self.prior = prior
        self.loss = loss
        self.correction = correction
        self.correction_smoothing = correction_smoothing
        self.correction_margin = correction_margin
        self.lam = lam
        self.kernel = kernel
        self.gamma = gamma
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.block_size = block_size
        self.step = step
        self.schedule = schedule
        self.precondition = precondition
        self.average = average
        self.feature_budget = feature_budget
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.backend = backend
        self.dtype = dtype

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # s has two values; predictions two classes
        return tags

    def fit(self, X, y):
        """Fit on rows ``X`` with ``y`` = s: 1 for points of similar pairs, 0 for unlabeled points.

        (The argument is named ``y`` for scikit-learn; it is the SU indicator s,
        not a class label.)
        """
        if y is None:
            msg = (f"{type(self).__name__} requires y to be passed, but the target y is None "
                   "(y = s: 1 similar, 0 unlabeled)")
            raise ValueError(msg)
        X, s = sklearn_validate(self, X, y, reset=True)
        if is_numpy_like(s):
            from sklearn.utils.multiclass import check_classification_targets, type_of_target

            check_classification_targets(s)
            if type_of_target(s) not in ("binary",) and np.unique(s).size > 2:
                msg = ("Only binary classification is supported: y = s must hold 1 (point of a similar pair) "
                       f"or 0 (unlabeled point), got {type_of_target(s)} values")
                raise ValueError(msg)
        X_s, X_u = _rows_by_indicator(X, s)
        self.model_ = fit(X_s, X_u, **self.get_params())
        self.prior_ = self.model_.params["prior"]
        self.classes_ = np.array([-1, 1])
        return self
