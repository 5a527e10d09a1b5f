"""DSGClassifier and DSGRegressor: the scikit-learn estimators over :func:`algorithms.dsg.fit`."""

from __future__ import annotations

import functools

import numpy as np
from sklearn.base import RegressorMixin

from .. import _engine, distributed
from .._boundary.params import ParamTable, options
from .._boundary.precision import centre_features
from .._boundary.validation import check_labels
from .._models.calibration import with_probability
from .._models.estimator import (
    DOC_ENTRIES, N_JOBS, WARM_START, FunctionalClassifier, FunctionalEstimator, WeightedFit, with_estimator_params,
)
from ._fit import CLASSIFICATION_LOSSES, DISTRIBUTED, PARAMS, build, decision_function, fit, predict


# The Parameters entries of the DSG estimators' docstrings: the shared ones (DOC_ENTRIES) and
# DSG's own, written once for DSGClassifier and DSGRegressor.
_DOC_ENTRIES = {
    **DOC_ENTRIES,
    "variant": ("{'dsg', 'udsg', 'cdsg'}", ("'dsg': a new block of random features per iteration; 'udsg' "
                                            "(G new blocks, then U updates of old ones) and 'cdsg' (an old "
                                            "block updated when the checking rule says so) reuse old ones.")),
    "lam": ("float", "RKHS penalty (lam / 2) ||f||^2."),
    "n_iter": ("'auto' or int", ("Iterations (each adds or updates one block); 'auto': with early "
                                 "stopping, the larger of 200 and two passes over the rows, else ~10 passes "
                                 "clipped to [10, 200].")),
    "batch_size": ("'auto' or int", "Rows drawn per iteration; 'auto': min(4096, n)."),
    "early_stopping": ("'auto' or bool", ("Stop when the held-out loss stops improving; 'auto': with "
                                          "n_iter='auto' and >= 10,000 rows.")),
    "validation_fraction": ("float", "Fraction of the rows held out for early stopping."),
    "n_iter_no_change": ("'auto' or int", ("Early stopping: iterations without improvement before stopping; "
                                           "'auto': 10, or a tenth of a pass over the rows if longer.")),
    "tol": ("float", "Early stopping: relative improvement of the held-out loss that counts."),
}


class _DSGFit(WeightedFit):
    """``partial_fit`` of the DSG estimators (``fit`` with ``sample_weight``: :class:`WeightedFit`)."""

    _doc_entries = _DOC_ENTRIES

    def partial_fit(self, X, y, classes=None):
        """Continue the fit on one batch of rows (for data streamed by your own loader).

        Each call runs ``ceil(len(X) / batch_size)`` iterations sampling from this
        batch, resuming the step schedule, the blocks and the coefficients where the
        last call left them; ``classes`` (classifiers) and ``gamma="median"`` are
        fixed by the first call. ``n_iter`` is not used.
        """
        distributed.partial_fit(self, X, y, DISTRIBUTED, classes=classes)
        self.n_iter_ = int(self.model_.params["n_iter_done"])
        return self


    def _module_fit(self, values):
        if not values["warm_start"]:
            return super()._module_fit(values)
        if values.get("probability"):
            msg = "`warm_start=True` continues one model; `probability=True` fits a calibrated one: choose one"
            raise ValueError(msg)
        return functools.partial(_warm_fit, self)


def _warm_fit(estimator, X, y, sample_weight=None, **params):
    """``fit`` with ``warm_start=True``: the engine resumed from the previous fit's state
    (its blocks, step schedule and draws) up to ``n_iter`` iterations in all, new blocks up
    to the feature budget, then the variant's rule. The seed and the kernel width are the
    first fit's, and so is its centre where it centred X (``precision.centre_features``). Every
    fit of a warm-started estimator evaluates each batch over the
    blocks (no prediction cache), the state it resumes from keeps no per-row values."""
    if distributed.is_dask_array(X):
        msg = "`warm_start=True` is not supported with dask arrays"
        raise ValueError(msg)
    previous = getattr(estimator, "_warm_", None)
    if previous is not None and previous["model"] is not getattr(estimator, "model_", None):
        previous = None  # a partial_fit (or a clone's attributes) since: start over
    if previous is not None:
        params = {**params, "random_state": previous["seed"], "gamma": previous["gamma"]}
    # The first fit may centre X (the model keeps the centre); the later ones cast their rows
    # alike: on the first fit's centre, or not centred where it was not.
    centring = centre_features() if previous is None else centre_features(
        previous["centre"] is not None, centre=previous["centre"])
    with centring:
        problem = build.unchecked(X, y, sample_weight, **{**params, "cache_predictions": False})
    settings, state = problem.settings, None
    if previous is not None:
        _check_continues(previous, problem, params, y)
        state = previous["state"]
        if state.t == settings.n_iter:  # nothing left to run (scikit-learn's warm_start does not refit)
            return estimator.model_
    result = _engine.run(problem.sources, problem.backend, settings, problem.dtype, resume=state)
    model = problem.finish(_engine.unshift(result, problem.target_shift))
    estimator._warm_ = {"state": result.state, "model": model, "seed": settings.seed, "gamma": settings.gamma,
                        "centre": model.centre, "key": _continuation_key(problem, params, y)}
    return model


