"""DSG, UDSG and CDSG: kernel machines by doubly stochastic functional gradients.

Dai et al. (2014) as restated by Li & Poczos, "Utilize Old Coordinates: Faster
Doubly Stochastic Gradients for Kernel Methods" (UAI 2016): Algorithm 1 (DSG),
Algorithm 3 (UDSG: ``G`` new blocks, then ``U`` updates of old blocks drawn
uniformly), Algorithm 4 (CDSG: an old block is updated instead of adding one
when it passes the checking rule (8), with the step of the expected line
search (9)). Each iteration adds (or updates) a *block* of ``block_size``
random features, regenerated from ``(seed, block)`` whenever needed, so the
model is stored as coefficients only.

Beyond the paper, on by default and switchable off (``precondition=None``):
each block step is preconditioned by the mini-batch covariance of the block's
features plus a ridge (a Gauss-Newton step on the block, as the DSG authors'
own code does), which makes every block count and is what lets DSG match
random-feature SGD on real data in the same time.

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import load_breast_cancer
>>> from algorithms import dsg
>>> X, y = load_breast_cancer(return_X_y=True)
>>> X = (X - X.mean(0)) / X.std(0)
>>> model = dsg.fit(X, y, n_iter=30, batch_size=256, random_state=0)
>>> float((dsg.predict(model, X) == y).mean()) > 0.95
True
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.metaestimators import available_if

from kbackends import resolve
from kbackends.random import KERNELS

from . import _engine, distributed
from ._losses import SOFTMAX, SUPERVISED_LOSSES
from .distributed import is_dask_array, map_rows
from ._model import RFFModel
from ._validation import (
    check_choice,
    check_gamma,
    check_n_features,
    check_nonneg_float,
    check_positive_int,
    check_X,
    check_y_length,
    encode_classes,
    is_numpy_like,
    sklearn_validate,
    seed_from,
)

__all__ = ["fit", "decision_function", "predict", "objective", "DSGClassifier", "DSGRegressor"]

LOSSES = tuple(SUPERVISED_LOSSES)


def fit(
    X,
    y,
    *,
    loss="hinge",
    variant="dsg",
    kernel="rbf",
    gamma="median",
    lam=1e-6,
    n_iter=200,
    batch_size=4096,
    block_size=256,
    step=1.0,
    schedule="auto",
    precondition=0.1,
    average=False,
    udsg_pattern=(1, 1),
    fit_intercept=True,
    cache_predictions="auto",
    random_state=None,
    backend="auto",
    dtype=None,
    callback=None,
):
    """Fit a kernel machine by doubly stochastic gradients.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        NumPy, CuPy or any array-API array; it stays on its device.
    y : array of shape (n_samples,)
        Class labels (any sortable values) or, for ``loss="squared"``, real targets.
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
    lam : float >= 0, default 1e-6
        RKHS penalty ``(lam / 2) ||f||^2``; old blocks shrink by ``1 - step_t * lam``.
    n_iter : int, default 200
        Iterations; each adds or updates one block (at most ``n_iter`` blocks).
    batch_size : int, default 4096
        Rows drawn (with replacement) per iteration.
    block_size : int, default 256
        Random features per block.
    step : float > 0, default 1.0
        theta of the step schedule.
    schedule : {"auto", "theta_over_t", "constant", "inverse_scaling"}, default "auto"
        theta / t (the paper), theta, or theta / (1 + lam * theta * t). "auto" is
        inverse_scaling with preconditioning and theta_over_t without.
    precondition : float > 0 or None, default 0.1
        Relative ridge of the block preconditioner (times the mean feature
        variance); None gives the paper's plain gradient steps.
    average : bool, default False
        Return the Polyak average of the iterates instead of the last one.
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
        Compute dtype; default keeps float32/float64 X, else float64 on cpu and
        float32 on cuda.
    callback : callable or None
        Called after every iteration with a dict (iteration, n_blocks, step,
        block, batch_loss); returning True stops the fit.

    Returns
    -------
    RFFModel
    """
    if distributed.is_dask_array(X):  # data-parallel on the current dask.distributed Client
        return distributed.fit(fit, "dsg", **locals())
    bk = resolve(backend, X, y)
    X = check_X(X, bk, dtype)
    check_choice("loss", loss, LOSSES)
    check_choice("variant", variant, _engine.VARIANTS)
    check_choice("kernel", kernel, KERNELS)
    check_choice("schedule", schedule, _engine.SCHEDULES)
    n_iter = check_positive_int("n_iter", n_iter)
    batch_size = check_positive_int("batch_size", batch_size)
    block_size = check_positive_int("block_size", block_size)
    lam = check_nonneg_float("lam", lam)
    step = check_nonneg_float("step", step, positive=True)
    if precondition is not None:
        precondition = check_nonneg_float("precondition", precondition, positive=True)
    if (
        not isinstance(udsg_pattern, (tuple, list))
        or len(udsg_pattern) != 2
        or check_positive_int("udsg_pattern[0]", udsg_pattern[0]) < 1
        or check_positive_int("udsg_pattern[1]", udsg_pattern[1], minimum=0) < 0
    ):
        msg = f"`udsg_pattern` must be a pair (G >= 1, U >= 0), got {udsg_pattern!r}"
        raise ValueError(msg)
    if cache_predictions not in ("auto", True, False):
        msg = f"`cache_predictions` must be 'auto', True or False, got {cache_predictions!r}"
        raise ValueError(msg)
    if callback is not None and not callable(callback):
        msg = f"`callback` must be callable or None, got {type(callback).__name__}"
        raise TypeError(msg)

    seed = seed_from(random_state)
    gamma = check_gamma(gamma, X, bk, seed)
    y_matrix, task, classes, source_loss = _targets(y, X, bk, loss)

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
        variant=variant,
        udsg_new=int(udsg_pattern[0]),
        udsg_old=int(udsg_pattern[1]),
        average=bool(average),
        fit_intercept=bool(fit_intercept),
        n_outputs=y_matrix.shape[1],
        callback=callback,
        cache_predictions=cache_predictions,
        sampling_seed=seed ^ 0x5DEECE66D,
    )
    source = _engine.Source(X=X, y=y_matrix, loss=source_loss, weight=1.0, batch_size=batch_size)
    result = _engine.run([source], bk, settings, X.dtype)
    params = {
        "loss": loss, "variant": variant, "lam": lam, "n_iter": n_iter, "batch_size": batch_size,
        "step": step, "schedule": schedule, "precondition": precondition, "average": bool(average),
        "udsg_pattern": list(udsg_pattern), "fit_intercept": bool(fit_intercept),
    }
    return RFFModel.from_engine(
        result, settings, bk, X, algorithm=variant, task=task, classes=classes, params=params
    )


def _targets(y, X, bk, loss):
    """Loss targets as an (n, n_outputs) matrix, the task, the classes and the loss."""
    xp = bk.xp
    if y is None:
        msg = "`y` is required, got None"
        raise ValueError(msg)
    if loss == "squared":
        y = bk.asarray(y if hasattr(y, "__array_namespace__") or isinstance(y, np.ndarray) else np.asarray(y))
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        check_y_length(y, X)
        y = xp.astype(y, X.dtype)
        if not bool(xp.all(xp.isfinite(y))):
            msg = "`y` contains NaN or infinite values"
            raise ValueError(msg)
        return xp.reshape(y, (-1, 1)), "regression", None, SUPERVISED_LOSSES["squared"]
    classes, index = encode_classes(y, bk)
    check_y_length(index, X)
    n_classes = classes.size
    if n_classes == 2:
        y_pm = 2.0 * xp.astype(index == 1, X.dtype) - 1.0
        return xp.reshape(y_pm, (-1, 1)), "binary", classes, SUPERVISED_LOSSES[loss]
    one_hot = index[:, None] == xp.arange(n_classes, device=getattr(index, "device", None))[None, :]
    if loss == "logistic":
        return xp.astype(one_hot, X.dtype), "softmax", classes, SOFTMAX
    return 2.0 * xp.astype(one_hot, X.dtype) - 1.0, "ovr", classes, SUPERVISED_LOSSES[loss]


def decision_function(model, X, *, backend="auto"):
    """Decision values of ``X``: shape (n_samples,) for binary and regression,
    (n_samples, n_classes) for more classes; on ``X``'s backend."""
    if is_dask_array(X):  # lazily, chunk by chunk: a dask array out
        return map_rows(decision_function, X, model)
    bk = resolve(backend, X)
    X = check_X(X, bk, model.dtype if not hasattr(X, "dtype") else None)
    check_n_features(X, model.n_features_in)
    f = model.raw_decision(X, bk)
    return f[:, 0] if f.shape[1] == 1 else f


