"""SBP: the kernelized Stochastic Batch Perceptron.

Cotter, Shalev-Shwartz, Srebro, "The Kernelized Stochastic Batch Perceptron"
(ICML 2012). The slack-constrained SVM (Problem 2.3)

    max_{||w|| <= 1}  f(w),   f(w) = max_{xi >= 0, 1'xi <= n nu} min_i y_i <w, phi(x_i)> + xi_i

is optimised by stochastic supergradient ascent (Algorithm 1 of Appendix B):
keep all responses ``c_i = y_i f(x_i)``; each iteration pours the slack volume
``n nu`` over them (the water level gamma, Section 3.2), samples a point under
water, adds ``eta_t`` to its coefficient, updates every response by one kernel
row (:func:`kbackends.ops.kernel_response_update`), tracks ``||w||^2``
incrementally and projects back onto the unit ball by rescaling. The result is
the averaged iterate ``alpha_bar / gamma(c_bar)``.

With ``bias=True`` (Section 3.6) the level and the unregularised bias come from
the two-basin water-fill (:func:`kbackends.ops.water_level_biased`). More than
two classes: one SBP per class (one-vs-rest), all classes' levels from one
segmented water-fill call per iteration.

Implementation notes
--------------------
* Rescaling is O(1): the coefficients and responses are stored unscaled with
  one scale factor ``s`` per class (``alpha = s a``, ``c = s c_raw``); the water
  level is scale-covariant (``level(s c, V) = s level(c, V / s)``), so neither
  is ever multiplied out during the run.
* The averaged iterate is O(1) amortised per changed coefficient: with
  ``S_t = s_1 + ... + s_t``, ``sum_t alpha_t = S_T a - B`` where ``B`` collects
  ``delta * S_(t0 - 1)`` for a change ``delta`` of ``a`` at iteration t0. The
  averaged responses (needed once, for the final level) cost one O(n) axpy per
  iteration, which the O(n d) response update dominates.
* ``batch_size > 1`` draws that many points from under the water per
  iteration and gives each ``eta_t / batch_size`` (the minibatch average of the
  supergradients); the response update is then one BLAS product per row chunk,
  several times cheaper per point than one kernel row at a time.

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import load_breast_cancer
>>> from algorithms import sbp
>>> X, y = load_breast_cancer(return_X_y=True)
>>> X = (X - X.mean(0)) / X.std(0)
>>> model = sbp.fit(X, y, nu=0.05, n_iter=2000, random_state=0)
>>> float((sbp.predict(model, X) == y).mean()) > 0.95
True
"""

from __future__ import annotations

import math
import time

import numpy as np

from kbackends import get_kernel, ops, resolve
from kbackends._xp_utils import to_numpy

from ._estimator import FunctionalClassifier
from .distributed import is_dask_array, map_rows
from ._model import KernelExpansionModel
from ._validation import (
    check_choice,
    check_gamma,
    check_n_features,
    check_nonneg_float,
    check_positive_int,
    check_X,
    encode_classes,
    seed_from,
)

__all__ = ["fit", "decision_function", "predict", "nu_from_svm", "SBPClassifier", "KERNELS"]

KERNELS = ("rbf", "linear")
# Renormalise the stored (unscaled) coefficients when the scale factor falls below
# this, so they never overflow; rare (each projection shrinks s by 1 / ||w||).
_RENORMALISE_BELOW = 1e-6


