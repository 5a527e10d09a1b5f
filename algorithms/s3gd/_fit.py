"""s3gd: the hyper-parameters, ``fit`` and prediction (see the package docstring)."""

from __future__ import annotations


import numpy as np
from sklearn.exceptions import ConvergenceWarning

from kbackends import get_kernel, resolve, to_numpy
from kbackends.ops import resolve_hint
from kbackends.losses import PSI_CODES, psi

from . import _setup as setup
from . import _loop
from .._boundary.finite import check_finite_fit
from .._boundary.fit_plan import check_class_weight, class_row_weights, jsonable_weights
from .._models.model import LinearModel
from .._boundary.params import Param, ParamTable, common, common_tail, either, integer, none, options, real
from .._boundary.sparse import is_sparse
from .._boundary.warn import warn_user
from .._boundary.validation import (
    check_class_weights, check_n_features, check_X, check_y_length, encode_classes, encode_known_classes,
    seed_from,
)

LOSSES = tuple(PSI_CODES)
PENALTIES = ("l2", "l1", "elasticnet")
METHODS = ("s3gd", "sgd", "svrg")
DEFAULT_INNER_ITER = setup.DEFAULT_INNER_ITER

# The hyper-parameters of fit and S3GDClassifier (and the command line), once.
PARAMS = ParamTable(
    Param("loss", "logistic", options(*LOSSES), "smooth loss of the linear model"),
    Param("penalty", "l2", options(*PENALTIES), "regulariser"),
    Param("lam", 1e-3, real(0), "regularisation strength"),
    Param("l1_ratio", 0.5, real(0, 1), "share of l1 in the elastic net"),
    Param("n_anchors", 100, integer(1), "anchors of the graph (k-means centres)"),
    Param("k_nearest", 5, integer(1), "anchors per point"),
    Param("step", "auto", either(options("auto"), real(0, low_open=True)),
          "step size; 'auto': 1 / (2 L) from the data's squared row norms (s3gd._setup.choose_step)"),
    Param("inner_iter", None, either(integer(1), none()), "inner iterations per snapshot; None: the method's"),
    Param("batch_size", 10, integer(1), "rows per stochastic step"),
    Param("max_epochs", 10.0, real(0, low_open=True), "passes over the data"),
    Param("max_time", None, either(real(0, low_open=True), none()), "seconds of training at most; None: no limit"),
    Param("tol", "auto", either(options("auto"), real(0), none()),
          "stop when an epoch lowers the training objective by less than tol (relative); None: never; "
          "'auto': 3e-3 with step='auto', None with a given step"),
    common("class_weight"),
    Param("method", "s3gd", options(*METHODS), "s3gd, or prox-SVRG / prox-SGD on the same loop"),
    Param("beta", 10.0, real(0, low_open=True), "smoothing of the anchor graph's weights"),
    Param("kmeans_iter", 5, integer(0), "k-means iterations for the anchors"),
    Param("kmeans_sample", 1000, either(integer(1), none()), "rows k-means runs on; None: all"),
    Param("checkpoint", 0.25, real(0, low_open=True), "epochs between callback checkpoints"),
    *common_tail(),
)


