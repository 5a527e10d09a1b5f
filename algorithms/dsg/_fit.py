"""dsg: the hyper-parameters, ``fit`` and prediction (see the package docstring)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from kbackends import resolve
from kbackends.ops import resolve_hint
from kbackends.losses import SUPERVISED_LOSSES

from .. import _engine, distributed
from .._models.model import RFFModel
from .._boundary.params import (
    Constraint, Param, ParamTable, common, common_tail, either, integer, options, real,
)
from .._boundary.fit_plan import (
    auto_settings, budget_blocks, check_class_weight, check_sample_weight, class_row_weights, jsonable_weights,
    validation_rows,
)
from .._boundary.sparse import take_rows
from . import _distributed
from ._targets import class_index, target_shift, targets
from .._boundary.precision import centre_features, compute_array
from .._boundary.validation import (
    check_class_weights,
    check_gamma,
    check_X,
    seed_from,
)


LOSSES = tuple(SUPERVISED_LOSSES)
CLASSIFICATION_LOSSES = tuple(name for name in LOSSES if name != "squared")


PRECONDITION_DEFAULT = 0.3  # measured on seven data sets: docs/benchmarks.md, "DSG defaults"


def _is_udsg_pattern(v):
    return (isinstance(v, (tuple, list)) and len(v) == 2
            and all(integer(0).type_ok(g) for g in v) and v[0] >= 1 and v[1] >= 0)


# The hyper-parameters of fit, DSGClassifier and DSGRegressor (and the command line), once.
PARAMS = ParamTable(
    Param("loss", "hinge", options(*LOSSES), "hinge / squared_hinge / logistic (classification), squared (regression)"),
    Param("variant", "dsg", options(*_engine.VARIANTS), "dsg: a new block per iteration; udsg, cdsg: reuse old ones"),
    common("kernel"),
    common("gamma"),
    common("features"),
    Param("lam", 1e-6, real(0), "RKHS penalty (lam / 2) ||f||^2"),
    Param("n_iter", "auto", either(options("auto"), integer(1)),
          "iterations (each adds or updates one block); auto: 200 with early stopping, else ~10 passes"),
    Param("batch_size", "auto", either(options("auto"), integer(1)), "rows drawn per iteration; auto: min(4096, n)"),
    Param("early_stopping", "auto", options("auto", True, False),
          "stop when the held-out loss stops improving; auto: with n_iter='auto' and >= 10,000 rows"),
    Param("validation_fraction", 0.1, real(0, 1, low_open=True, high_open=True),
          "fraction of the rows held out for early stopping"),
    Param("n_iter_no_change", "auto", either(options("auto"), integer(1)),
          "early stopping: iterations without improvement before stopping; auto: 10, or a tenth of a pass if longer"),
    Param("tol", 1e-3, real(0), "early stopping: relative improvement of the held-out loss that counts"),
    common("block_size"),
    common("step"),
    common("schedule"),
    common("precondition", default=PRECONDITION_DEFAULT),
    common("average"),
    common("feature_budget"),
    Param("udsg_pattern", (1, 1), Constraint("a pair (G >= 1, U >= 0) of integers", lambda v: True, _is_udsg_pattern,
                                             lambda v: (int(v[0]), int(v[1]))),
          "UDSG's G new blocks then U old ones", estimator=False),
    common("fit_intercept"),
    Param("cache_predictions", "auto", options("auto", True, False),
          "keep f on every training row ('auto': when cheaper)", estimator=False),
    common("class_weight"),
    *common_tail(),
)


@PARAMS.entry
def fit(X, y, sample_weight=None, *, loss, variant, kernel, gamma, features, lam, n_iter, batch_size, early_stopping,
        validation_fraction, n_iter_no_change, tol, block_size, step, schedule, precondition, average,
        feature_budget, udsg_pattern, fit_intercept, cache_predictions, class_weight, random_state, backend, dtype,
        callback, verbose):
    """Fit a kernel machine by doubly stochastic gradients.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        NumPy, CuPy or any array-API array; it stays on its device.
    y : array of shape (n_samples,)
        Class labels (any sortable values) or, for ``loss="squared"``, real targets.
    sample_weight : array of shape (n_samples,), float, or None
        Non-negative row weights (scikit-learn's semantics): the objective's data
        term is the weighted mean loss, so weight ``k`` is the row repeated ``k``
        times and weight 0 the row removed (it is dropped before anything else,
        ``gamma="median"`` and the "auto" rules included). The mini-batches draw rows
        with probability proportional to their weight (:meth:`_engine.Source.draw`:
        the same distribution as drawing from the repeated rows, and the lower
        gradient variance); equal weights give the unweighted fit exactly. The
        held-out rows of early stopping keep their weights (a weighted mean loss).
        Not for dask arrays.
    loss : {"hinge", "squared_hinge", "logistic", "squared"}, default "hinge"
        Hinge losses: binary, or one-vs-rest for more classes; logistic: binary,
        or softmax (multinomial) for more classes; squared: regression.
    variant : {"dsg", "udsg", "cdsg"}, default "dsg"
        Which block each iteration updates (see the module docstring).
    kernel : {"rbf", "laplacian"}, default "rbf"
        ``exp(-gamma ||x - x'||_2^2)`` or ``exp(-gamma ||x - x'||_1)``.
    gamma : "median" or float > 0, default "median"
        Kernel width; "median" is ``1 / median ||x - x'||^2`` on a sample of
        1000 rows (the median trick the paper uses).
    features : {"monte_carlo", "orthogonal", "qmc"}, default "monte_carlo"
        How each block's frequencies are placed (:func:`kbackends.random.omega_block`):
        independent Gaussian draws; orthogonal random features (the block's rows
        orthogonalised in groups of n_features, each with a chi-distributed norm);
        or the seed's scrambled Halton points through the normal inverse CDF. The
        last two approximate the rbf kernel with fewer features and need
        ``kernel="rbf"``; the model regenerates them from ``(seed, block)`` alike.
    lam : float >= 0, default 1e-6
        RKHS penalty ``(lam / 2) ||f||^2``; old blocks shrink by ``1 - step_t * lam``.
    n_iter : int or "auto", default "auto"
        Iterations; each adds or updates one block (at most ``n_iter`` blocks).
        "auto": with early stopping, the larger of 200 and two passes over the rows
        (``ceil(2 n / batch_size)``: every row can be read on large data), a bound the
        held-out loss usually ends first (a ``ConvergenceWarning`` says when it did
        not); else about 10 passes over the rows, ``ceil(10 n / batch_size)``
        clipped to [10, 200] (:func:`algorithms._boundary.fit_plan.auto_settings`).
        The iterations run are the model's ``params["n_iter_done"]`` (the
        estimators' ``n_iter_``).
    batch_size : int or "auto", default "auto"
        Rows drawn (with replacement) per iteration; "auto": ``min(4096, n)``.
    early_stopping : "auto" or bool, default "auto"
        Hold out ``validation_fraction`` of the rows (stratified by class, at most
        50,000) and stop when their mean loss has not improved by ``tol``
        (relative) for ``n_iter_no_change`` iterations; the model is the iterate
        with the best held-out loss (``params["best_iteration"]``; not with
        ``average=True``, which returns the average up to the stop). "auto": on when ``n_iter="auto"`` and there are at least 10,000
        rows (as HistGradientBoostingClassifier): below, holding rows out costs
        more accuracy than it saves; an explicit ``n_iter`` runs that many.
    validation_fraction : float in (0, 1), default 0.1
        Fraction of the rows held out for early stopping.
    n_iter_no_change : int or "auto", default "auto"
        Early stopping: iterations without improvement before the fit stops;
        "auto": 10, or a tenth of a pass over the rows (``ceil(0.1 n / batch_size)``)
        where that is longer, so that on large data the noise of a few batches does
        not end a fit that still gains.
    tol : float >= 0, default 1e-3
        Early stopping: an iteration improves when its held-out loss is below
        ``best * (1 - tol)``.
    block_size : int, default 256
        Random features per block.
    step : float > 0, default 1.0
        theta of the step schedule.
    schedule : {"auto", "theta_over_t", "constant", "inverse_scaling"}, default "auto"
        theta / t (the paper), theta, or theta / (1 + lam * theta * t). "auto" is
        inverse_scaling with preconditioning and theta_over_t without.
    precondition : float > 0 or None, default 0.3
        Relative ridge of the block preconditioner (times the mean feature
        variance); None gives the paper's plain gradient steps. The default was
        chosen on seven real data sets (docs/benchmarks.md, "DSG defaults").
    average : bool, default False
        Return the Polyak average of the iterates instead of the last one.
    feature_budget : "auto", int or None, default "auto"
        At most this many random features (rounded up to whole blocks): once the
        model holds them, each iteration updates an old block instead
        of adding one (UDSG's uniform choice for "dsg" and "udsg", the checking rule
        for "cdsg"), so an iteration's cost stops growing and a pass over the data
        costs O(n). "auto": about a million multiply-adds a row,
        :func:`algorithms._boundary.fit_plan.auto_feature_budget` (~20,000 features
        for 20 dense features, 8,192 to 32,768 in all); None: no limit (the paper's
        DSG, whose iteration cost grows with the iterations).
    udsg_pattern : (int, int), default (1, 1)
        UDSG's (G, U): G iterations with new blocks, then U with old ones.
    fit_intercept : bool, default True
        Learn an unpenalised constant term.
    cache_predictions : "auto" or bool, default "auto"
        Keep ``f`` on every training row (n floats, one pass over X per block
        update) instead of evaluating each mini-batch over all blocks so far
        (batch x blocks per iteration, the paper's way). "auto" picks the
        cheaper for this n, batch size and n_iter.
    random_state : int, numpy Generator or None
        Seeds the random features and the mini-batches; the same value gives the
        same model on every backend.
    backend : {"auto", "cpu", "cuda"} or Backend, default "auto"
    dtype : {"float32", "float64"} or None
        Compute dtype; default float32 whatever X's dtype (as fast as float32
        input, same accuracy: :func:`algorithms._boundary.precision.compute_array`; dense X
        whose float32 cast would round its features' spread away is centred, the model
        keeping the centre);
        "float64" for full float64. Predictions compute in the model's dtype.
    callback : callable or None
        Called after every iteration with a dict (iteration, n_blocks, step,
        block, batch_loss); returning True stops the fit. With a callback the fit
        reads the batch loss on the host every iteration (a synchronisation on cuda).
    verbose : int, default 0
        0: silent; 1: a progress bar on stderr over the iterations, with the batch
        loss every 10 iterations (read a round late, so the bar adds no host
        synchronisation per iteration on a GPU: :mod:`algorithms._engine.progress`).

    Returns
    -------
    RFFModel
    """
    if distributed.is_dask_array(X):  # data-parallel on the current dask.distributed Client
        if sample_weight is not None or class_weight is not None:
            msg = f"`{'sample_weight' if sample_weight is not None else 'class_weight'}` is not supported with dask arrays"
            raise ValueError(msg)
        X = distributed.row_chunked(X, "X")  # chunk sizes known before the plan reads n
        plan = auto_settings(X.shape[0], n_iter=n_iter, batch_size=batch_size, early_stopping=False)
        arguments = {**locals(), "n_iter": _cluster_iterations(n_iter, plan, X.shape[0]),
                     "batch_size": plan.batch_size, "early_stopping": False}
        del arguments["sample_weight"], arguments["plan"]
        return distributed.fit(DISTRIBUTED, **arguments)
    with centre_features():  # in memory: X may be centred (the model keeps the centre)
        return _build(**locals()).solve()


def _cluster_iterations(n_iter, plan, n_rows):
    """The iterations of a dask fit: ``plan``'s, and with ``n_iter="auto"`` at least one pass
    over the rows, every worker drawing a batch an iteration."""
    if n_iter != "auto":
        return plan.n_iter
    return max(plan.n_iter, math.ceil(n_rows / (plan.batch_size * distributed.n_workers())))


def _build(X, y, sample_weight=None, *, loss, variant, kernel, gamma, features, lam, n_iter, batch_size, early_stopping,
          validation_fraction, n_iter_no_change, tol, block_size, step, schedule, precondition, average,
          feature_budget, udsg_pattern, fit_intercept, cache_predictions, class_weight, random_state, backend, dtype,
          callback, verbose):
    """The engine problem of a DSG fit (:func:`fit`'s arguments, validated): the training
    source (and the held-out one of early stopping), the settings, and the model."""
    bk = resolve(backend, resolve_hint(X), y)
    # float32 unless it loses what float64 keeps; centred where the in-memory fit allows it
    X, centre = compute_array(check_X(X, bk, dtype, accept_sparse=True), bk, dtype)
    weights = check_sample_weight(sample_weight, X.shape[0])
    seed = seed_from(random_state)
    shift = target_shift(y) if loss == "squared" else None
    y_matrix, task, classes, source_loss = targets(y, X, bk, loss, shift=shift)
    if class_weight is not None and task == "regression":
        msg = "`class_weight` applies to classification; loss='squared' is regression"
        raise ValueError(msg)
    if task != "regression" and (weights is not None or class_weight is not None):
        index = class_index(y_matrix)
        if class_weight is not None:  # times the sample weights, as scikit-learn combines them
            weights = class_row_weights(check_class_weight(class_weight, classes), classes, index,
                                        np.ones(X.shape[0]) if weights is None else weights)
        check_class_weights(index, weights, classes)
    if weights is not None and not np.all(weights > 0):  # weight 0: the row removed
        kept = np.flatnonzero(weights > 0)
        X, y_matrix, weights = take_rows(X, bk.asarray(kept), bk.xp), bk.xp.take(y_matrix, bk.asarray(kept), axis=0), \
            check_sample_weight(weights[kept], kept.size)
    gamma = check_gamma(gamma, X, bk, seed)
    plan = auto_settings(X.shape[0], n_iter=n_iter, batch_size=batch_size, early_stopping=early_stopping,
                         n_iter_no_change=n_iter_no_change)
    sources = _split_sources(X, y_matrix, weights, source_loss, plan, validation_fraction, seed, bk,
                             stratify=task != "regression")

    settings = _engine.engine_settings(
        locals(), gamma=gamma, seed=seed, variant=variant, udsg_new=udsg_pattern[0], udsg_old=udsg_pattern[1],
        n_outputs=y_matrix.shape[1], cache_predictions=cache_predictions, n_iter=plan.n_iter,
        max_blocks=budget_blocks(feature_budget, X, block_size),
        early_stopping=None if len(sources) == 1 else _engine.EarlyStopping(
            sources[1], n_iter_no_change=plan.n_iter_no_change, tol=tol),
    )
    params = {
        "loss": loss, "variant": variant, "lam": lam, "n_iter": plan.n_iter, "batch_size": plan.batch_size,
        "early_stopping": plan.early_stopping, "validation_fraction": validation_fraction,
        "n_iter_no_change": plan.n_iter_no_change, "tol": tol, "step": step, "schedule": schedule,
        "precondition": precondition,
        "average": bool(average), "feature_budget": feature_budget, "udsg_pattern": list(udsg_pattern),
        "fit_intercept": bool(fit_intercept),
        "class_weight": jsonable_weights(class_weight),
    }

    def finish(result):
        model = RFFModel.from_engine(result, settings, bk, X, algorithm=variant, task=task, classes=classes,
                                     params=params)
        return model if centre is None else dataclasses.replace(model, centre=centre)

    return _engine.Problem(sources[:1], settings, bk, X.dtype, finish, target_shift=shift)


def _split_sources(X, y_matrix, weights, loss, plan, fraction, seed, bk, *, stratify):
    """The training source, and the held-out one when early stopping is on (stratified
    by class; the held-out rows keep their weights). The training source draws from its
    rows of ``X`` in place (no copy of the data); the held-out rows (at most
    ``MAX_VALIDATION_ROWS``) are copied once."""
    if not plan.early_stopping or X.shape[0] < 2:
        return [_engine.Source(X=X, y=y_matrix, loss=loss, weight=1.0, batch_size=plan.batch_size,
                               sample_weight=weights)]
    xp = bk.xp
    train, held = validation_rows(X.shape[0], fraction, seed, class_index(y_matrix) if stratify else None)
    w_train, w_held = (None, None) if weights is None else (
        check_sample_weight(weights[train], train.size), check_sample_weight(weights[held], held.size))
    index = bk.asarray(held)
    return [
        _engine.Source(X=X, y=y_matrix, loss=loss, weight=1.0, batch_size=plan.batch_size, sample_weight=w_train,
                       rows=train),
        _engine.Source(X=take_rows(X, index, xp), y=xp.take(y_matrix, index, axis=0), loss=loss, weight=1.0,
                       batch_size=plan.batch_size, sample_weight=w_held),
    ]


def decision_function(model, X, *, backend="auto"):
    """Decision values of ``X``: shape (n_samples,) for binary and regression,
    (n_samples, n_classes) for more classes; on ``X``'s backend. The same as
    ``model.decision_function(X, backend=backend)`` (:meth:`RFFModel.decision_function`)."""
    return model.decision_function(X, backend=backend)


def predict(model, X, *, backend="auto"):
    """Predicted labels (classification) or values (regression) for ``X``; the same as
    ``model.predict(X, backend=backend)``."""
    return model.predict(X, backend=backend)


def objective(model, X, y, *, backend="auto"):
    """Training objective of ``model`` on (X, y): mean loss + (lam/2) * (M/2) ||coef||^2.

    The penalty is the squared norm of the random-feature model with features
    ``sqrt(2/M) cos(...)`` (M = n_blocks * block_size), i.e. the RKHS norm of the
    finite expansion the model is.
    """
    bk = resolve(backend, resolve_hint(X), y)
    X = check_X(X, bk, model.dtype, accept_sparse=True)
    xp = bk.xp
    loss = model.params["loss"]
    y_matrix, _, _, src_loss = targets(y, X, bk, loss, classes=model.classes)
    f = model.raw_decision(X, bk)
    data = float(xp.mean(xp.sum(src_loss.value(f, y_matrix, xp), axis=1)))
    coef = bk.asarray(model.coef)
    m = model.n_blocks * model.block_size
    penalty = 0.5 * model.params["lam"] * (m / 2.0) * float(xp.sum(coef * coef))
    return data + penalty


# The problem a fit runs, for a runner of one's own (checked like fit).
build = PARAMS.entry(_build)

# How DSG trains on dask arrays (algorithms.distributed): its problem, its rows.
DISTRIBUTED = distributed.Plan(name="dsg", params=PARAMS, build=_build, prepare=_distributed.prepare,
                               rows=_distributed.rows)
