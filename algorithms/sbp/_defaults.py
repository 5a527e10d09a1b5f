"""SBP's data-driven defaults: ``nu="auto"``, ``n_iter="auto"``, ``gamma="scale"``.

One small function, :func:`sbp_defaults`, turns the data into the three numbers
(tests/algorithms/test_sbp_defaults.py); :mod:`algorithms.sbp` calls it once per fit.
The figures behind the rules: docs/benchmarks.md, "SBP defaults, weights and sparse".
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from kbackends import to_numpy
from kbackends.ops import sparse_module

from .._boundary.sparse import is_sparse, take_rows
from .._boundary.validation import scale_gamma
from ._svm_nu import kernel_matrix, nu_of_kernel_svm, nu_of_svm

# n_iter="auto": one pass for small data, then AUTO_ITER_PER_ROOT * sqrt(n), at least AUTO_ITER_MIN.
AUTO_ITER_MIN = 1000
AUTO_ITER_PER_ROOT = 60
# nu="auto": the paper's nu <-> C relation on subsamples of these sizes (auto_nu).
NU_SAMPLES = (1000, 2000, 4000)
NU_FALLBACK = 0.01  # a subsample with one class only (extremely rare labels)
DENSE_GRAM_VALUES = 1 << 23  # subsamples up to this many values (64 MB dense): one kernel matrix (_gram_nus)


def auto_n_iter(n):
    """Iterations for ``n`` rows: ``n`` (one pass) up to ``AUTO_ITER_MIN`` rows, else
    ``min(n, max(AUTO_ITER_MIN, ceil(AUTO_ITER_PER_ROOT * sqrt(n))))``.

    Why sqrt(n): SBP's test error on a9a, USPS and letter settles after a few
    thousand iterations whatever n, while an iteration costs O(n d) (one pass over
    a9a took 95 s for 14.89%). 60 sqrt(n) (10,827 on a9a) keeps seeds 0-4 within
    15.00-15.28% at ~0.42x SVC(C=1, gamma=0.05)'s fit; the sweeps behind the
    constant (25, 45, 60, 75) are in docs/benchmarks.md ("SBP defaults, weights and
    sparse").
    """
    return int(min(n, max(AUTO_ITER_MIN, math.ceil(AUTO_ITER_PER_ROOT * math.sqrt(n)))))


def _svm_nu(X, y, weights, gamma, kernel):
    """nu of an SVC(C=1) fitted on (X, y) by libsvm's own kernel (the relation of
    :func:`algorithms.sbp.nu_from_svm`): the subsamples too wide for one kernel matrix
    (:func:`_gram_nus`)."""
    from sklearn.svm import SVC

    svm = SVC(C=1.0, kernel=kernel, gamma=gamma if kernel == "rbf" else "scale").fit(X, y, sample_weight=weights)
    return nu_of_svm(svm, X, y, weights)


def _gram_nus(X, parts, y, weights, gamma, kernel, pool):
    """The nu of an SVC(C=1) on each of the ``parts`` (sorted row indices, the
    last holding all the others) from one kernel matrix of the last part's rows, computed
    by BLAS on their dense float64 copy; each part's SVC reads its rows' block of it
    (:func:`algorithms.sbp._svm_nu.nu_of_kernel_svm`, on ``pool``'s threads). libsvm
    evaluating each value of sparse rows by merging index lists took twice as long on
    a9a, and a matrix per part computed the smaller parts' values again. Dense and sparse
    copies of the same rows take this path alike: the same nu to the bit."""
    A = _host_rows(X, parts[-1])
    A = np.asarray(A.toarray() if is_sparse(A) else A, dtype=np.float64)  # as libsvm reads the rows
    K = kernel_matrix(A, A, kernel, gamma)

    def estimate(part):
        at = np.searchsorted(parts[-1], part)  # the part's rows within the last part's
        block = K if at.size == K.shape[0] else K[np.ix_(at, at)]
        return nu_of_kernel_svm(block, y[part], None if weights is None else weights[part])

    return _on_threads(estimate, parts, pool)


def _on_threads(estimate, parts, pool):
    """``estimate(part)`` of every part on ``pool``'s threads, the largest (last) first,
    returned in the parts' order."""
    futures = [pool.submit(estimate, part) for part in reversed(parts)]
    return [future.result() for future in reversed(futures)]


def _host_rows(X, rows):
    """Rows of X on the host (scipy.sparse stays sparse, cupyx becomes scipy; a device
    array is copied)."""
    if is_sparse(X):
        part = take_rows(X, rows, None)
        return part.get() if sparse_module(part).__name__.startswith("cupyx") else part
    if isinstance(X, np.ndarray):
        return X[rows]
    from array_api_compat import array_namespace

    xp = array_namespace(X)
    return to_numpy(xp.take(X, xp.asarray(rows, device=X.device), axis=0))


def auto_nu(X, target, weights, gamma, kernel, seed):
    """The nu matching an SVC(C=1) on all ``n`` rows (Cotter et al. 2012, Sec. 5).

    The relation needs the SVM on the full data, which is what SBP avoids; nu
    falls with the sample size (the hinge mean falls and the norm grows), so it
    is computed on random subsamples of 1,000, 2,000 and 4,000 rows and
    extrapolated to n by :func:`extrapolate_nu` (n <= 4,000: the sizes below n
    and n itself; n <= 1,000: all rows). ``target`` (+1 / -1) is one binary
    problem (the largest class against the rest for one-vs-rest).

    Why three sizes (docs/benchmarks.md, "SBP defaults, weights and sparse"):
    the first rule, a slope from 1,000 and 2,000 rows followed 16x out to a9a's
    32,561, gave nu from 0.0060 to 0.0096 over eight seeds (letter 'A':
    0.0005 to 0.0023), and small nu is where SBP's error grows (a9a nu = 0.005:
    15.45%, the target 15.5%); a least-squares exponent over a 4x range of
    sizes, followed 8x, gives 0.0082 to 0.0112 (letter 'A': 0.0007 to 0.0016)
    for one more SVC on 4,000 rows (a9a: about 0.1 s, from the one kernel matrix).

    Each smaller size's nu is the geometric mean over the disjoint subsamples of that
    size inside the largest (four of 1,000 rows, two of 2,000): the exponent, followed
    12x out to ijcnn1's 49,990 rows, made one subsample's noise a factor of 1.6 in nu
    (0.00094 to 0.00157 over seeds 0-9, against 0.00136 from the SVC on all rows),
    and ijcnn1's accuracy followed it (97.17-98.18%). Pooled: 0.00095 to 0.00146,
    97.39-98.20%, the seed spread of the accuracy 0.37 -> 0.26 point, for four more
    SVCs on blocks of the same kernel matrix (a9a's estimate 0.14 -> 0.20 s, ijcnn1's
    0.12 -> 0.16 s).
    """
    n = X.shape[0]
    rng = np.random.default_rng(seed)
    rows = rng.permutation(n)[: NU_SAMPLES[-1]]
    sizes = [m for m in NU_SAMPLES if m < n] or [n]
    if len(sizes) < len(NU_SAMPLES) and sizes[-1] < n:
        sizes.append(n)  # the largest subsample: all rows
    largest = np.sort(rows[: sizes[-1]])
    # each smaller size: the disjoint subsamples of that size within the largest
    groups = [[np.sort(rows[j * m:(j + 1) * m]) for j in range(sizes[-1] // m)] for m in sizes[:-1]] + [[largest]]
    groups = [[part for part in group if np.unique(target[part]).size == 2] for group in groups]
    if any(not group for group in groups):
        return NU_FALLBACK
    parts = [part for group in groups for part in group]

    # The subsamples' SVCs are independent and libsvm releases the GIL: on threads, the
    # largest first, the estimate takes about the largest fit's time.
    with ThreadPoolExecutor(max_workers=min(len(parts), os.cpu_count() or 1)) as pool:
        if parts[-1].size * X.shape[1] <= DENSE_GRAM_VALUES:
            estimates = _gram_nus(X, parts, target, weights, gamma, kernel, pool)
        else:
            estimates = _on_threads(lambda part: _svm_nu(_host_rows(X, part), target[part],
                                                         None if weights is None else weights[part], gamma, kernel),
                                    parts, pool)
    at = np.cumsum([0] + [len(group) for group in groups])
    pooled = [float(np.exp(np.mean(np.log(estimates[a:b])))) for a, b in zip(at[:-1], at[1:])]
    return extrapolate_nu(sizes, pooled, n)


def extrapolate_nu(sizes, estimates, n):
    """nu at ``n`` rows from its values at ``sizes`` rows: the least-squares power law
    through the last two or three points in log-log (exponent clipped to [-1, 0]),
    evaluated from the largest size; one point: its value."""
    if len(sizes) == 1 or sizes[-1] >= n:
        return float(estimates[-1])
    slope = float(np.polyfit(np.log(sizes), np.log(estimates), 1)[0])
    slope = min(0.0, max(-1.0, slope))
    return float(estimates[-1] * (n / sizes[-1]) ** slope)


def sbp_defaults(X, targets, weights, *, nu, gamma, n_iter, kernel, seed, median):
    """The SBP's ``(nu, gamma, n_iter)`` for this data.

    Parameters
    ----------
    X : array of shape (n, d), NumPy or scipy.sparse (host)
    targets : array of shape (n_outputs, n) of +1 / -1
    weights : array of shape (n,) or None
    nu : float or "auto"
        "auto": :func:`auto_nu` on the largest class's problem.
    gamma : float, "scale" or "median"
        "scale": :func:`scale_gamma`; "median": ``median()``.
    n_iter : int, None or "auto"
        None: n (one pass); "auto": :func:`auto_n_iter`; an int as is.
    kernel : {"rbf", "linear"}
    seed : int
    median : callable() -> float
        The median heuristic on X (:func:`algorithms._boundary.validation.check_gamma`).

    Returns
    -------
    nu, gamma, n_iter : float, float, int
    """
    n = X.shape[0]
    if kernel != "rbf":
        gamma = 1.0
    elif gamma == "scale":
        gamma = scale_gamma(X, weights)
    elif gamma == "median":
        gamma = median()
    if nu == "auto":
        k = int(np.argmax((targets > 0).sum(axis=1))) if targets.shape[0] > 1 else 0
        nu = auto_nu(X, targets[k], weights, float(gamma), kernel, seed)
    n_iter = n if n_iter is None else auto_n_iter(n) if n_iter == "auto" else int(n_iter)
    return float(nu), float(gamma), n_iter
