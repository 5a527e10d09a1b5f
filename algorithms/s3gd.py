"""S3GD: semi-stochastic gradient descent with sparse anchor propagation (linear models).

Wang, Sun, Sun, Li (S3GD), Algorithms 1 and 2. The objective is

    F(w) = (1/n) sum_i c_i psi(w . x_i; y_i) + R(w),

x_i with a constant 1 appended (its weight is the intercept, regularised like
the others, as in the paper), c_i the class weights (1, or Eq. (46)'s balance),
R one of ``lam ||w||^2`` (l2), ``lam ||w||_1`` (l1),
``lam (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2)`` (elasticnet).

S3GD (Algorithm 1): per outer loop, the snapshot w~ and the approximate full
gradient H(w~) of Eq. (22); per inner step on a mini-batch I,
``g = grad psi_I(w) - [grad h_I(w~) - H(w~)]`` (Eq. 8) and a proximal step.
The surrogate h_i (Eq. 19) propagates the loss derivatives of m anchors
(k-means centers snapped to samples, Eq. 13) to each sample through its k
nearest anchors with the Gaussian weights of Eq. (14) (``kbackends.ops``'s
anchor ops). The label coupling of Section 2.4 is handled by splitting by class:
anchor derivatives are taken for y = -1 and y = +1, and the precomputed
products (X M) of Eq. (22) are one per class, so H is two (d x m) products;
for the logistic loss this is exactly the paper's "case 1 / case 2" (rows of
M sum to 1, so the y = -1 product absorbs the ``(1/n) sum_{y=-1} x_i`` term).

``method="svrg"`` (prox-SVRG: exact full gradient per outer loop) and
``method="sgd"`` (prox-SGD) run through the same compiled loop, the same
sampling and the same prox, so their times compare fairly.

Engines: on ``cpu`` the whole run of outer loops between two checkpoints is one
Numba call (``kbackends/kernels/prox_sgd/_numba.py``); other backends
(array-api-strict, CuPy) run the array-API reference (``_xp.py``), one array op
per step.
"""

from __future__ import annotations

import math
import time

import numpy as np

from kbackends import get_kernel, ops, resolve, sync_free, to_numpy
from kbackends.losses import PSI_CODES, dpsi, psi

from ._estimator import FunctionalClassifier
from ._finite import check_finite_fit
from ._model import LinearModel
from ._params import Param, ParamTable, common_tail, either, instance, integer, none, options, real
from ._progress import progress_bar
from ._validation import (
    check_n_features,
    check_nonneg_float,
    check_X,
    check_y_length,
    encode_classes,
    seed_from,
)

LOSSES = tuple(PSI_CODES)
PENALTIES = ("l2", "l1", "elasticnet")
METHODS = ("s3gd", "sgd", "svrg")
DEFAULT_INNER_ITER = {"s3gd": 20, "svrg": 50, "sgd": 20}  # Section 4.3 / 4.2

# The hyper-parameters of fit and S3GDClassifier (and the command line), once.
PARAMS = ParamTable(
    Param("loss", "logistic", options(*LOSSES), "smooth loss of the linear model"),
    Param("penalty", "l2", options(*PENALTIES), "regulariser"),
    Param("lam", 1e-3, real(0), "regularisation strength"),
    Param("l1_ratio", 0.5, real(0, 1), "share of l1 in the elastic net"),
    Param("n_anchors", 100, integer(1), "anchors of the graph (k-means centres)"),
    Param("k_nearest", 5, integer(1), "anchors per point"),
    Param("step", 1.0, real(0, low_open=True), "step size"),
    Param("inner_iter", None, either(integer(1), none()), "inner iterations per snapshot; None: the method's"),
    Param("batch_size", 10, integer(1), "rows per stochastic step"),
    Param("max_epochs", 10.0, real(0, low_open=True), "passes over the data"),
    Param("max_time", None, either(real(0, low_open=True), none()), "seconds of training at most; None: no limit"),
    Param("class_weight", None, either(none(), options("balanced"), instance(dict, text="a dict {label: weight}")),
          "per-class weights of the loss"),
    Param("method", "s3gd", options(*METHODS), "s3gd, or prox-SVRG / prox-SGD on the same loop"),
    Param("beta", 10.0, real(0, low_open=True), "smoothing of the anchor graph's weights"),
    Param("kmeans_iter", 5, integer(0), "k-means iterations for the anchors"),
    Param("kmeans_sample", 2000, either(integer(1), none()), "rows k-means runs on; None: all"),
    Param("checkpoint", 0.25, real(0, low_open=True), "epochs between callback checkpoints"),
    *common_tail(),
)