@PARAMS.entry
def fit(X, y, sample_weight=None, *, loss, penalty, lam, l1_ratio, n_anchors, k_nearest, step, inner_iter,
        batch_size, max_epochs, max_time, tol, class_weight, method, beta, kmeans_iter, kmeans_sample, checkpoint,
        random_state, backend, dtype, callback, verbose):
    """Fit a linear classifier by S3GD (or prox-SVRG / prox-SGD on the same code path).

    Parameters
    ----------
    X : array or scipy.sparse matrix of shape (n_samples, n_features)
        A constant feature 1 is appended internally (the intercept), without a copy.
        scipy.sparse (CSR / CSC / COO, matrix or array; cpu backend) is read as
        canonical CSR and never densified: memory O(nnz + m d) (the anchors and
        the products of Eq. 22 are dense (m, d)); without an l1 term the inner
        steps cost O(nnz of the batch) (lazy updates, ``_kernels``).
        On cuda, cupyx.scipy.sparse (a scipy.sparse matrix is moved to the device
        once): the loop kernel reads the batch rows' non-zeros, O(nnz of the batch
        + d) per step (the scratch gradient and the prox stay dense).
    y : array of shape (n_samples,)
        Class labels; two classes give one model, more give one-vs-rest.
    sample_weight : array of shape (n_samples,) or None
        scikit-learn's semantics: weight k acts as the row repeated k times, 0 as the
        row removed; negative weights raise ValueError. Combined with ``class_weight``
        by product, ``s_i = c_{y_i} w_i``, scaled to mean 1, so the objective is
        ``(1/sum s) sum_i s_i psi_i + R(w)``. Every part of the method weights rows
        the same way: mini-batches are drawn with probabilities ``s_i / sum s`` (the
        plain batch average is then an unbiased gradient of the weighted loss, a zero
        weight is never drawn); SVRG's snapshot gradient is the s-weighted mean; and
        S3GD's anchor surrogate ``h_i(w) = sum_j gamma_ij psi(z_j . w; y_i)`` (Eq. 19)
        enters its full-gradient estimate H (Eq. 22) with the row's weight,
        ``H = (1/n) sum_i s_i sum_j gamma_ij psi'(z_j . w~; y_i) x~_i``, i.e. row i's
        ``s_i gamma_ij / n`` is what it adds to the X M product of anchor j, so H is
        the expectation, under the same sampling, of the control variate subtracted
        at each step (the semi-stochastic gradient stays unbiased). k-means runs on
        the rows of positive weight (unweighted); the anchor graph is built for all. : {"logistic", "squared_hinge", "smooth_hinge"}, default "logistic"
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
    step : "auto" or float > 0, default "auto"
        Constant step size eta. "auto": ``1 / (2 L_p)`` from the data's squared row
        norms (the mini-batch smoothness constant; as SAG / SAGA take 1 / L), computed
        once at the entry, so the step follows the feature scale; the batches are then
        drawn by the rows' norms with importance weights that keep them unbiased
        (:func:`algorithms.s3gd._setup.norm_sampling`), so the step rests on the mean
        row norm, not the longest row's (a given step keeps draws by the row weights);
        a UserWarning says
        when X's largest column RMS is over 100x (or under 1/100 of) the intercept's
        feature, where one step cannot suit both (standardise X).
        :func:`algorithms.s3gd._setup.choose_defaults` holds the rule.
    inner_iter : int or None
        k_in; None: 20 for sgd, 50 for svrg (the paper's settings); for s3gd 20, or
        more where the snapshot (O(m d)) would cost more than 20 steps (sparse rows
        with many columns): :func:`algorithms.s3gd._setup.choose_defaults`.
    batch_size : int, default 10
        p.
    max_epochs : float > 0, default 10.0
        Inner steps in all: ``max_epochs * n_samples / batch_size`` (rounded up to
        whole outer loops).
    max_time : float > 0 or None
        Stop at the first checkpoint after this many seconds of training.
    tol : "auto", float >= 0 or None, default "auto"
        At the first checkpoint of each whole epoch the training objective F is
        computed (one pass, O(nnz)); the fit stops when that epoch lowered F by less
        than ``tol |F_best|`` and returns the iterate of the lowest F seen. None: every
        epoch runs and the last iterate is returned. "auto": 3e-3 with ``step="auto"``,
        None with a given step (explicit settings run as they did before the default).
    class_weight : None, "balanced" or dict {label: weight}
        "balanced": ``n / (2 n_c)``, Eq. (46) halved so the weights' mean is 1
        (scikit-learn's convention). Mini-batches are drawn with probabilities
        proportional to the weights (the paper's SGD), so the batch average stays unbiased.
    method : {"s3gd", "sgd", "svrg"}, default "s3gd"
    beta : float > 0, default 10.0
        Sharpness of the smoothed hinge (Eq. 26).
    kmeans_iter : int >= 0, default 5
        Lloyd iterations for the anchors.
    kmeans_sample : int or None, default 1000
        Rows (drawn at random) the k-means runs on (at least ``n_anchors``); None: all.
        The centers are then snapped to the nearest of these rows (Eq. 13 over that
        subset of the training set). 1000 is ten rows a centre for the default 100
        anchors (2000 cost phishing and w8a 5-6 ms more for the same gaps).
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
        synchronises anyway; no loss is computed for it (:mod:`algorithms._engine.progress`).

    Returns
    -------
    LinearModel
        ``params`` records the step, tol and inner_iter used and ``epochs`` (run per
        binary / one-vs-rest problem).

    Examples
    --------
    >>> from algorithms import s3gd
    >>> from algorithms.datasets import example_data
    >>> X, y = example_data()  # breast cancer, standardised
    >>> model = s3gd.fit(X, y, step=0.1, max_epochs=5, random_state=0)
    >>> float((s3gd.predict(model, X) == y).mean()) > 0.95
    True
    >>> import scipy.sparse
    >>> model = s3gd.fit(scipy.sparse.csr_matrix(X), y, sample_weight=1.0 + (y == 0), random_state=0)
    >>> float((s3gd.predict(model, X) == y).mean()) > 0.95
    True
    """
    bk = resolve(backend, resolve_hint(X), y)
    xp = bk.xp
    X = check_X(X, bk, dtype, accept_sparse=True)
    classes, y_index = encode_classes(y, bk)
    check_y_length(y_index, X)
    class_weights = check_class_weight(class_weight, classes)
    seed = seed_from(random_state)
    rng = np.random.default_rng(seed)

    l1 = lam if penalty == "l1" else (lam * l1_ratio if penalty == "elasticnet" else 0.0)
    l2 = lam if penalty == "l2" else (lam * (1.0 - l1_ratio) if penalty == "elasticnet" else 0.0)
    n = X.shape[0]
    clock = setup.Clock()
    clock.start()
    y_host = to_numpy(y_index)
    sw_host = class_row_weights(class_weights, classes, y_host, setup.sample_weights_or_ones(sample_weight, n))
    check_class_weights(y_host, sw_host, classes, what="the row weights (`sample_weight` times `class_weight`)")
    auto_step = isinstance(step, str)
    step, tol, inner_iter, rms, sampling = _defaults_from_data(
        X, xp, sw_host, step, tol, inner_iter, method=method, n_anchors=n_anchors, batch_size=batch_size, loss=loss,
        beta=beta, l1=l1, l2=l2)
    if auto_step:  # say so when the automatic step cannot suit every column
        setup.warn_scale(rms)
    problems = [1] if classes.size == 2 else list(range(classes.size))

    graph = (setup.anchor_graph(X, bk, n_anchors, k_nearest, kmeans_iter, kmeans_sample, rng, sw_host)
             if method == "s3gd" else None)
    run = get_kernel("prox_sgd_run", bk)
    loop = _loop.Loop.schedule(
        X, bk, sw_host, sampling, graph, run, rng, max_epochs=max_epochs, checkpoint=checkpoint, n_problems=len(problems),
        verbose=verbose, method=method, loss=loss, beta=beta, step=step, l1=l1, l2=l2, tol=tol,
        inner_iter=inner_iter, batch_size=batch_size, clock=clock, callback=callback, max_time=max_time)
    solved = [loop.solve(problem, bk.asarray((y_host == positive).astype(np.int64)))
              for problem, positive in enumerate(problems)]
    loop.close()
    clock.stop()
    coefs, epochs_done = [coef for coef, _, _ in solved], [epochs for _, epochs, _ in solved]
    _warn_capped([capped for _, _, capped in solved], max_epochs, tol)
    params = {
        "loss": loss, "penalty": penalty, "lam": lam, "l1_ratio": l1_ratio, "n_anchors": n_anchors,
        "k_nearest": k_nearest, "step": step, "inner_iter": inner_iter, "batch_size": batch_size,
        "max_epochs": max_epochs, "tol": tol, "class_weight": jsonable_weights(class_weight), "beta": beta,
        "fit_time": clock.elapsed, "setup_time": loop.setup_time, "epochs": epochs_done,
    }
    return _linear_model(coefs, params, X, bk, classes, method)