def fit(
    X,
    y,
    *,
    nu,
    kernel="rbf",
    gamma="median",
    bias=True,
    n_iter=None,
    batch_size=1,
    random_state=None,
    backend="auto",
    dtype=None,
    callback=None,
):
    """Fit a kernel SVM by the Stochastic Batch Perceptron.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
    y : array of shape (n_samples,)
        Class labels; more than two classes: one-vs-rest.
    nu : float > 0
        Allowed average slack (the total slack is ``n_samples * nu``); see
        :func:`nu_from_svm` to pick it from an SVM's C (the paper's Adult
        setting, gamma = 0.05 and C = 1, gives nu = 0.011).
    kernel : {"rbf", "linear"}, default "rbf"
    gamma : "median" or float > 0, default "median"
        RBF width, ``exp(-gamma ||x - x'||^2)``; "median" is the median
        heuristic on a sample. Unused by the linear kernel.
    bias : bool, default True
        Unregularised bias by the two-basin water-fill (Section 3.6). With more
        than two classes each class's bias comes from its own two-basin call;
        ``bias=False`` uses one segmented water-fill call for all classes.
    n_iter : int, optional
        Iterations T; default ``n_samples`` (one kernel row per point on average).
    batch_size : int, default 1
        Points drawn from under the water per iteration (1: Algorithm 1).
    random_state : None, int or numpy Generator
    backend : "auto", "cpu", "cuda" or a Backend
    dtype : float dtype, optional
    callback : callable, optional
        Called after each iteration with a dict (iteration, gamma, norm, n_under,
        elapsed_s); returning True stops the run.

    Returns
    -------
    KernelExpansionModel
        ``coef[:, k] = alpha_bar_k * y_k / gamma_k`` over the rows with a
        non-zero averaged coefficient, ``intercept = b_k / gamma_k``, where
        gamma_k (and b_k) are the level (and bias) of the averaged responses;
        both are in ``params["levels"]`` / ``params["biases"]``.

    Notes
    -----
    Per iteration: one water level (O(n) expected), one response update
    (O(n d batch_size)), O(n) bookkeeping. Averaged from iteration 1 on, as in
    Algorithm 1.
    """
    bk = resolve(backend, X, y)
    xp = bk.xp
    X = check_X(X, bk, dtype)
    check_choice("kernel", kernel, KERNELS)
    nu = check_nonneg_float("nu", nu, positive=True)
    batch_size = check_positive_int("batch_size", batch_size)
    if not isinstance(bias, (bool, np.bool_)):
        msg = f"`bias` must be True or False, got {bias!r}"
        raise TypeError(msg)
    if callback is not None and not callable(callback):
        msg = f"`callback` must be callable or None, got {type(callback).__name__}"
        raise TypeError(msg)
    n = X.shape[0]
    classes, y_index = encode_classes(y, bk)
    if y_index.shape[0] != n:
        msg = f"`y` has {y_index.shape[0]} entries but `X` has {n} rows"
        raise ValueError(msg)
    n_iter = n if n_iter is None else check_positive_int("n_iter", n_iter)
    seed = seed_from(random_state)
    gamma = check_gamma(gamma, X, bk, seed) if kernel == "rbf" else 1.0

    y_host = to_numpy(y_index)
    if classes.size == 2:
        targets = np.where(y_host == 1, 1.0, -1.0)[None, :]
    else:
        targets = np.where(y_host[None, :] == np.arange(classes.size)[:, None], 1.0, -1.0)
    # Many small BLAS products (one per iteration): waking BLAS threads for each
    # costs more than it saves, and on a loaded machine a descheduled thread
    # stalls every join (measured 26 ms vs 9 ms per letter iteration).
    small = n * targets.shape[0] * batch_size * X.shape[1] < (1 << 24)
    with _blas_threads(1 if small and bk.name == "cpu" else None):
        result = _run(X, targets, bk, nu=nu, kernel=kernel, gamma=gamma, bias=bool(bias), n_iter=n_iter,
                      batch_size=batch_size, seed=seed, callback=callback)

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
        "nu": nu, "bias": bool(bias), "n_iter": n_iter, "batch_size": batch_size, "seed": seed,
        "levels": levels.tolist(), "biases": biases.tolist(), "n_iter_done": result["n_iter_done"],
        "n_support": int(support.size), "n_outputs": n_out,
    }
    X_dtype = "float32" if X.dtype == xp.float32 else "float64"
    return KernelExpansionModel(
        algorithm="sbp",
        support_vectors=xp.take(X, bk.asarray(support.astype(np.int64)), axis=0),
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


def _blas_threads(limit):
    """A context limiting BLAS threads to ``limit`` (None: unchanged)."""
    import contextlib

    if limit is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=limit, user_api="blas")


def _self_kernel(X, xp, kernel):
    """``K(x_i, x_i)`` for every row: 1 for the RBF kernel, ``||x_i||^2`` for the linear."""
    if kernel == "rbf":
        return np.ones(X.shape[0])
    return np.asarray(to_numpy(xp.sum(X * X, axis=1)), dtype=np.float64)


def _batch_kernel(S, xp, kernel, gamma):
    """The (m, m) kernel matrix among the rows of S, on the host in float64."""
    S = to_numpy(S).astype(np.float64)
    G = S @ S.T
    if kernel == "rbf":
        sq = np.diag(G)
        G = np.exp(-gamma * np.maximum(sq[:, None] + sq[None, :] - 2.0 * G, 0.0))
    return G