@PARAMS.entry
def fit(X, y, *, loss, penalty, lam, l1_ratio, n_anchors, k_nearest, step, inner_iter, batch_size, max_epochs,
        max_time, class_weight, method, beta, kmeans_iter, kmeans_sample, checkpoint, random_state, backend,
        dtype, callback, verbose):
    """Fit a linear classifier by S3GD (or prox-SVRG / prox-SGD on the same code path).

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        Dense; a constant feature 1 is appended internally (the intercept).
    y : array of shape (n_samples,)
        Class labels; two classes give one model, more give one-vs-rest.
    loss : {"logistic", "squared_hinge", "smooth_hinge"}, default "logistic"
        ``log(1 + exp(-y u))``; ``(1/2) max(0, 1 - y u)^2`` (Eq. 27);
        ``(1/beta) log(1 + exp(-beta (y u - 1)))`` (Eq. 26).
    penalty : {"l2", "l1", "elasticnet"}, default "l2"
    lam : float >= 0, default 1e-3
        The paper's lambda: ``R(w) = lam ||w||^2`` for l2.
    l1_ratio : float in [0, 1], default 0.5
        Elastic net: ``R = lam (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2)``.
    n_anchors : int, default 100
        m (capped at n_samples).
    k_nearest : int, default 5
        Anchors per sample in the anchor-sample graph (capped at m).
    step : float > 0, default 1.0
        Constant step size eta.
    inner_iter : int or None
        k_in; None: 20 for s3gd and sgd, 50 for svrg (the paper's settings).
    batch_size : int, default 10
        p.
    max_epochs : float > 0, default 10.0
        Inner steps in all: ``max_epochs * n_samples / batch_size`` (rounded up to
        whole outer loops).
    max_time : float > 0 or None
        Stop at the first checkpoint after this many seconds of training.
    class_weight : None, "balanced" or dict {label: weight}
        "balanced": ``n / (2 n_c)``, Eq. (46) halved so the weights' mean is 1
        (scikit-learn's convention). Mini-batches are drawn with probabilities
        proportional to the weights (the paper's SGD), so the batch average stays unbiased.
    method : {"s3gd", "sgd", "svrg"}, default "s3gd"
    beta : float > 0, default 10.0
        Sharpness of the smoothed hinge (Eq. 26).
    kmeans_iter : int >= 0, default 5
        Lloyd iterations for the anchors.
    kmeans_sample : int or None, default 2000
        Rows (drawn at random) the k-means runs on; None: all. The centers are then
        snapped to the nearest of these rows (Eq. 13 over that subset of the training set).
    checkpoint : float > 0, default 0.25
        Epochs between checkpoints (callback, ``max_time`` check).
    random_state : int, numpy Generator or None
    backend : {"auto", "cpu", "cuda"} or Backend, default "auto"
    dtype : {"float32", "float64"} or None
    callback : callable or None
        Called at every checkpoint with a dict: ``epoch``, ``time`` (training
        seconds so far, preprocessing included, callbacks and the diagnostics
        below excluded), ``coef`` (array (n_features + 1,): weights then intercept,
        binary problem or the first one-vs-rest problem), ``grad_corr`` (Pearson
        correlation between the last segment's semi-stochastic gradient, taken in
        the middle of its last outer loop, and the exact gradient of the smooth part
        at the same point: the paper's Fig. 6), ``setup_time`` (seconds of ``time``
        spent before the first step: the constant column, and for S3GD the anchors,
        the graph and the products of Eq. (22)). Returning True stops the fit.
    verbose : int, default 0
        0: silent; 1: a progress bar on stderr over the outer iterations (all
        one-vs-rest problems), moved at each checkpoint, where the loop
        synchronises anyway; no loss is computed for it (:mod:`algorithms._progress`).

    Returns
    -------
    LinearModel

    Examples
    --------
    >>> from algorithms import s3gd
    >>> from algorithms.datasets import example_data
    >>> X, y = example_data()  # breast cancer, standardised
    >>> model = s3gd.fit(X, y, step=0.1, max_epochs=5, random_state=0)
    >>> float((s3gd.predict(model, X) == y).mean()) > 0.95
    True
    """
    inner_iter = DEFAULT_INNER_ITER[method] if inner_iter is None else inner_iter
    bk = resolve(backend, X, y)
    xp = bk.xp
    X = check_X(X, bk, dtype)
    classes, y_index = encode_classes(y, bk)
    check_y_length(y_index, X)
    class_weights = _class_weights(class_weight, classes)
    seed = seed_from(random_state)
    rng = np.random.default_rng(seed)

    l1 = lam if penalty == "l1" else (lam * l1_ratio if penalty == "elasticnet" else 0.0)
    l2 = lam if penalty == "l2" else (lam * (1.0 - l1_ratio) if penalty == "elasticnet" else 0.0)
    n, d = X.shape
    clock = _Clock()
    clock.start()
    y_host = to_numpy(y_index)
    problems = [1] if classes.size == 2 else list(range(classes.size))

    graph = _anchor_graph(X, bk, n_anchors, k_nearest, kmeans_iter, kmeans_sample, rng) if method == "s3gd" else None
    run = get_kernel("prox_sgd_run", bk)
    coefs = []
    n_steps_total = max(1, math.ceil(max_epochs * n / batch_size))
    n_outer_total = max(1, math.ceil(n_steps_total / inner_iter))
    outer_per_segment = max(1, math.ceil(checkpoint * n / batch_size / inner_iter))
    sw_host = _sample_weights(class_weights, classes, y_host)
    sampler = _Sampler(rng, sw_host)
    sw = xp.asarray(bk.asarray(sw_host), dtype=X.dtype)
    setup_time = 0.0
    bar = progress_bar(verbose, n_outer_total * len(problems), method, unit="outer it")
    for problem, positive in enumerate(problems):
        cls = bk.asarray((y_host == positive).astype(np.int64))
        if graph is not None:
            Z, idx, gw = graph
            # Eq. (22) split by class: row i of class c with weights s_i gamma_ij / n accumulated
            # onto anchor j + c m, so G[c] = (1 / n) sum_{i in c} s_i M_i^T [x_i, 1].
            m = Z.shape[0]
            shifted = idx + cls[:, None] * m
            scaled = gw * (sw / n)[:, None]
            G = ops.anchor_accumulate(shifted, scaled, X, 2 * m, backend=bk, check_finite=False)
            G_const = ops.anchor_accumulate(shifted, scaled, xp.ones_like(sw), 2 * m, backend=bk, check_finite=False)
            G = xp.reshape(xp.concat((G, G_const[:, None]), axis=1), (2, m, d + 1))
        else:
            Z = xp.zeros((0, d), dtype=X.dtype)
            G = xp.zeros((2, 0, d + 1), dtype=X.dtype)
            idx = xp.zeros((0, 1), dtype=xp.int64)
            gw = xp.zeros((0, 1), dtype=X.dtype)
        w = xp.zeros((d + 1,), dtype=X.dtype)
        if problem == 0:
            bk.synchronize()
            setup_time = clock.read()
        outer_done = 0
        while outer_done < n_outer_total:
            n_outer = min(outer_per_segment, n_outer_total - outer_done)
            batches = bk.asarray(sampler.draw(n_outer * inner_iter, batch_size))
            record_step = (n_outer - 1) * inner_iter + inner_iter // 2
            # The outer and inner steps of a segment make no device -> host transfer; the
            # checkpoint after it synchronises (the clock; the callback's diagnostics).
            with sync_free():
                w, g_rec, w_rec = run(
                    X, cls, w, batches, sw, Z, G, idx, gw, xp=xp, method=method, loss=loss, beta=beta,
                    eta=step, l1=l1, l2=l2, k_in=inner_iter, n_outer=n_outer, record_step=record_step,
                )
            outer_done += n_outer
            bk.synchronize()
            if bar is not None:
                epoch = round(outer_done * inner_iter * batch_size / n, 2)
                bar.update(problem * n_outer_total + outer_done, epoch=epoch)
            clock.stop()
            stop = False
            if callback is not None and problem == 0:
                exact = _smooth_gradient(X, cls, sw, w_rec, loss, beta, xp)
                info = {
                    "epoch": outer_done * inner_iter * batch_size / n,
                    "time": clock.elapsed,
                    "coef": w,
                    "grad_corr": _pearson(to_numpy(g_rec), to_numpy(exact)),
                    "outer_iterations": outer_done,
                    "setup_time": setup_time,
                }
                stop = bool(callback(info))
            if max_time is not None and clock.elapsed >= max_time:
                stop = True
            clock.start()
            if stop:
                break
        coefs.append(w)
    if bar is not None:
        bar.close()
    clock.stop()
    W = xp.stack(coefs, axis=0)
    check_finite_fit({"coefficients": W}, X, xp, algorithm=f"S3GD ({method})", hint="lower `step`")
    params = {
        "loss": loss, "penalty": penalty, "lam": lam, "l1_ratio": l1_ratio, "n_anchors": n_anchors,
        "k_nearest": k_nearest, "step": step, "inner_iter": inner_iter, "batch_size": batch_size,
        "max_epochs": max_epochs, "class_weight": _jsonable_weights(class_weight), "beta": beta,
        "fit_time": clock.elapsed, "setup_time": setup_time,
    }
    return LinearModel(
        algorithm=method,
        coef=W[:, :d],
        intercept=W[:, d],
        n_features_in=d,
        classes=classes,
        params=params,
        backend=bk.name,
        dtype="float32" if X.dtype == xp.float32 else "float64",
    )