def _defaults_from_data(X, xp, sw_host, step, tol, inner_iter, *, method, n_anchors, batch_size, loss, beta, l1, l2):
    """The step, tol and inner iterations the fit runs with, their "auto" / None
    resolved from the rows' squared norms (:func:`algorithms.s3gd._setup.choose_defaults`),
    X's (largest, median) column RMS (for :func:`algorithms.s3gd._setup.warn_scale`) and the
    batches' sampling, (draw weights, importance weights or None): by the row norms
    under the automatic step (:func:`algorithms.s3gd._setup.norm_sampling`), by the
    row weights with a given one."""
    n, d = X.shape
    sq, mean_sq, rms = setup.row_statistics(X, xp, sw_host)
    if isinstance(step, str):
        draw, row_scale, max_sq = setup.norm_sampling(sq, mean_sq, sw_host)
    else:
        draw, row_scale, max_sq = sw_host, None, float(sq[sw_host > 0].max())
    sparse = is_sparse(X)
    step, tol, inner_iter = setup.choose_defaults(
        step, tol, inner_iter, method=method, max_sq=max_sq, mean_sq=mean_sq,
        nnz_row=X.nnz / n if sparse else d, n_features=d, n_anchors=min(n_anchors, n), batch_size=batch_size,
        loss=loss, beta=beta, l2=l2, lazy=sparse and l1 == 0.0, n_rows=n)
    return step, tol, inner_iter, rms, (draw, row_scale)


