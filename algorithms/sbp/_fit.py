"""sbp: the hyper-parameters, ``fit`` and prediction (see the package docstring)."""

from __future__ import annotations


import numpy as np

from kbackends import resolve, to_numpy
from kbackends.ops import RESPONSE_KERNELS, resolve_hint

from .._boundary.finite import check_finite_fit
from .._models.model import KernelExpansionModel
from .._boundary.fit_plan import check_class_weight, check_sample_weight, class_row_weights, jsonable_weights
from ._defaults import AUTO_ITER_MIN, AUTO_ITER_PER_ROOT, sbp_defaults
from ._loop import run
from .._boundary.sparse import take_rows
from .._boundary.warn import warn_user
from ._svm_nu import nu_from_svm  # noqa: F401 (public here: sbp.nu_from_svm)
from .._engine.threads import single_threaded_blas
from .._boundary.params import (
    REQUIRED, Param, ParamTable, boolean, common, common_tail, either, integer, none, options, real,
)
from .._boundary.precision import compute_array
from .._boundary.validation import (
    check_class_weights,
    check_gamma,
    check_X,
    encode_classes,
    seed_from,
)


KERNELS = RESPONSE_KERNELS  # the response kernels' table (kbackends.ops)

# The hyper-parameters of fit and SBPClassifier (and the command line), once.
PARAMS = ParamTable(
    Param("nu", REQUIRED, either(options("auto"), real(0, low_open=True)),
          "margin-violation budget as a fraction of n (the nu-SVM's nu); 'auto': matched to SVC(C=1)",
          estimator_default="auto"),
    common("kernel", constraint=options(*KERNELS)),
    common("gamma", default="scale",
           constraint=either(options("median", "scale"), real(0, low_open=True, text="a positive float")),
           doc="kernel width; 'scale': 1 / (n_features Var X), 'median': 1 / median squared distance"),
    Param("bias", True, boolean(), "learn a bias (the constant feature)"),
    Param("n_iter", "auto", either(integer(1), options("auto"), none()),
          f"iterations; 'auto': from n ({AUTO_ITER_PER_ROOT} sqrt(n), at least {AUTO_ITER_MIN}, at most n); "
          "None: n (one pass)"),
    Param("batch_size", 1, integer(1), "points drawn from under the water per iteration"),
    common("class_weight"),
    *common_tail(),
)