class _Clock:
    """Accumulates the seconds between start() and stop() (the training time)."""

    def __init__(self):
        self.elapsed = 0.0
        self._t = None

    def start(self):
        self._t = time.perf_counter()

    def read(self):
        """Seconds so far, the running interval included."""
        return self.elapsed + (time.perf_counter() - self._t if self._t is not None else 0.0)

    def stop(self):
        if self._t is not None:
            self.elapsed += time.perf_counter() - self._t
            self._t = None


class _Sampler:
    """Mini-batch rows, drawn with replacement with probabilities proportional to the
    sample weights (uniform when they are all equal)."""

    def __init__(self, rng, sample_weight):
        self.rng, self.n = rng, sample_weight.shape[0]
        self.uniform = bool(np.all(sample_weight == sample_weight[0]))
        if not self.uniform:
            cdf = np.cumsum(sample_weight, dtype=np.float64)
            self.cdf = cdf / cdf[-1]

    def draw(self, steps, p):
        if self.uniform:
            return self.rng.integers(0, self.n, size=(steps, p), dtype=np.int64)
        rows = np.searchsorted(self.cdf, self.rng.random((steps, p)), side="right")
        return np.minimum(rows, self.n - 1).astype(np.int64)


def _class_weights(class_weight, classes):
    if class_weight is None or class_weight == "balanced":
        return class_weight
    if isinstance(class_weight, dict):
        out = {}
        for label, value in class_weight.items():
            if label not in set(classes.tolist()):
                msg = f"`class_weight` names label {label!r}, which is not in `y` (classes {classes.tolist()})"
                raise ValueError(msg)
            out[label] = check_nonneg_float(f"class_weight[{label!r}]", value, positive=True)
        return out
    msg = f"`class_weight` must be None, 'balanced' or a dict {{label: weight}}, got {class_weight!r}"
    raise ValueError(msg)


