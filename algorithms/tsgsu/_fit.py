"""TSGSU's fit: the SU risk on the shared functional-gradient engine."""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from kbackends import is_array, resolve, to_numpy
from kbackends.ops import resolve_hint

from .. import _engine, distributed
from . import _distributed
from .._models.model import RFFModel
from .._boundary.params import (
    Constraint,
    Param,
    ParamTable,
    common,
    common_tail,
    either,
    integer,
    none,
    options,
    real,
)
from .._boundary.fit_plan import budget_blocks
from .._boundary.sparse import stack_rows
from .._boundary.validation import check_gamma, check_prior, seed_from
from .._boundary.precision import centre_features
from ._inputs import engine_su_inputs
from ._prior import estimate_prior
from ._risk import CORRECTIONS, MARGIN_LOSSES, _SURisk

# A class label as users write them (a pandas string column, -1/+1, 0/1, True/False).
LABEL = Constraint("a class label (str, int, float or bool)",
                   lambda v: isinstance(v, (str, numbers.Number, np.generic)) and not isinstance(v, complex))

# The hyper-parameters of fit and TSGSUClassifier (and the command line), once.
PARAMS = ParamTable(
    Param("prior", None, either(real(0, 1, low_open=True, high_open=True), none()),
          "class prior pi_+ (not 1/2); None: estimated from the data"),
    Param("loss", "squared", options(*MARGIN_LOSSES), "margin loss l(z, t)"),
    Param("correction", "abs", options(*CORRECTIONS), "delta of Eq. (9) on the two parts of the risk"),
    Param("correction_smoothing", 0.9, real(0, 1, high_open=True), "weight on the past of the parts' running averages"),
    Param("correction_margin", 2.0, real(0), "standard errors below zero before a part counts as negative"),
    Param("lam", 0.1, real(0, low_open=True), "RKHS penalty (lam / 2) ||f||^2"),
    common("kernel"),
    common("gamma"),
    common("features"),
    Param("n_iter", 100, integer(1), "iterations (each adds a block)"),
    Param("batch_size", 1000, integer(1), "points drawn from each of the similar and unlabeled data"),
    common("block_size", default=32),
    common("step", default=0.5),
    common("schedule"),
    common("precondition", default=1.0),
    common("average", default=True),
    common("feature_budget"),
    common("fit_intercept"),
    Param("positive_class", 1, LABEL, "label predicted for the class of prior `prior` (estimated: the larger class)"),
    Param("negative_class", -1, LABEL, "label predicted for the other class"),
    *common_tail(),
)