def predict(model, X, *, backend="auto"):
    """Predicted labels (classification) or values (regression) for ``X``."""
    if is_dask_array(X):
        return map_rows(predict, X, model)
    bk = resolve(backend, X)
    f = decision_function(model, X, backend=bk)
    xp = bk.xp
    if model.task == "regression":
        return f
    classes = bk.asarray(np.asarray(model.classes))
    index = xp.astype(f > 0, xp.int64) if model.task == "binary" else xp.argmax(f, axis=1)
    return xp.take(classes, index, axis=0)


def objective(model, X, y, *, backend="auto"):
    """Training objective of ``model`` on (X, y): mean loss + (lam/2) * (M/2) ||coef||^2.

    The penalty is the squared norm of the random-feature model with features
    ``sqrt(2/M) cos(...)`` (M = n_blocks * block_size), i.e. the RKHS norm of the
    finite expansion the model is.
    """
    bk = resolve(backend, X, y)
    X = check_X(X, bk, None)
    xp = bk.xp
    loss = model.params["loss"]
    y_matrix, _, _, src_loss = _targets(y, X, bk, loss)
    f = model.raw_decision(X, bk)
    data = float(xp.mean(xp.sum(src_loss.value(f, y_matrix, xp), axis=1)))
    coef = bk.asarray(model.coef)
    m = model.n_blocks * model.block_size
    penalty = 0.5 * model.params["lam"] * (m / 2.0) * float(xp.sum(coef * coef))
    return data + penalty