def _warn_capped(capped, max_epochs, tol):
    """ConvergenceWarning when ``max_epochs`` ended a problem's fit before ``tol``'s test
    stopped it (as scikit-learn's iterative estimators warn at ``max_iter``)."""
    if any(capped):
        which = "the fit" if len(capped) == 1 else f"{sum(capped)} of the {len(capped)} one-vs-rest problems"
        msg = (f"S3GD: max_epochs={max_epochs:g} ended {which} before the objective's decrease per epoch fell "
               f"below tol={tol:g}; the returned weights may be far from the optimum. Raise max_epochs, or "
               "standardise X.")
        warn_user(msg, ConvergenceWarning)


def _linear_model(coefs, params, X, bk, classes, method):
    """The fitted ``LinearModel`` from each problem's weights (the intercept last),
    refused when they are not finite."""
    xp = bk.xp
    d = X.shape[1]
    W = xp.stack(coefs, axis=0)
    check_finite_fit({"coefficients": W}, X, xp, algorithm=f"S3GD ({method})", hint="lower `step`")
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


def decision_function(model, X, *, backend="auto"):
    """Decision values ``X @ coef.T + intercept``: shape (n_samples,) for two classes,
    (n_samples, n_classes) otherwise; on ``X``'s backend. The same as
    ``model.decision_function(X, backend=backend)`` (:meth:`LinearModel.decision_function`)."""
    return model.decision_function(X, backend=backend)


def predict(model, X, *, backend="auto"):
    """Predicted class labels for ``X``; the same as ``model.predict(X, backend=backend)``."""
    return model.predict(X, backend=backend)


def objective(model, X, y, sample_weight=None, *, backend="auto"):
    """The training objective of ``model`` on (X, y): weighted mean loss + R(w),
    ``(1/sum_i s_i) sum_i s_i psi_i + R(w)`` with ``s_i`` the class weight of the
    model times ``sample_weight`` (as in fitting).

    ``w`` includes the intercept (the weight of the appended constant feature), as
    in fitting. For one-vs-rest models, the sum of the per-class objectives. ``X``
    dense or scipy.sparse (cpu).

    Returns
    -------
    float
    """
    bk = resolve(backend, resolve_hint(X), y)
    xp = bk.xp
    X = check_X(X, bk, model.dtype if not hasattr(X, "dtype") else None, accept_sparse=True)
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
    y_index = to_numpy(encode_known_classes(y_host, classes, resolve("cpu")))
    sw_host = class_row_weights(cw_spec, classes, y_index, setup.sample_weights_or_ones(sample_weight, X.shape[0]))
    weights = xp.astype(bk.asarray(sw_host), X.dtype)
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