@PARAMS.entry
def fit(X, y, sample_weight=None, *, nu, kernel, gamma, bias, n_iter, batch_size, class_weight, random_state, backend,
        dtype, callback, verbose):
    """Fit a kernel SVM by the Stochastic Batch Perceptron.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
    y : array of shape (n_samples,)
        Class labels; more than two classes: one-vs-rest.
    sample_weight : array of shape (n_samples,), optional
        Non-negative weights with scikit-learn's meaning: weight k acts as the row
        repeated k times, weight 0 as the row removed (it is dropped before the
        fit). Problem (2.3) over the repeated rows has one slack per copy, equal
        among copies at the optimum, so the slack budget is ``nu * sum(w)`` and
        the constraint ``sum_i w_i xi_i <= nu sum(w)``: point i is a water column
        of width ``w_i`` (``sum_i w_i max(0, gamma - c_i) = V``, the weighted
        water level; in the dual, point i's cap on its weight scales with
        ``w_i``), and the supergradient, the average over the copies under water,
        is estimated without bias by drawing point i with probability
        ``w_i / sum of the weights under water``. With the bias, both basins hold
        the same weight under water (:func:`kbackends.ops.water_level_biased`).
        Equal weights give the unweighted fit exactly.
    nu : float > 0 or "auto"
        Allowed average slack (the total slack is ``n_samples * nu``); see
        :func:`nu_from_svm` to pick it from an SVM's C (the paper's Adult
        setting, gamma = 0.05 and C = 1, gives nu = 0.011). "auto" (the
        estimator's default): the nu of an SVC(C=1) with the same kernel,
        measured on subsamples of 1,000, 2,000 and 4,000 rows (a smaller size:
        the geometric mean over its disjoint subsamples within the largest) and
        extrapolated to n by a least-squares power law
        (:func:`algorithms.sbp._defaults.auto_nu`; a9a: about 0.009, USPS and
        letter about 0.001). With ``gamma="scale"`` and ``n_iter="auto"`` it
        reaches SVC(C=1)'s test error within half a point on a9a, USPS and
        letter at a fraction of its fit time (docs/benchmarks.md, "SBP
        defaults, weights and sparse"; ``python -m algorithms.bench.sbp_defaults``).
    kernel : {"rbf", "linear"}, default "rbf"
    gamma : "scale", "median" or float > 0, default "scale"
        RBF width, ``exp(-gamma ||x - x'||^2)``; "scale" is scikit-learn SVC's
        ``1 / (n_features Var(X))``, "median" the median heuristic on a
        sample. Unused by the linear kernel.
    bias : bool, default True
        Unregularised bias by the two-basin water-fill (Section 3.6). With more
        than two classes each class's bias comes from its own two-basin call;
        ``bias=False`` uses one segmented water-fill call for all classes.
    n_iter : int, "auto" or None, default "auto"
        Iterations T. "auto": ``min(n, max(1000, ceil(60 sqrt(n))))`` with n the
        rows of positive weight (:func:`algorithms.sbp._defaults.auto_n_iter`);
        None: n (one kernel row per point on average); an int as given.
    batch_size : int, default 1
        Points drawn from under the water per iteration (1: Algorithm 1).
    class_weight : None, "balanced" or dict {label: weight}
        Per-class weights, times ``sample_weight`` (scikit-learn's rule); "balanced":
        ``n / (n_classes n_c)``.
    random_state : None, int or numpy Generator
    backend : "auto", "cpu", "cuda" or a Backend
    dtype : {"float32", "float64"} or None
        Compute dtype; default float32 whatever X's dtype (the library's policy,
        :func:`algorithms._boundary.precision.as_compute_dtype`): float64 input gives the
        float32 input's model, bit for bit. The responses, kernel rows and water
        levels of the loop run in it; the scale factors, ``||w||^2``, the averaged
        responses and coefficients and the returned model's level stay float64.
        Data whose squared distances would overflow float32 (``4 max|x|^2 d``
        over its max) stay float64 with a warning. "float64": full precision
        (a9a: about 1.2x the time, the same error within SBP's seed spread,
        docs/benchmarks.md "SBP: one dtype policy and the seed spread").
    callback : callable, optional
        Called after each iteration with a dict (iteration, gamma, norm, n_under,
        elapsed_s); returning True stops the run.
    verbose : int, default 0
        0: silent; 1: a progress bar on stderr over the iterations (host values
        only: no synchronisation per iteration on a GPU; :mod:`algorithms._engine.progress`).

    Returns
    -------
    KernelExpansionModel
        ``coef[:, k] = alpha_bar_k * y_k / gamma_k`` over the rows with a
        non-zero averaged coefficient, ``intercept = b_k / gamma_k``, where
        gamma_k (and b_k) are the level (and bias) of the averaged responses;
        both are in ``params["levels"]`` / ``params["biases"]``; the resolved
        ``nu``, ``gamma`` and ``n_iter`` in ``params``, the iterations run in
        ``params["n_iter_done"]``.

    Notes
    -----
    Per iteration: one water level (O(n) expected; O(n log n) with weights and
    the bias), one response update (O(n d batch_size)), O(n) bookkeeping.
    Averaged from iteration 1 on, as in Algorithm 1.
    """
    bk = resolve(backend, resolve_hint(X), y)
    xp = bk.xp
    X, centre = compute_array(check_X(X, bk, dtype, accept_sparse=True), bk, dtype, expansion=kernel)
    n = X.shape[0]
    classes, y_index = encode_classes(y, bk)
    if y_index.shape[0] != n:
        msg = f"`y` has {y_index.shape[0]} entries but `X` has {n} rows"
        raise ValueError(msg)
    y_host = to_numpy(y_index)
    weights = check_sample_weight(sample_weight, n)  # None: no weights, or all equal
    if class_weight is not None:  # times the sample weights, as scikit-learn combines them
        weights = class_row_weights(check_class_weight(class_weight, classes), classes, y_host,
                                    np.ones(n) if weights is None else weights)
    if weights is not None:
        check_class_weights(y_host, weights, classes)
        keep = weights > 0
        if not np.all(keep):  # weight 0 is the row removed
            rows = np.flatnonzero(keep)
            X = take_rows(X, bk.asarray(rows), xp)
            y_host, weights, n = y_host[rows], weights[rows], int(rows.size)
        if np.all(weights == weights[0]):
            weights = None  # equal weights: the unweighted fit, exactly
    if batch_size > n:  # a batch x batch block per iteration for no more points than n
        warn_user(f"`batch_size`={batch_size} is more than the {n} rows: clipped to {n}")
        batch_size = n
    seed = seed_from(random_state)
    if classes.size == 2:
        targets = np.where(y_host == 1, 1.0, -1.0)[None, :]
    else:
        targets = np.where(y_host[None, :] == np.arange(classes.size)[:, None], 1.0, -1.0)
    nu, gamma, n_iter = sbp_defaults(X, targets, weights, nu=nu, gamma=gamma, n_iter=n_iter, kernel=kernel,
                                     seed=seed, median=lambda: check_gamma("median", X, bk, seed))
    # Many small BLAS products (one per iteration): one BLAS thread (see single_threaded_blas).
    small = n * targets.shape[0] * batch_size * X.shape[1] < (1 << 24)
    with single_threaded_blas(bk, when=small):
        result = run(X, targets, bk, nu=nu, kernel=kernel, gamma=gamma, bias=bool(bias), n_iter=n_iter,
                     batch_size=batch_size, seed=seed, callback=callback, weights=weights, verbose=verbose)

    alpha_bar, levels, biases = result["alpha_bar"], result["levels"], result["biases"]
    n_out = targets.shape[0]
    support = np.flatnonzero(np.any(alpha_bar != 0, axis=0))
    if np.any(levels <= 0):
        msg = (f"the water level of the averaged responses is <= 0 for {int(np.sum(levels <= 0))} output(s): "
               "`nu` is too small for these data (or `n_iter` too short); the model keeps the unscaled expansion")
        warn_user(msg, RuntimeWarning)
    safe = np.where(levels > 0, levels, 1.0)
    coef = (alpha_bar[:, support] * targets[:, support] / safe[:, None]).T
    intercept = biases / safe
    params = {
        "nu": nu, "gamma": float(gamma), "bias": bool(bias), "weighted": weights is not None, "n_iter": n_iter,
        "batch_size": batch_size, "class_weight": jsonable_weights(class_weight), "seed": seed,
        "levels": levels.tolist(), "biases": biases.tolist(), "n_iter_done": result["n_iter_done"],
        "n_support": int(support.size), "n_outputs": n_out,
    }
    check_finite_fit({"coefficients": coef, "intercept": intercept}, X, xp, algorithm="SBP",
                     hint="lower `gamma`" + (", or pass `dtype='float64'`" if X.dtype == xp.float32 else ""))
    X_dtype = "float32" if X.dtype == xp.float32 else "float64"
    return KernelExpansionModel(
        algorithm="sbp",
        support_vectors=take_rows(X, bk.asarray(support.astype(np.int64)), xp),
        coef=xp.astype(bk.asarray(np.ascontiguousarray(coef)), X.dtype),
        intercept=xp.astype(bk.asarray(intercept), X.dtype),
        kernel=kernel,
        gamma=float(gamma),
        n_features_in=int(X.shape[1]),
        task="binary" if classes.size == 2 else "ovr",
        classes=classes,
        params=params,
        backend=bk.name,
        dtype=X_dtype,
        centre=centre,
    )



def decision_function(model, X, *, backend="auto"):
    """Decision values of ``X``: shape (n_samples,) for two classes, else
    (n_samples, n_classes); the expansion is evaluated in row chunks. The same as
    ``model.decision_function(X, backend=backend)`` (:meth:`KernelExpansionModel.decision_function`)."""
    return model.decision_function(X, backend=backend)


def predict(model, X, *, backend="auto"):
    """Predicted class labels for ``X``, on ``X``'s backend; the same as
    ``model.predict(X, backend=backend)``."""
    return model.predict(X, backend=backend)