def _run(X, targets, bk, *, nu, kernel, gamma, bias, n_iter, batch_size, seed, callback):
    """Algorithm 1 for ``K = targets.shape[0]`` one-vs-rest problems sharing X.

    Host state (float64, (K, n)): unscaled coefficients ``a``, the averaging
    corrections ``B``; device state: the unscaled responses ``C`` (X's dtype)
    and the averaged-response accumulator (float64), both (K, n). With one
    problem the response update is the fused ``kernel_response_update`` kernel;
    with several, all classes' sampled rows share one kernel block
    ``K(X, X[rows])`` (a BLAS product per row chunk) and each class takes its
    own columns, so an iteration costs one pass over X, not K.
    """
    xp = bk.xp
    n = X.shape[0]
    n_out = targets.shape[0]
    volume = n * nu
    rng = np.random.default_rng(seed)
    self_k = _self_kernel(X, xp, kernel)
    eta0 = 1.0 / math.sqrt(max(float(self_k.max()), 1e-300))
    Y = xp.astype(bk.asarray(targets), X.dtype)  # (K, n)
    C = xp.zeros((n_out, n), dtype=X.dtype)
    C_bar = xp.zeros((n_out, n), dtype=xp.float64)
    a = np.zeros((n_out, n))
    B = np.zeros((n_out, n))
    flushed = np.zeros((n_out, n))
    S = np.zeros(n_out)  # running sums of the scale factors since the last renormalisation
    s = np.ones(n_out)
    r2 = np.zeros(n_out)  # ||w_k||^2, true units
    offsets = bk.asarray(np.arange(n_out + 1, dtype=np.int64) * n)
    rows_k = np.repeat(np.arange(n_out), batch_size)
    # The inputs were validated once in ``fit``: the loop calls the registered
    # kernels directly (the public ops would re-validate every iteration, about
    # as long as the work itself at USPS size).
    level_kernel = get_kernel("water_level", bk)
    biased_kernel = get_kernel("water_level_biased", bk)
    respond = get_kernel("kernel_response_update", bk)
    start = time.perf_counter()
    t_done = 0
    for t in range(1, n_iter + 1):
        eta = eta0 / math.sqrt(t)
        step = eta / batch_size
        # water levels (raw units: level(s c, V) = s level(c, V / s)) of all classes
        offs = np.zeros(n_out)
        if bias:
            levels = np.empty(n_out)
            for k in range(n_out):
                g, b = biased_kernel(C[k, :], Y[k, :], float(volume / s[k]), xp=xp)
                levels[k], offs[k] = float(g), float(b)
            heights = C + bk.asarray(offs)[:, None] * Y if n_out > 1 else C + float(offs[0]) * Y
        else:
            flat = xp.reshape(C, (n_out * n,))
            levels = np.asarray(to_numpy(level_kernel(flat, bk.asarray(volume / s), offsets, xp=xp)), dtype=np.float64)
            heights = C
        # one uniform draw per class (batch_size of them) from under the water
        # (the mask stays on the backend: only the counts and the drawn rows cross to the host)
        level_col = xp.astype(bk.asarray(levels), X.dtype)[:, None]
        under = heights < level_col
        counts = to_numpy(xp.sum(xp.astype(under, xp.int64), axis=1))
        if np.any(counts == 0):  # volume too small to cover anything strictly: the minima
            under = heights <= level_col
            counts = to_numpy(xp.sum(xp.astype(under, xp.int64), axis=1))
        ranks = rng.integers(0, counts[:, None], (n_out, batch_size))
        idx = np.empty((n_out, batch_size), dtype=np.int64)
        for k in range(n_out):
            rows_under = xp.nonzero(under[k, :])[0]
            idx[k] = to_numpy(xp.take(rows_under, bk.asarray(ranks[k]), axis=0))
        # ||w + step sum_j y_j phi(x_j)||^2 with c_j = s c_raw_j = y_j <w, phi(x_j)>
        flat_at = bk.asarray(rows_k * n + idx.ravel())
        C_at = np.asarray(to_numpy(xp.take(xp.reshape(C, (n_out * n,)), flat_at, axis=0)), dtype=np.float64)
        C_at = C_at.reshape(n_out, batch_size) * s[:, None]
        if batch_size == 1:
            quad = self_k[idx[:, 0]]
        else:
            quad = np.empty(n_out)
            for k in range(n_out):
                yb = targets[k, idx[k]]
                quad[k] = yb @ _batch_kernel(xp.take(X, bk.asarray(idx[k]), axis=0), xp, kernel, gamma) @ yb
        r2 = r2 + 2.0 * step * C_at.sum(axis=1) + step * step * quad
        raw_step = step / s  # (K,)
        coef = raw_step[:, None] * targets[np.arange(n_out)[:, None], idx]  # (K, batch): step * y[idx] / s
        if n_out == 1:
            w = xp.astype(bk.asarray(coef[0]), X.dtype)
            C = xp.reshape(respond(X, bk.asarray(idx[0]), w, Y[0, :], C[0, :], xp=xp, kernel=kernel, gamma=float(gamma)),
                           (1, n))
        else:
            C = C + Y * _block_response(X, bk.asarray(idx.ravel()), coef, xp, bk, kernel, gamma)
        np.add.at(a, (rows_k, idx.ravel()), np.repeat(raw_step, batch_size))
        np.add.at(B, (rows_k, idx.ravel()), np.repeat(raw_step * S, batch_size))
        over = r2 > 1.0
        s = np.where(over, s / np.sqrt(np.maximum(r2, 1.0)), s)
        r2 = np.where(over, 1.0, r2)
        S = S + s
        C_bar += bk.asarray(s)[:, None] * xp.astype(C, xp.float64)
        if np.any(s < _RENORMALISE_BELOW):
            flushed += S[:, None] * a - B
            a *= s[:, None]
            C = C * xp.astype(bk.asarray(s), X.dtype)[:, None]
            B[:] = 0.0
            S[:] = 0.0
            s = np.ones(n_out)
        t_done = t
        if callback is not None:
            info = {"iteration": t, "gamma": (levels * s).tolist(), "norm": np.sqrt(r2).tolist(),
                    "n_under": int(counts.sum()), "elapsed_s": time.perf_counter() - start}
            if callback(info):
                break

    alpha_bar = (flushed + S[:, None] * a - B) / t_done
    levels = np.empty(n_out)
    biases = np.zeros(n_out)
    for k in range(n_out):
        cb = xp.astype(C_bar[k, :] / t_done, X.dtype)
        if bias:
            g, b = ops.water_level_biased(cb, Y[k, :], volume, check_finite=False)
            levels[k], biases[k] = float(g), float(b)
        else:
            levels[k] = float(ops.water_level(cb, volume, check_finite=False))
    return {"alpha_bar": alpha_bar, "levels": levels, "biases": biases, "n_iter_done": t_done}