def _sample_weights(class_weights, classes, y_index):
    """Per-row weights from the class weights, scaled to mean 1 (so ``lam`` keeps its meaning).

    "balanced": ``n / (n_classes n_c)``, for two classes Eq. (46) halved (scikit-learn's
    convention); a dict gives each label its weight (1 if absent)."""
    n = y_index.shape[0]
    if class_weights is None:
        return np.ones(n)
    if class_weights == "balanced":
        counts = np.bincount(y_index, minlength=classes.size)
        per_class = n / (classes.size * np.maximum(counts, 1))
    else:
        per_class = np.array([class_weights.get(c, 1.0) for c in classes.tolist()], dtype=np.float64)
    w = per_class[y_index]
    return w * (n / w.sum())


def _jsonable_weights(class_weight):
    if isinstance(class_weight, dict):
        return {str(k): float(v) for k, v in class_weight.items()}
    return class_weight


def _anchor_graph(X, bk, n_anchors, k_nearest, kmeans_iter, kmeans_sample, rng):
    """Anchors (Algorithm 2, steps 2-5) and the sparse anchor-sample graph (steps 6-13).

    On X without the constant feature: it changes no distance; the anchors' constant
    feature is implied in the loop."""
    xp = bk.xp
    n = X.shape[0]
    m = min(n_anchors, n)
    k = min(k_nearest, m)
    if kmeans_sample is not None and kmeans_sample < n:
        rows = bk.asarray(np.sort(rng.choice(n, size=max(kmeans_sample, m), replace=False)))
        sample = xp.take(X, rows, axis=0)
    else:
        sample = X
    centers = ops.kmeans(sample, m, n_iter=kmeans_iter, random_state=rng, backend=bk, check_finite=False)
    # Eq. (13) over the rows k-means saw (all rows when kmeans_sample is None): one O(n m d)
    # pass fewer than snapping to all of X, and the anchors are still training samples.
    Z = xp.take(sample, ops.snap_to_samples(centers, sample, backend=bk, check_finite=False), axis=0)
    idx, gw = ops.anchor_graph(X, Z, k, backend=bk, check_finite=False)
    return Z, idx, gw