@PARAMS.entry
def fit(X_similar, X_unlabeled, *, prior, loss, correction, correction_smoothing, correction_margin, lam,
        kernel, gamma, features, n_iter, batch_size, block_size, step, schedule, precondition, average, feature_budget,
        fit_intercept, positive_class, negative_class, random_state, backend, dtype, callback,
        verbose):
    """Fit a kernel SU classifier by triply stochastic functional gradients.

    Parameters
    ----------
    X_similar : array of shape (n_pairs, 2, n_features) or (2 * n_pairs, n_features)
        Similar pairs (both points share an unknown class), or their points
        after marginalisation (Eq. (7): each a draw from ``p~_S``). A
        scipy.sparse matrix (points; cupyx.scipy.sparse on cuda) stays sparse
        throughout, prior estimation included (on the host).
    X_unlabeled : array of shape (n_unlabeled, n_features)
        Unlabeled points, drawn from the marginal ``p(x)``; dense or sparse.
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
    features : {"monte_carlo", "orthogonal", "qmc"}, default "monte_carlo"
        As in :func:`algorithms.dsg.fit`.
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
    feature_budget : "auto", int or None, default "auto"
        At most this many random features (whole blocks); then old blocks are
        revisited (as in :func:`algorithms.dsg.fit`); "auto": the rule of every
        engine algorithm, :func:`algorithms._boundary.fit_plan.auto_feature_budget`.
    fit_intercept : bool, default True
        Learn an unpenalised constant term (the SU-SL baseline has one too).
    positive_class, negative_class : class labels, default 1 and -1
        The labels :func:`predict` returns for the class of prior ``prior`` and
        for the other one. SU data cannot tell which class is which: with
        ``prior=None`` the prior is estimated as ``pi_+ > 1/2``, so
        ``positive_class`` names the **larger** class. On a9a, whose larger class
        is -1, pass ``positive_class=-1, negative_class=1``; or orient a fitted
        model against a few labelled rows with :func:`orient`. ``model.classes``
        is the two labels sorted (when they sort), and the decision function is
        signed so that ``f > 0`` predicts ``classes[1]`` (scikit-learn's convention).
    random_state : None, int or numpy Generator
        Seeds the random features and the mini-batches.
    backend : {"auto", "cpu", "cuda", ...}, default "auto"
    dtype : float32 or float64, optional
    callback : callable, optional
        Called after each iteration with a dict (iteration, n_blocks, step,
        block, batch_loss: the uncorrected batch risk); returning True stops.
    verbose : int, default 0
        0: silent; 1: a progress bar on stderr over the iterations, with the batch
        loss every 10 iterations (the uncorrected batch risk) (read a round late, so the bar adds no host
        synchronisation per iteration on a GPU: :mod:`algorithms._engine.progress`).

    Returns
    -------
    RFFModel
        ``algorithm="tsgsu"``, classes ``(negative_class, positive_class)`` in
        sorted order; predict with :func:`predict`, ``params["prior"]`` holds the
        prior used.

    Raises
    ------
    ValueError
        Bad shapes, a prior of 1/2 or outside (0, 1), or an estimate of it
        that is undefined (see :func:`estimate_prior`).
    """
    if positive_class == negative_class:
        msg = f"`positive_class` and `negative_class` must differ, both are {positive_class!r}"
        raise ValueError(msg)
    if distributed.is_dask_array(X_similar):  # data-parallel on the current dask.distributed Client
        return distributed.fit(DISTRIBUTED, **locals())
    with centre_features():  # in memory: X may be centred (the model keeps the centre)
        return _build(**locals()).solve()


def _build(X_similar, X_unlabeled, *, prior, loss, correction, correction_smoothing, correction_margin, lam,
          kernel, gamma, features, n_iter, batch_size, block_size, step, schedule, precondition, average, feature_budget,
          fit_intercept, positive_class, negative_class, random_state, backend, dtype, callback,
          verbose):
    """The engine problem of a TSGSU fit (:func:`fit`'s arguments, validated): the similar
    and unlabelled sources, the SU risk's derivatives, the settings, and the model."""
    bk = resolve(backend, resolve_hint(X_similar), resolve_hint(X_unlabeled))
    xp = bk.xp
    X_s, X_u, centre = engine_su_inputs(X_similar, X_unlabeled, bk, dtype)
    max_blocks = budget_blocks(feature_budget, X_u, block_size)
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
    if gamma in ("median", "scale"):  # the data-driven widths read the pooled points (a float needs no copy)
        gamma = check_gamma(gamma, stack_rows((X_s, X_u), xp), bk, seed)
    gamma = check_gamma(gamma, X_s, bk, seed)
    settings = _engine.engine_settings(
        locals(), gamma=gamma, seed=seed, max_blocks=max_blocks,
        derivatives=risk.hook(correction_smoothing, correction_margin), label="tsgsu",
    )
    params = {
        "prior": prior, "loss": loss, "correction": correction,
        "correction_smoothing": correction_smoothing, "correction_margin": correction_margin, "lam": lam,
        "fit_intercept": bool(fit_intercept), "n_iter": n_iter,
        "batch_size": batch_size, "step": step, "schedule": schedule, "precondition": precondition,
        "n_similar_points": int(X_s.shape[0]), "n_unlabeled": int(X_u.shape[0]),
    }

    def finish(result):
        model = RFFModel.from_engine(result, settings, bk, X_s, algorithm="tsgsu", task="binary",
                                     classes=np.array([-1, 1]), params=params)
        if centre is not None:
            model = dataclasses.replace(model, centre=centre)
        return with_classes(model, positive_class, negative_class)

    return _engine.Problem(sources, settings, bk, X_s.dtype, finish)


