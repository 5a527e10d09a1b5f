"""sbp: the hyper-parameters, ``fit`` and prediction (see the package docstring)."""

from __future__ import annotations

import math
import time

import numpy as np

from kbackends import get_kernel, ops, resolve, sync_free, to_numpy
from kbackends.ops import RESPONSE_KERNELS, resolve_hint

from .._models.estimator import FunctionalClassifier, WeightedFit
from .._boundary.finite import check_finite_fit
from .._models.model import KernelExpansionModel
from .._models.calibration import with_probability
from .._engine.progress import progress_bar
from .._boundary.fit_plan import check_sample_weight
from ._defaults import AUTO_ITER_MIN, AUTO_ITER_PER_ROOT, sbp_defaults
from ._steps import batch_quad, block_response, dense_rows, replay, scalar_as, self_kernel, squared_norms
from .._boundary.sparse import is_sparse, take_rows
from ._svm_nu import nu_from_svm  # noqa: F401 (public here: sbp.nu_from_svm)
from .._engine.threads import single_threaded_blas
from .._boundary.params import (
    REQUIRED, Param, ParamTable, boolean, common, common_tail, either, integer, none, options, real,
)
from .._boundary.validation import (
    as_compute_dtype,
    check_gamma,
    check_X,
    encode_classes,
    seed_from,
)


KERNELS = RESPONSE_KERNELS  # the response kernels' table (kbackends.ops)
# Renormalise the stored (unscaled) coefficients when the scale factor falls below
# this, so they never overflow; rare (each projection shrinks s by 1 / ||w||).
_RENORMALISE_BELOW = 1e-6
# The loop's uniform draws cross to the device this many iterations at a time (one
# host -> device copy, not one per iteration; the same numbers as drawn one by one).
_DRAW_BLOCK = 1024

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
    *common_tail(),
)


@PARAMS.entry
def fit(X, y, sample_weight=None, *, nu, kernel, gamma, bias, n_iter, batch_size, random_state, backend, dtype,
        callback, verbose):
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
        measured on nested subsamples of 1,000, 2,000 and 4,000 rows and
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
    random_state : None, int or numpy Generator
    backend : "auto", "cpu", "cuda" or a Backend
    dtype : {"float32", "float64"} or None
        Compute dtype; default float32 whatever X's dtype (the library's policy,
        :func:`algorithms._boundary.validation.as_compute_dtype`): float64 input gives the
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
    X = as_compute_dtype(check_X(X, bk, dtype, accept_sparse=True), bk, dtype)
    n = X.shape[0]
    classes, y_index = encode_classes(y, bk)
    if y_index.shape[0] != n:
        msg = f"`y` has {y_index.shape[0]} entries but `X` has {n} rows"
        raise ValueError(msg)
    y_host = to_numpy(y_index)
    weights = check_sample_weight(sample_weight, n)  # None: no weights, or all equal
    if weights is not None:
        keep = weights > 0
        if not np.all(keep):  # weight 0 is the row removed
            rows = np.flatnonzero(keep)
            X = take_rows(X, bk.asarray(rows), xp)
            y_host, weights, n = y_host[rows], weights[rows], int(rows.size)
        if np.all(weights == weights[0]):
            weights = None  # equal weights: the unweighted fit, exactly
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
        result = _run(X, targets, bk, nu=nu, kernel=kernel, gamma=gamma, bias=bool(bias), n_iter=n_iter,
                      batch_size=batch_size, seed=seed, callback=callback, weights=weights, verbose=verbose)

    alpha_bar, levels, biases = result["alpha_bar"], result["levels"], result["biases"]
    n_out = targets.shape[0]
    support = np.flatnonzero(np.any(alpha_bar != 0, axis=0))
    if np.any(levels <= 0):
        import warnings

        msg = (f"the water level of the averaged responses is <= 0 for {int(np.sum(levels <= 0))} output(s): "
               "`nu` is too small for these data (or `n_iter` too short); the model keeps the unscaled expansion")
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
    safe = np.where(levels > 0, levels, 1.0)
    coef = (alpha_bar[:, support] * targets[:, support] / safe[:, None]).T
    intercept = biases / safe
    params = {
        "nu": nu, "gamma": float(gamma), "bias": bool(bias), "weighted": weights is not None, "n_iter": n_iter,
        "batch_size": batch_size, "seed": seed,
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
    )