def _smooth_gradient(X, cls, sw, w, loss, beta, xp):
    """Exact gradient of the smooth part (1/n) sum_i s_i psi_i at w (w[-1]: the intercept)."""
    signs = xp.astype(cls, X.dtype) * 2.0 - 1.0
    a = sw * dpsi(X @ w[:-1] + w[-1], signs, PSI_CODES[loss], beta, xp) / X.shape[0]
    return xp.concat((a @ X, xp.sum(a)[None]))


def _pearson(a, b):
    a = np.asarray(a, dtype=np.float64) - np.mean(a)
    b = np.asarray(b, dtype=np.float64) - np.mean(b)
    denom = math.sqrt(float(a @ a) * float(b @ b))
    return float(a @ b) / denom if denom > 0 else float("nan")


def decision_function(model, X, *, backend="auto"):
    """Decision values ``X @ coef.T + intercept``: shape (n_samples,) for two classes,
    (n_samples, n_classes) otherwise; on ``X``'s backend. The same as
    ``model.decision_function(X, backend=backend)`` (:meth:`LinearModel.decision_function`)."""
    return model.decision_function(X, backend=backend)


def predict(model, X, *, backend="auto"):
    """Predicted class labels for ``X``; the same as ``model.predict(X, backend=backend)``."""
    return model.predict(X, backend=backend)