def with_classes(model, positive, negative):
    """``model`` (f > 0: the class of prior ``pi_+``) predicting ``positive`` for that
    class and ``negative`` for the other: classes sorted when the labels sort, and
    ``coef`` / ``intercept`` negated when that puts ``positive`` first, so ``f > 0``
    always predicts ``classes[1]``."""
    if isinstance(positive, str) != isinstance(negative, str):  # no order (nor a common dtype)
        return dataclasses.replace(model, classes=np.array([negative, positive], dtype=object))
    classes = np.asarray([negative, positive])
    if classes.dtype.kind in "biufU" and classes[1] < classes[0]:
        return dataclasses.replace(model, coef=-model.coef, intercept=-model.intercept, classes=classes[::-1])
    return dataclasses.replace(model, classes=classes)


def orient(model, X_ref, y_ref, *, backend="auto"):
    """``model`` predicting the labels of ``y_ref``, in the orientation that agrees
    with them best.

    SU data fix a classifier only up to the names of its two classes; a few
    labelled rows (tens suffice when the model is good) name them.

    Parameters
    ----------
    model : RFFModel
        A TSGSU model (:func:`fit`).
    X_ref : array of shape (n_ref, n_features_in)
        Reference rows.
    y_ref : array of shape (n_ref,)
        Their labels: exactly two distinct values, any type.
    backend : {"auto", "cpu", "cuda"} or Backend, default "auto"

    Returns
    -------
    RFFModel
        The same decision boundary, ``classes`` the labels of ``y_ref``.

    Raises
    ------
    ValueError
        ``y_ref`` without exactly two labels, or its length not ``X_ref``'s rows.

    Examples
    --------
    >>> import numpy as np
    >>> from algorithms import tsgsu
    >>> rng = np.random.default_rng(0)
    >>> y = np.where(rng.random(3000) < 0.3, "spam", "ham")  # the larger class is "ham"
    >>> X = rng.normal(size=(3000, 2)) + 2.0 * (y == "spam")[:, None]
    >>> X_s, X_u = tsgsu.make_su_data(X, np.where(y == "ham", 1, -1), 400, 800, random_state=0)
    >>> model = tsgsu.orient(tsgsu.fit(X_s, X_u, prior=0.7, random_state=0), X[:50], y[:50])
    >>> model.classes.tolist(), float((tsgsu.predict(model, X) == y).mean()) > 0.9
    (['ham', 'spam'], True)
    """
    y_ref = np.asarray(to_numpy(y_ref) if is_array(y_ref) else y_ref)
    labels = np.unique(y_ref)
    if y_ref.ndim != 1 or labels.size != 2:
        msg = f"`y_ref` must be 1-D with exactly two distinct labels, got shape {y_ref.shape} and {labels.size} labels"
        raise ValueError(msg)
    f = np.asarray(to_numpy(model.decision_function(X_ref, backend=backend)))
    if f.shape[0] != y_ref.shape[0]:
        msg = f"`y_ref` must have one label per row of `X_ref` ({f.shape[0]}), got {y_ref.shape[0]}"
        raise ValueError(msg)
    # f > 0 predicts the model's classes[1] whatever they are: with_classes takes f > 0 as
    # "positive"; the agreement of f > 0 meaning labels[1] picks the orientation
    agree = float(np.mean((f > 0) == (y_ref == labels[1])))
    positive, negative = (labels[1], labels[0]) if agree >= 0.5 else (labels[0], labels[1])
    return with_classes(model, positive.item() if hasattr(positive, "item") else positive,
                        negative.item() if hasattr(negative, "item") else negative)


# The problem a fit runs, for a runner of one's own (checked like fit).
build = PARAMS.entry(_build)

# How TSGSU trains on dask arrays (algorithms.distributed): its problem, its rows.
DISTRIBUTED = distributed.Plan(name="tsgsu", params=PARAMS, build=_build, prepare=_distributed.prepare,
                               rows=_distributed.rows)