def _run(X, targets, bk, *, nu, kernel, gamma, bias, n_iter, batch_size, seed, callback, weights=None, verbose=0):
    """Algorithm 1 for ``K = targets.shape[0]`` one-vs-rest problems sharing X.

    The loop keeps everything on the backend, in ``kbackends.sync_free``: the
    unscaled responses ``C`` (X's dtype) and the averaged-response accumulator
    (float64), both (K, n); the scale factors ``s`` and ``||w||^2`` (float64, (K,));
    the water levels; the drawn rows (the host's uniforms cross to the device
    ``_DRAW_BLOCK`` iterations at a time, and the rank-th row under water is
    found by a search on the cumulative count of the mask). The rows and the scale factors of every
    iteration are logged on the device, and the coefficients (unscaled ``a``,
    averaging corrections ``B``, float64 on the host) are accumulated from the
    log after the loop, in the order the loop would have. With one problem the
    response update is the fused ``kernel_response_update`` kernel; with several,
    all classes' sampled rows share one kernel block ``K(X, X[rows])`` (a BLAS
    product per row chunk) and each class takes its own columns, so an
    iteration costs one pass over X, not K.

    ``weights`` (host, positive, not all equal) make each point a water column of
    its width and draw the rows under water with probability proportional to it:
    a search on the running sum of the weights under water instead of the count.
    """
    xp = bk.xp
    f64, i64 = xp.float64, xp.int64
    n = X.shape[0]
    n_out = targets.shape[0]
    volume = n * nu if weights is None else float(weights.sum()) * nu
    rng = np.random.default_rng(seed)
    self_k = self_kernel(X, xp, kernel)
    eta0 = 1.0 / math.sqrt(max(float(self_k.max()), 1e-300))
    quad_self = bk.asarray(self_k)  # float64 (n,)
    Y64 = bk.asarray(targets)  # (K, n) float64: the labels, encoded once on the device
    Y = xp.astype(Y64, X.dtype)
    Y_flat = xp.reshape(Y64, (n_out * n,))
    C = xp.zeros((n_out, n), dtype=X.dtype)
    C_bar = xp.zeros((n_out, n), dtype=f64)
    s = xp.ones((n_out,), dtype=f64)
    r2 = xp.zeros((n_out,), dtype=f64)  # ||w_k||^2, true units
    s_log = xp.zeros((n_iter, n_out), dtype=f64)
    idx_log = xp.zeros((n_iter, n_out, batch_size), dtype=i64)
    offsets = bk.asarray(np.arange(n_out + 1, dtype=np.int64) * n)
    class_start = offsets[:-1]
    # Block-diagonal pattern of the multi-class response update (row j of class j // batch_size).
    pattern = xp.astype(bk.asarray(np.repeat(np.eye(n_out), batch_size, axis=0)), f64)
    # On the host (NumPy) a Python branch is cheaper than computing both sides with `where`.
    on_host = isinstance(C, np.ndarray)
    # The inputs were validated once in ``fit``: the loop calls the registered
    # kernels directly (the public ops would re-validate every iteration, about
    # as long as the work itself at USPS size).
    if weights is None:
        level_kernel = get_kernel("water_level", bk)
        biased_kernel = get_kernel("water_level_biased", bk)
    else:
        W = bk.asarray(weights)  # (n,) float64
        W_flat = xp.reshape(xp.stack([W] * n_out), (n_out * n,))
        weighted_level = get_kernel("water_level_weighted", bk)
        weighted_biased = get_kernel("water_level_biased_weighted", bk)

        def level_kernel(c, volumes, offs, *, xp):
            return weighted_level(c, W_flat, volumes, offs, xp=xp)

        def biased_kernel(c, y, volume, *, xp):
            return weighted_biased(c, y, W, volume, xp=xp)
    respond = get_kernel("kernel_response_update", bk)
    # Binary, unweighted, one draw, with the bias (the default): the steps around the
    # response update as two kernels (kernels/sbp: one launch each on cuda, ~40 array calls else).
    fused = n_out == 1 and weights is None and batch_size == 1 and bias
    draw_step, average = get_kernel("sbp_draw_step", bk), get_kernel("sbp_average", bk)
    # CSR X: the rows' squared norms once (on its device), the kernel reads each row's non-zeros
    sparse_extra = {"sq_norms": xp.astype(squared_norms(X, xp), X.dtype)} if is_sparse(X) else {}
    start = time.perf_counter()
    t_done = 0
    bar = progress_bar(verbose, n_iter, "sbp")
    with sync_free():
        for t in range(1, n_iter + 1):
            eta = eta0 / math.sqrt(t)
            step = eta / batch_size
            if (t - 1) % _DRAW_BLOCK == 0:
                draws = bk.asarray(rng.random((min(_DRAW_BLOCK, n_iter - t + 1), n_out, batch_size)))
            uniform = draws[(t - 1) % _DRAW_BLOCK, ...]
            if fused:  # the binary default: the level, the draw's step, the update, the average
                levels, b = biased_kernel(C[0, :], Y[0, :], volume / s[0], xp=xp)
                idx, w, scale, s, r2, counts = draw_step(
                    C[0, :], Y[0, :], quad_self, scalar_as(xp, levels, X.dtype), scalar_as(xp, b, X.dtype),
                    uniform[0, :], s, r2, idx_log[t - 1, 0, :], s_log[t - 1, :], xp=xp, step=step,
                    renormalise_below=_RENORMALISE_BELOW)
                c = respond(X, idx, w, Y[0, :], C[0, :], xp=xp, kernel=kernel, gamma=float(gamma), **sparse_extra)
                c_bar, c = average(C_bar[0, :], c, scale, xp=xp, renormalise_below=_RENORMALISE_BELOW)
                C, C_bar = xp.reshape(c, (1, n)), xp.reshape(c_bar, (1, n))
            else:
                # water levels (raw units: level(s c, V) = s level(c, V / s)) of all classes
                if bias:
                    found = [biased_kernel(C[k, :], Y[k, :], volume / s[k], xp=xp) for k in range(n_out)]
                    levels = xp.stack([scalar_as(xp, g, f64) for g, _ in found])
                    offs = xp.stack([scalar_as(xp, b, f64) for _, b in found])
                    heights = C + offs[:, None] * Y if n_out > 1 else C + xp.astype(offs, X.dtype)[0] * Y
                else:
                    flat = xp.reshape(C, (n_out * n,))
                    levels = xp.astype(level_kernel(flat, volume / s, offsets, xp=xp), f64)
                    heights = C
                # batch_size uniform draws per class from under the water
                level_col = xp.astype(levels, X.dtype)[:, None]
                under = heights < level_col
                counts = xp.sum(xp.astype(under, i64), axis=1)
                # volume too small to cover anything strictly (in some class): the minima
                empty = xp.any(counts == 0)
                if not on_host or bool(empty):
                    at_most = heights <= level_col
                    under = xp.where(empty, at_most, under)
                    counts = xp.where(empty, xp.sum(xp.astype(at_most, i64), axis=1), counts)
                if weights is None:
                    ranks = xp.minimum(xp.astype(uniform * xp.astype(counts, f64)[:, None], i64), counts[:, None] - 1)
                    # the (rank + 1)-th row under water of class k: a search on the running count
                    running = xp.cumulative_sum(xp.reshape(xp.astype(under, i64), (n_out * n,)))
                    before = xp.cumulative_sum(counts) - counts  # rows under water in earlier classes
                    flat_at = xp.searchsorted(running, xp.reshape(before[:, None] + ranks + 1, (n_out * batch_size,)))
                else:
                    # the row where the running weight under water passes a uniform point of class k's total
                    running = xp.cumulative_sum(xp.where(xp.reshape(under, (n_out * n,)), W_flat, 0.0))
                    ends = xp.take(running, offsets[1:] - 1)
                    before = xp.concat((xp.zeros((1,), dtype=f64), ends[:-1]))
                    target = before[:, None] + uniform * (ends - before)[:, None]
                    flat_at = xp.searchsorted(running, xp.reshape(target, (n_out * batch_size,)), side="right")
                    flat_at = xp.minimum(flat_at, xp.reshape(xp.stack([offsets[1:] - 1] * batch_size, axis=1),
                                                             (n_out * batch_size,)))
                idx = xp.reshape(flat_at, (n_out, batch_size)) - class_start[:, None]
                idx_log[t - 1, :, :] = idx
                # ||w + step sum_j y_j phi(x_j)||^2 with c_j = s c_raw_j = y_j <w, phi(x_j)>
                C_at = xp.reshape(xp.astype(xp.take(xp.reshape(C, (n_out * n,)), flat_at), f64), (n_out, batch_size))
                C_at = C_at * s[:, None]
                if batch_size == 1:
                    quad = xp.take(quad_self, idx[:, 0])
                else:
                    quad = xp.stack([
                        batch_quad(dense_rows(X, idx[k, :], xp, bk), xp.take(Y64[k, :], idx[k, :]), xp, kernel, gamma)
                        for k in range(n_out)
                    ])
                r2 = r2 + 2.0 * step * xp.sum(C_at, axis=1) + step * step * quad
                raw_step = step / s  # (K,)
                coef = raw_step[:, None] * xp.reshape(xp.take(Y_flat, flat_at), (n_out, batch_size))  # step y / s
                if n_out == 1:
                    w = xp.astype(coef[0, :], X.dtype)
                    C = xp.reshape(respond(X, idx[0, :], w, Y[0, :], C[0, :], xp=xp, kernel=kernel, gamma=float(gamma),
                                           **sparse_extra), (1, n))
                else:
                    rows = xp.reshape(idx, (n_out * batch_size,))
                    C = C + Y * block_response(X, rows, coef, pattern, xp, kernel, gamma, bk)
                over = r2 > 1.0
                s = xp.where(over, s / xp.sqrt(xp.maximum(r2, 1.0)), s)
                r2 = xp.where(over, xp.ones_like(r2), r2)
                s_log[t - 1, :] = s
                C_bar = C_bar + s[:, None] * xp.astype(C, f64)
                # Renormalise (all classes) when a scale factor gets small; the host replays it on a, B.
                renormalise = xp.any(s < _RENORMALISE_BELOW)
                if not on_host or bool(renormalise):
                    C = xp.where(renormalise, C * xp.astype(s, X.dtype)[:, None], C)
                    s = xp.where(renormalise, xp.ones_like(s), s)
            t_done = t
            if bar is not None:  # the count only: every figure of the loop is on the device
                bar.update(t)
            if callback is not None:  # the callback's figures are read on the host: it syncs
                with sync_free(False):
                    info = {"iteration": t, "gamma": to_numpy(levels * s).tolist(),
                            "norm": to_numpy(xp.sqrt(r2)).tolist(), "n_under": int(xp.sum(counts)),
                            "elapsed_s": time.perf_counter() - start}
                    if callback(info):
                        break

    if bar is not None:
        bar.close()
    alpha_bar = replay(to_numpy(idx_log)[:t_done], to_numpy(s_log)[:t_done], n, eta0, batch_size,
                       _RENORMALISE_BELOW)
    levels = np.empty(n_out)
    biases = np.zeros(n_out)
    for k in range(n_out):
        cb = C_bar[k, :] / t_done  # float64: the averaged model's level and bias in full precision
        w = None if weights is None else W
        if bias:
            g, b = ops.water_level_biased(cb, Y64[k, :], volume, weights=w, check_finite=False)
            levels[k], biases[k] = float(g), float(b)
        else:
            levels[k] = float(ops.water_level(cb, volume, weights=w, check_finite=False))
    return {"alpha_bar": alpha_bar, "levels": levels, "biases": biases, "n_iter_done": t_done}