class _DSGEstimator(BaseEstimator):
    """Shared scikit-learn plumbing of DSGClassifier and DSGRegressor."""

    _loss_default = "hinge"

    def __init__(
        self,
        *,
        loss=None,
        variant="dsg",
        kernel="rbf",
        gamma="median",
        lam=1e-6,
        n_iter=200,
        batch_size=4096,
        block_size=256,
        step=1.0,
        schedule="auto",
        precondition=0.1,
        average=False,
        fit_intercept=True,
        random_state=None,
        backend="auto",
        dtype=None,
    ):
        self.loss = loss
        self.variant = variant
        self.kernel = kernel
        self.gamma = gamma
        self.lam = lam
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.block_size = block_size
        self.step = step
        self.schedule = schedule
        self.precondition = precondition
        self.average = average
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.backend = backend
        self.dtype = dtype

    def _fit_params(self):
        return {
            "loss": self.loss or self._loss_default,
            "variant": self.variant,
            "kernel": self.kernel,
            "gamma": self.gamma,
            "lam": self.lam,
            "n_iter": self.n_iter,
            "batch_size": self.batch_size,
            "block_size": self.block_size,
            "step": self.step,
            "schedule": self.schedule,
            "precondition": self.precondition,
            "average": self.average,
            "fit_intercept": self.fit_intercept,
            "random_state": self.random_state,
            "backend": self.backend,
            "dtype": self.dtype,
        }

    def fit(self, X, y):
        """Fit on (X, y); X may be a CuPy array (the model then lives on the GPU)."""
        if y is None:
            msg = f"{type(self).__name__} requires y to be passed, but the target y is None"
            raise ValueError(msg)
        if is_dask_array(X):  # the data stay on the cluster: fit validates them there
            self.model_ = fit(X, y, **self._fit_params())
            self.n_features_in_ = self.model_.n_features_in
            return self
        X, y = sklearn_validate(self, X, y, reset=True)
        self.model_ = fit(X, y, **self._fit_params())
        self.n_features_in_ = self.model_.n_features_in
        return self

    def _decision(self, X):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "model_")
        if is_dask_array(X):
            return decision_function(self.model_, X)
        X = sklearn_validate(self, X, None, reset=False)
        return decision_function(self.model_, X)

    def predict(self, X):
        """Predicted labels or values; CuPy in, CuPy out."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "model_")
        if is_dask_array(X):
            return predict(self.model_, X)
        X = sklearn_validate(self, X, None, reset=False)
        return predict(self.model_, X)

    def partial_fit(self, X, y, classes=None):
        """Continue the fit on one batch of rows (for data streamed by your own loader).

        Each call runs ``ceil(len(X) / batch_size)`` iterations sampling from this
        batch, resuming the step schedule, the blocks and the coefficients where the
        last call left them; ``classes`` (classifiers) and ``gamma="median"`` are
        fixed by the first call. ``n_iter`` is not used.
        """
        return distributed.partial_fit(self, X, y, classes=classes)


class DSGClassifier(ClassifierMixin, _DSGEstimator):
    """Kernel classifier by doubly stochastic gradients (DSG / UDSG / CDSG).

    Parameters are those of :func:`algorithms.dsg.fit` (``loss`` defaults to
    "hinge"; "logistic" gives ``predict_proba``). Accepts NumPy or CuPy ``X``;
    outputs follow the input's namespace.

    Attributes
    ----------
    model_ : RFFModel
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from algorithms import DSGClassifier
    >>> X, y = load_digits(return_X_y=True)
    >>> clf = DSGClassifier(n_iter=40, batch_size=512, gamma=0.02, random_state=0).fit(X / 16, y)
    >>> clf.score(X / 16, y) > 0.95
    True
    """

    def fit(self, X, y):
        from sklearn.utils.multiclass import check_classification_targets

        if is_numpy_like(y) and not is_dask_array(X):
            check_classification_targets(y)
        super().fit(X, y)
        self.classes_ = np.asarray(self.model_.classes)
        return self

    def decision_function(self, X):
        """Decision values: (n_samples,) for two classes, else (n_samples, n_classes)."""
        return self._decision(X)

    @available_if(lambda self: self.loss == "logistic")
    def predict_proba(self, X):
        """Class probabilities (``loss="logistic"`` only)."""
        if is_dask_array(X):
            return map_rows(self.predict_proba, X)
        f = self.decision_function(X)
        xp = resolve("auto", f).xp
        if f.ndim == 1:
            p = 1.0 / (1.0 + xp.exp(-f))
            return xp.stack((1.0 - p, p), axis=1)
        e = xp.exp(f - xp.max(f, axis=1, keepdims=True))
        return e / xp.sum(e, axis=1, keepdims=True)


class DSGRegressor(RegressorMixin, _DSGEstimator):
    """Kernel ridge-style regression by doubly stochastic gradients (squared loss).

    Parameters are those of :func:`algorithms.dsg.fit`; ``loss`` is "squared".

    Attributes
    ----------
    model_ : RFFModel
    n_features_in_ : int
    """

    _loss_default = "squared"