def _continuation_key(problem, params, y):
    """What a continued fit must share with the previous one (the classes too: a fit with
    nothing left to run returns the previous model, whose labels these must be)."""
    s = problem.settings
    classes = None if params["loss"] == "squared" else np.unique(check_labels(y, None)).tolist()
    return {"features": problem.sources[0].X.shape[1], "outputs": s.n_outputs, "loss": params["loss"],
            "classes": classes,
            "variant": s.variant, "kernel": s.kernel, "block_size": s.block_size, "dtype": str(problem.dtype),
            "backend": problem.backend.name}


def _check_continues(previous, problem, params, y):
    key = _continuation_key(problem, params, y)
    changed = [f"{name} {previous['key'][name]!r} -> {value!r}" for name, value in key.items()
               if previous["key"][name] != value]
    if changed:
        msg = f"`warm_start=True` continues the previous fit, which differs: {', '.join(changed)}; set warm_start=False"
        raise ValueError(msg)
    done, n_iter = previous["state"].t, problem.settings.n_iter
    if n_iter < done:
        msg = (f"`n_iter`={n_iter} must be at least the {done} iterations the previous fit ran when warm_start=True "
               "(n_iter counts every iteration, the previous fits' included)")
        raise ValueError(msg)


class DSGClassifier(_DSGFit, FunctionalClassifier):
    """Kernel classifier by doubly stochastic gradients (DSG / UDSG / CDSG).

    The parameters are those of :func:`algorithms.dsg.fit` that a model keeps (the
    classification losses only), and ``probability``. Accepts NumPy, CuPy, scipy.sparse
    or cupyx.scipy.sparse ``X``; outputs follow the input's namespace.

    Parameters
    ----------
    loss : {'hinge', 'squared_hinge', 'logistic'}, default='hinge'
        The classification loss; "logistic" gives ``predict_proba`` (log-odds decision values).
    <parameters variant to n_jobs>

    Attributes
    ----------
    model_ : RFFModel
        The fitted model: the coefficients of its blocks of random features (``model_.save``
        writes it, :func:`algorithms.load` reads it back).
    classes_ : ndarray of shape (n_classes,)
        The labels, sorted.
    n_features_in_ : int
    n_iter_ : int
        Iterations run (early stopping may end the fit before ``n_iter``).

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from algorithms import DSGClassifier
    >>> X, y = load_digits(return_X_y=True)
    >>> clf = DSGClassifier(n_iter=40, batch_size=512, gamma=0.02, random_state=0).fit(X / 16, y)
    >>> clf.score(X / 16, y) > 0.95
    True
    """

    # A classifier's losses only: squared-loss predictions are values, not labels; and
    # `probability` (predict_proba for every loss: algorithms._models.calibration).
    _params = with_estimator_params(with_probability(PARAMS.replace(loss={"constraint": options(*CLASSIFICATION_LOSSES)})),
                                    WARM_START, N_JOBS)
    _accept_sparse = True  # scipy.sparse X; cupyx.scipy.sparse on cuda: docs/architecture.md, RFF ops
    _fit = staticmethod(fit)
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)

    def __init__(self, *, loss="hinge", variant="dsg", kernel="rbf", gamma="median", features="monte_carlo",
                 lam=1e-6, n_iter="auto", batch_size="auto", early_stopping="auto", validation_fraction=0.1,
                 n_iter_no_change="auto",
                 tol=1e-3, block_size=256, step=1.0, schedule="auto", precondition=0.3, average=False,
                 feature_budget="auto", fit_intercept=True, class_weight=None,
                 random_state=None, backend="auto", dtype=None, verbose=0,
                 probability=False, warm_start=False, n_jobs=None):
        self._store_params(locals())


class DSGRegressor(_DSGFit, RegressorMixin, FunctionalEstimator):
    """Kernel ridge-style regression by doubly stochastic gradients (squared loss).

    The parameters are those of :func:`algorithms.dsg.fit` that a model keeps, with
    ``loss="squared"`` (the only regression loss).

    Parameters
    ----------
    loss : 'squared', default='squared'
        The regression loss (the only one).
    <parameters variant to n_jobs>

    Attributes
    ----------
    model_ : RFFModel
    n_features_in_ : int
    n_iter_ : int
        Iterations run (early stopping may end the fit before ``n_iter``).
    """

    # the regression loss only, and no class weights
    _params = ParamTable(*(p for p in PARAMS.replace(loss={"default": "squared", "constraint": options("squared")}).params
                           if p.name != "class_weight"), WARM_START, N_JOBS)
    _accept_sparse = True  # scipy.sparse X; cupyx.scipy.sparse on cuda: docs/architecture.md, RFF ops
    _fit = staticmethod(fit)
    _predict = staticmethod(predict)

    def __init__(self, *, loss="squared", variant="dsg", kernel="rbf", gamma="median", features="monte_carlo",
                 lam=1e-6, n_iter="auto", batch_size="auto", early_stopping="auto", validation_fraction=0.1,
                 n_iter_no_change="auto",
                 tol=1e-3, block_size=256, step=1.0, schedule="auto", precondition=0.3, average=False,
                 feature_budget="auto", fit_intercept=True, random_state=None, backend="auto", dtype=None, verbose=0,
                 warm_start=False, n_jobs=None):
        self._store_params(locals())