def _block_response(X, rows, coef, xp, bk, kernel, gamma, chunk_elements=1 << 22):
    """``(K(X, X[rows]) @ W).T`` of shape (K, n) where W (K * batch, K) is block
    diagonal with class k's coefficients ``coef[k]`` in its own rows: every
    class's sampled rows share one kernel block per row chunk."""
    n_out, batch = coef.shape
    Srows = xp.take(X, rows, axis=0)
    W = np.zeros((n_out * batch, n_out))
    W[np.arange(n_out * batch), np.repeat(np.arange(n_out), batch)] = coef.ravel()
    W = xp.astype(bk.asarray(W), X.dtype)
    sq_s = xp.sum(Srows * Srows, axis=1)
    n = X.shape[0]
    step = max(1, chunk_elements // Srows.shape[0])
    parts = []
    for begin in range(0, n, step):
        Xc = X[begin : min(n, begin + step), :]
        Kc = Xc @ Srows.T
        if kernel == "rbf":
            sq = xp.sum(Xc * Xc, axis=1)
            Kc = xp.exp(-gamma * xp.maximum(sq[:, None] + sq_s[None, :] - 2.0 * Kc, 0.0))
        parts.append(Kc @ W)
    out = parts[0] if len(parts) == 1 else xp.concat(parts, axis=0)
    return out.T


def decision_function(model, X, *, backend="auto"):
    """Decision values of ``X``: shape (n_samples,) for two classes, else
    (n_samples, n_classes); the expansion is evaluated in row chunks."""
    if is_dask_array(X):  # lazily, chunk by chunk: a dask array out
        return map_rows(decision_function, X, model)
    bk = resolve(backend, X)
    X = check_X(X, bk, model.dtype if not hasattr(X, "dtype") else None)
    check_n_features(X, model.n_features_in)
    f = model.raw_decision(X, bk)
    return f[:, 0] if f.shape[1] == 1 else f


def predict(model, X, *, backend="auto"):
    """Predicted class labels for ``X``, on ``X``'s backend."""
    if is_dask_array(X):
        return map_rows(predict, X, model)
    bk = resolve(backend, X)
    f = decision_function(model, X, backend=bk)
    xp = bk.xp
    classes = bk.asarray(np.asarray(model.classes))
    index = xp.astype(f > 0, xp.int64) if model.task == "binary" else xp.argmax(f, axis=1)
    return xp.take(classes, index, axis=0)


def nu_from_svm(X, y, *, C=1.0, kernel="rbf", gamma="median", svm=None, max_samples=2000, random_state=0):
    """The SBP's ``nu`` matching a C-SVM, by the paper's relation (Section 5).

    For the optimum ``w*`` of the regularised SVM (hinge loss, ``C``), the
    slack-constrained problem with

        nu = mean_i hinge(y_i <w*, phi(x_i)>) / ||w*||

    has ``w* / ||w*||`` as its solution (Hazan et al. 2011, Lemma 2.1; Cotter et
    al. 2012 derive their nu from lambda this way). The relation needs ``w*``:
    pass a fitted binary scikit-learn ``SVC`` as ``svm``, or let this function fit
    one on at most ``max_samples`` rows of (X, y) (a cheap estimate; the hinge
    mean and the norm both settle quickly with the sample size for a fixed
    C). With ``gamma`` given as a float it is used for the SVC as is.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
    y : array of shape (n_samples,), two classes
    C : float > 0, default 1.0
    kernel : {"rbf", "linear"}
    gamma : "median" or float
    svm : fitted ``sklearn.svm.SVC``, optional
    max_samples : int, default 2000
    random_state : int

    Returns
    -------
    float

    Examples
    --------
    The paper's Adult setting (sigma^2 = 10, i.e. gamma = 0.05, lambda = 1/n,
    i.e. C = 1) gives nu = 1.10e-2 in its Table 2.
    """
    from sklearn.svm import SVC

    X = np.asarray(to_numpy(X) if not isinstance(X, np.ndarray) else X, dtype=np.float64)
    y = np.asarray(to_numpy(y) if not isinstance(y, np.ndarray) else y)
    C = check_nonneg_float("C", C, positive=True)
    check_choice("kernel", kernel, KERNELS)
    if svm is None:
        rng = np.random.default_rng(random_state)
        rows = rng.choice(X.shape[0], size=min(X.shape[0], max_samples), replace=False)
        X, y = X[rows], y[rows]
        if isinstance(gamma, str):
            gamma = check_gamma(gamma, X, resolve("cpu"), int(random_state))
        svm = SVC(C=C, kernel=kernel, gamma=gamma if kernel == "rbf" else "scale").fit(X, y)
    if len(svm.classes_) != 2:
        msg = f"`y` must have two classes for nu_from_svm, got {len(svm.classes_)}"
        raise ValueError(msg)
    sv = svm.support_vectors_
    dual = svm.dual_coef_[0]
    K = sv @ sv.T
    if svm.kernel == "rbf":
        sq = np.einsum("ij,ij->i", sv, sv)
        K = np.exp(-svm._gamma * np.maximum(sq[:, None] + sq[None, :] - 2.0 * K, 0.0))
    norm = math.sqrt(max(float(dual @ K @ dual), 1e-300))
    signs = np.where(y == svm.classes_[1], 1.0, -1.0)
    hinge = np.maximum(0.0, 1.0 - signs * svm.decision_function(X))
    return float(hinge.mean() / norm)


class SBPClassifier(FunctionalClassifier):
    """Kernel SVM by the Stochastic Batch Perceptron, as a scikit-learn estimator.

    Parameters as in :func:`algorithms.sbp.fit`. Accepts NumPy or CuPy ``X``;
    outputs follow the input's namespace.

    Attributes
    ----------
    model_ : KernelExpansionModel
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from algorithms import SBPClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = SBPClassifier(nu=0.05, n_iter=1500, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True
    """

    _fit = staticmethod(fit)
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)

    def __init__(self, *, nu=0.01, kernel="rbf", gamma="median", bias=True, n_iter=None, batch_size=1,
                 random_state=None, backend="auto", dtype=None):
        self.nu = nu
        self.kernel = kernel
        self.gamma = gamma
        self.bias = bias
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.random_state = random_state
        self.backend = backend
        self.dtype = dtype