def decision_function(model, X, *, backend="auto"):
    """Decision values of ``X``: shape (n_samples,) for two classes, else
    (n_samples, n_classes); the expansion is evaluated in row chunks. The same as
    ``model.decision_function(X, backend=backend)`` (:meth:`KernelExpansionModel.decision_function`)."""
    return model.decision_function(X, backend=backend)


def predict(model, X, *, backend="auto"):
    """Predicted class labels for ``X``, on ``X``'s backend; the same as
    ``model.predict(X, backend=backend)``."""
    return model.predict(X, backend=backend)


class SBPClassifier(WeightedFit, FunctionalClassifier):
    """Kernel SVM by the Stochastic Batch Perceptron, as a scikit-learn estimator.

    Parameters as in :func:`algorithms.sbp.fit`, and ``probability`` (bool, default
    False): fit on 90% of the rows and Platt's sigmoid on the other 10%, for
    ``predict_proba`` (:mod:`algorithms._models.calibration`). Accepts NumPy or CuPy ``X``;
    outputs follow the input's namespace.

    Attributes
    ----------
    model_ : KernelExpansionModel
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    n_iter_ : int
        Iterations run (``n_iter="auto"``: chosen from the data).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from algorithms import SBPClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = SBPClassifier(nu=0.05, n_iter=1500, random_state=0).fit(X, y)
    >>> clf.n_iter_
    1500
    >>> clf.score(X, y) > 0.9
    True
    """

    _params = with_probability(PARAMS)  # + `probability` (algorithms._models.calibration)
    _accept_sparse = True  # CSR X (scipy; cupyx on cuda): the sparse response kernels, sparse support vectors
    _fit = staticmethod(fit)
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)