def objective(model, X, y, *, backend="auto"):
    """The training objective of ``model`` on (X, y): mean (class-weighted) loss + R(w).

    ``w`` includes the intercept (the weight of the appended constant feature), as
    in fitting. For one-vs-rest models, the sum of the per-class objectives.

    Returns
    -------
    float
    """
    bk = resolve(backend, X, y)
    xp = bk.xp
    X = check_X(X, bk, model.dtype if not hasattr(X, "dtype") else None)
    check_n_features(X, model.n_features_in)
    p = model.params
    classes = np.asarray(model.classes)
    y_host = np.asarray(to_numpy(y) if not isinstance(y, (list, tuple)) else y)
    if y_host.shape != (X.shape[0],):
        msg = f"`y` must have shape ({X.shape[0]},), got {y_host.shape}"
        raise ValueError(msg)
    model = model if model.backend == bk.name else model.to(bk)
    coef = xp.astype(model.coef, X.dtype)
    intercept = xp.astype(model.intercept, X.dtype)
    cw_spec = p["class_weight"]
    if isinstance(cw_spec, dict):  # saved with string keys (JSON): back to the labels
        cw_spec = {label: cw_spec[str(label)] for label in classes.tolist() if str(label) in cw_spec}
    y_index = np.searchsorted(classes, y_host)
    if not np.all(classes[np.minimum(y_index, classes.size - 1)] == y_host):
        msg = f"`y` holds labels the model was not fitted with (classes {classes.tolist()})"
        raise ValueError(msg)
    weights = xp.astype(bk.asarray(_sample_weights(cw_spec, classes, y_index)), X.dtype)
    positives = [1] if classes.size == 2 else list(range(classes.size))
    total = 0.0
    for row, positive in enumerate(positives):
        cls_host = (y_index == positive).astype(np.int64)
        signs = bk.asarray(cls_host * 2.0 - 1.0)
        signs = xp.astype(signs, X.dtype)
        u = X @ coef[row, :] + intercept[row]
        data = float(xp.mean(weights * psi(u, signs, PSI_CODES[p["loss"]], p["beta"], xp)))
        w_all = xp.concat((coef[row, :], intercept[row : row + 1]))
        sq = float(xp.sum(w_all * w_all))
        l1n = float(xp.sum(xp.abs(w_all)))
        lam, r = p["lam"], p["l1_ratio"]
        penalty = {"l2": lam * sq, "l1": lam * l1n, "elasticnet": lam * (r * l1n + (1 - r) * sq)}[p["penalty"]]
        total += data + penalty
    return total


class S3GDClassifier(FunctionalClassifier):
    """Linear classifier trained by S3GD (or prox-SVRG / prox-SGD), scikit-learn style.

    Parameters are those of :func:`algorithms.s3gd.fit`. Like scikit-learn's linear
    classifiers it exposes ``coef_`` (n_outputs, n_features) and ``intercept_``
    (n_outputs,), ``n_outputs = 1`` for two classes; the intercept is the weight of
    the constant feature appended during fitting (so it is regularised).

    Attributes
    ----------
    model_ : LinearModel
    coef_, intercept_ : arrays on the input's backend
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int

    Examples
    --------
    >>> from algorithms import S3GDClassifier
    >>> from algorithms.datasets import example_data
    >>> X, y = example_data()  # breast cancer, standardised
    >>> S3GDClassifier(step=0.1, max_epochs=5, random_state=0).fit(X, y).score(X, y) > 0.95
    True
    """

    _params = PARAMS
    _fit = staticmethod(fit)
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)

    def fit(self, X, y):
        """Fit on (X, y); sets ``coef_`` and ``intercept_`` like scikit-learn's linear models."""
        super().fit(X, y)
        self.coef_ = self.model_.coef
        self.intercept_ = self.model_.intercept
        return self


__all__ = ["LOSSES", "METHODS", "PENALTIES", "S3GDClassifier", "decision_function", "fit", "objective", "predict"]
