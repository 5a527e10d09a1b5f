"""``partial_fit``: the engine streamed over the user's batches."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from kbackends import is_array, resolve, to_numpy

from .. import _engine
from .._boundary.fit_plan import MAX_BATCH
from .._boundary.precision import centre_features, centred_cast, compute_array
from .._boundary.validation import check_gamma, check_X, seed_from
from ._common import is_dask_array
from ._driver import _dtype_name
from ._worker import _Spec


def partial_fit(estimator, X, y, plan, classes=None):
    """One pass of the engine over the batch ``(X, y)``, continuing the estimator's fit.

    The first call fixes the classes (``classes``, or those of ``y``; a later batch
    may hold any subset of them), the kernel width (``gamma="median"``: from the
    first batch) and the seed; every call runs ``ceil(len(X) / batch_size)``
    iterations sampling from the batch, resuming the engine state (step schedule,
    blocks, scale factor) where the last call left it. ``n_iter`` is not used.
    ``model_`` is the ordinary RFFModel after every call. ``plan`` is the algorithm's
    :class:`~algorithms.distributed.Plan` (its problem builder and rows; DSG's).
    """
    if is_dask_array(X):
        X = X.compute()
        y = y.compute() if is_dask_array(y) else y
    bk = resolve(estimator.backend, X, y)
    X = check_X(X, bk, estimator.dtype)
    y_host = to_numpy(y) if is_array(y) else np.asarray(y)
    if y_host.shape[0] != X.shape[0]:
        msg = f"`y` has {y_host.shape[0]} rows but `X` has {X.shape[0]}"
        raise ValueError(msg)
    params = estimator._function_params()  # not `probability` (partial_fit does not calibrate)
    if params.get("class_weight") is not None:  # per-class weights need every batch's classes at once
        msg = "`class_weight` is not supported by partial_fit: give the rows' weights to fit, or fit on all rows"
        raise ValueError(msg)
    partial = getattr(estimator, "_partial_", None)
    # A fit() since the last partial_fit replaced the model: start over, as scikit-learn does.
    first = partial is None or partial.get("model") is not getattr(estimator, "model_", None)
    if first:  # (X comes back in the compute dtype, centred where the first call centres)
        estimator._partial_, X = _first_call(X, y_host, bk, params, classes, plan)
    partial = estimator._partial_
    spec, state = partial["spec"], partial["state"]
    centre = partial["centre"]  # every later call's rows cast as the first's: on its centre, or in its dtype
    if not first and centre is not None and X.shape[1] == len(centre):
        X = centred_cast(X, centre, bk.xp, getattr(bk.xp, spec.dtype))
    X = bk.xp.astype(X, getattr(bk.xp, spec.dtype))
    if X.shape[1] != partial["template"].n_features_in:
        msg = (f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
               f"{partial['template'].n_features_in} features as input (`X` of the first partial_fit)")
        raise ValueError(msg)
    if spec.context["classes"] is not None:
        unknown = np.setdiff1d(np.unique(y_host), spec.context["classes"])
        if unknown.size:
            msg = f"`y` holds classes {unknown.tolist()} that the first call did not declare"
            raise ValueError(msg)
    ((Xb, y_matrix),) = spec.builder([[X, y_host]], spec.context, bk, spec.dtype)
    src_loss, weight, batch_size, curvature = spec.templates[0]
    source = _engine.Source(X=Xb, y=y_matrix, loss=src_loss, weight=weight, batch_size=batch_size,
                            curvature=curvature)
    stop = state.t + max(1, math.ceil(X.shape[0] / batch_size))
    settings = dataclasses.replace(spec.settings, n_iter=stop)
    result = _engine.run([source], bk, settings, Xb.dtype, resume=state)
    partial["state"] = result.state
    result = _engine.unshift(result, spec.context["shift"])
    template = partial["template"]
    estimator.model_ = dataclasses.replace(
        template, coef=result.coef, intercept=result.intercept, n_blocks=result.n_blocks,
        params={**template.params, "n_iter_done": result.n_iter_done}, backend=bk.name,
    )
    partial["model"] = estimator.model_
    estimator.n_features_in_ = template.n_features_in
    if spec.context["classes"] is not None:
        estimator.classes_ = np.asarray(spec.context["classes"])
    return estimator


def _first_call(X, y_host, bk, params, classes, plan):
    """What the first call fixes: the classes, the seed, the width, the regression targets'
    standardisation, the centre (where float32's cast would round the first batch's spread
    away: :func:`algorithms._boundary.precision.centre_features`), the engine's settings and
    an empty state (and X in the compute dtype); the problem is built by the algorithm's
    own builder on a few rows that carry the classes."""
    loss = params["loss"]
    if loss != "squared":
        classes = np.unique(y_host) if classes is None else np.unique(np.asarray(classes))
        if classes.size < 2:
            msg = f"`classes` must hold at least 2 classes on the first call, got {classes.tolist()}"
            raise ValueError(msg)
    seed = seed_from(params["random_state"])
    with centre_features():  # the first batch decides the compute dtype and the centre
        X, centre = compute_array(X, bk, params["dtype"])
    shift = None  # regression targets standardised as the first batch's (Problem.target_shift)
    if loss == "squared":
        y_float = y_host.astype(np.float64)
        shift = (float(y_float.mean()), float(y_float.std()) or 1.0)
    tiny_y = classes if loss != "squared" else y_host[:1]
    tiny_X = X[: tiny_y.shape[0]] if X.shape[0] >= tiny_y.shape[0] else _repeat_rows(X, tiny_y.shape[0], bk)
    arguments = plan.params.validate({
        **params, "random_state": seed, "cache_predictions": False,
        # "auto" sizes the batch from these tiny rows: not here
        "batch_size": MAX_BATCH if params["batch_size"] == "auto" else params["batch_size"],
        "dtype": _dtype_name(bk, X.dtype), "gamma": check_gamma(params["gamma"], X, bk, seed)})
    problem = plan.build(tiny_X, tiny_y, **arguments)
    dtype = problem.dtype
    template = dataclasses.replace(problem.finish(_engine.EngineResult(
        coef=bk.xp.zeros((0, problem.settings.n_outputs), dtype=dtype),
        intercept=bk.xp.zeros((problem.settings.n_outputs,), dtype=dtype), n_blocks=0, n_iter_done=0)),
        centre=centre)
    settings = dataclasses.replace(problem.settings, callback=None)
    src = problem.sources[0]
    spec = _Spec(templates=[(src.loss, src.weight, src.batch_size, src.curvature)], settings=settings,
                 dtype=_dtype_name(bk, dtype), builder=plan.rows,
                 context={"classes": classes if loss != "squared" else None, "loss": loss, "shift": shift},
                 capacity_blocks=0)
    state = _engine.EngineState(
        stored=bk.xp.zeros((0, settings.n_outputs), dtype=dtype), n_blocks=0, scale=1.0,
        intercept=bk.xp.zeros((settings.n_outputs,), dtype=dtype), beta=np.zeros(0),
        averager=_engine.Averager(bk.xp, (0, settings.n_outputs), dtype) if settings.average else None,
        intercept_sum=bk.xp.zeros((settings.n_outputs,), dtype=dtype),
        rng=np.random.default_rng(settings.sampling_seed), t=0,
    )
    return {"spec": spec, "state": state, "template": template, "centre": centre}, X


def _repeat_rows(X, n, bk):
    rows = bk.asarray(np.arange(n) % X.shape[0])
    return bk.xp.take(X, rows, axis=0)
