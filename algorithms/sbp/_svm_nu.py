"""The relation between a C-SVM and SBP's nu (Cotter et al. 2012, Sec. 5): ``nu`` is the
SVM solution's mean hinge loss over its norm, so an SBP run with that ``nu`` reaches the
same margin trade-off as the SVM with that ``C``."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse

from kbackends import resolve, to_numpy
from kbackends.ops import RESPONSE_KERNELS as KERNELS

from .._boundary.validation import check_choice, check_gamma, check_nonneg_float


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
    X : array of shape (n_samples, n_features), or scipy.sparse
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

    if scipy.sparse.issparse(X):  # a LIBSVM file's rows stay sparse (SVC and the relation take them)
        X = scipy.sparse.csr_matrix(X, dtype=np.float64)
    else:
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
    return nu_of_svm(svm, X, y)


def nu_of_svm(svm, X, y, sample_weight=None):
    """The relation itself: ``nu = mean_i hinge(y_i f(x_i)) / ||w||`` of a fitted binary
    ``SVC`` on (X, y) (the mean weighted by ``sample_weight``; scipy.sparse X welcome),
    ``||w||^2 = dual^T K dual`` over its support vectors."""
    dual = _dual(svm)
    sv = svm.support_vectors_
    return _relation(svm, float(dual @ _kernel(svm, sv, sv) @ dual), _decision(svm, X, dual), y, sample_weight)


def nu_of_kernel_svm(K, y, sample_weight=None, *, C=1.0):
    """nu of an ``SVC(C, kernel="precomputed")`` fitted on the kernel matrix ``K`` of the
    rows (n, n) with labels ``y``: libsvm looks the kernel's values up rather than
    evaluating them, and the relation reads the norm and the decision values from the
    same matrix (the SVC's own kernel would give the same solution: its values are the
    same numbers to rounding)."""
    from sklearn.svm import SVC

    svm = SVC(C=C, kernel="precomputed").fit(K, y, sample_weight=sample_weight)
    dual = np.zeros(K.shape[0])
    dual[svm.support_] = _dual(svm)
    f = K @ dual  # one pass over K (gathering the support vectors' columns cost three)
    return _relation(svm, float(dual @ f), f + svm.intercept_[0], y, sample_weight)


def _dual(svm):
    dual = svm.dual_coef_
    return np.asarray(dual.toarray() if hasattr(dual, "toarray") else dual)[0]


def _relation(svm, norm2, decision, y, sample_weight):
    """``mean hinge(y f) / ||w||`` from ``||w||^2`` and the decision values ``f``."""
    signs = np.where(np.asarray(y) == svm.classes_[1], 1.0, -1.0)
    hinge = np.maximum(0.0, 1.0 - signs * decision)
    return float(np.average(hinge, weights=sample_weight) / math.sqrt(max(norm2, 1e-300)))


# The kernel matrix a chunk of rows of ``_decision`` may hold (float64 values).
DECISION_CHUNK = 2**22


def _decision(svm, X, dual):
    """``svm.decision_function(X)`` as kernel matrices times the dual coefficients, a chunk
    of rows at a time: BLAS products where libsvm's predict on sparse rows evaluates one
    kernel value at a time (0.17 s against 0.78 s for 4,000 a9a rows and their 1,595
    support vectors; the values agree to 1e-12)."""
    sv = svm.support_vectors_
    rows = max(1, DECISION_CHUNK // max(1, sv.shape[0]))
    out = np.empty(X.shape[0])
    for lo in range(0, X.shape[0], rows):
        out[lo:lo + rows] = _kernel(svm, X[lo:lo + rows], sv) @ dual + svm.intercept_[0]
    return out


def _kernel(svm, A, B):
    """The fitted SVC's kernel between the rows of A and B (dense float64)."""
    return kernel_matrix(A, B, svm.kernel, svm._gamma)


def kernel_matrix(A, B, kernel, gamma):
    """The ``kernel`` ("rbf" with width ``gamma``, or "linear") between the rows of A and B,
    dense, by scikit-learn's pairwise kernels (BLAS products)."""
    from sklearn.metrics.pairwise import linear_kernel, rbf_kernel  # scikit-learn's metrics load on first use

    return rbf_kernel(A, B, gamma=gamma) if kernel == "rbf" else linear_kernel(A, B)
