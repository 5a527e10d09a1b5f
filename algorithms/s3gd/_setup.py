"""S3GD's setup at the fit's entry (:mod:`algorithms.s3gd`): the per-row weights (class
and sample weights), the default step and stopping tolerance, the mini-batch sampler,
the anchors and their graph. Dense or CSR rows (scipy.sparse; cupyx on cuda) alike."""

from __future__ import annotations

import math
import time

import numpy as np

from kbackends import ops, to_numpy

from .._boundary.fit_plan import check_sample_weight
from .._boundary.sparse import is_sparse, take_rows
from .._boundary.warn import warn_user

# Upper bound of psi''(u) of each loss (logistic 1/4, squared hinge 1, smoothed hinge beta/4).
CURVATURE = {"logistic": lambda beta: 0.25, "squared_hinge": lambda beta: 1.0, "smooth_hinge": lambda beta: beta / 4}
# 3e-3: above the epoch-to-epoch noise of a constant step's objective (1-2e-3 relative on
# w8a and phishing), so the test stops when progress is within the noise; the returned
# iterate's gap stayed <= 2e-3 on ijcnn1 / a9a / w8a / phishing (1e-3 ran w8a 4 epochs, not 3).
DEFAULT_TOL = 3e-3
DENSE_SAMPLE = 1 << 22  # values of a >= 10 % dense k-means sample densified (32 MB in float64)
# Largest column RMS of X this far from 1 (the intercept's feature), either way, or from the
# median column RMS: a warning. One feature at k times the others' scale: accuracy 0.838 at
# k = 1 and 10, 0.832 at 20, 0.813 at 50 (make_classification, 10 features); the public
# sets sit at 1.2-5.6 (a9a 5.6, w8a 4.0, ijcnn1 1.2, phishing 1.7, higgs 1.6).
SCALE_WARNING = 20.0


DEFAULT_INNER_ITER = {"s3gd": 20, "svrg": 50, "sgd": 20}  # Section 4.3 / 4.2
# Draws by the row norms (:func:`norm_sampling`) where the longest row's squared norm is over
# this many times the mean: there the uniform step, set by the longest row, is what slows the
# fit (standardised Student-t(2) features: 1,159x). Below, uniform draws: the step they allow
# is within 16x of the norm draws' and they keep the cheap rows as likely as the long ones
# (w8a, 9.1x: its long sparse rows drawn more often cost more than the larger step saved;
# ijcnn1 2.0x, a9a and phishing 1.0x).
NORM_SAMPLING_SPREAD = 32.0


def choose_defaults(step, tol, inner_iter, *, method, max_sq, mean_sq, nnz_row, n_features, n_anchors, batch_size,
                    loss, beta, l2, lazy, n_rows=None):
    """The step, early-stopping tolerance and inner iterations a fit runs with: its
    "auto" / None defaults from the data (issue 14's "defaults that win").

    - ``step="auto"``: ``1 / (2 L_p)``, ``L_p`` the smoothness constant of a p-row
      mini-batch gradient drawn with replacement (Gower et al. 2019, Prop. 3.8)::

          L_p = kappa (max_i ||x~_i||^2 / p + (1 - 1/p) mean_i ||x~_i||^2) + 2 l2,

      ``x~ = [x, 1]`` (the intercept's feature), the mean weighted by the sample weights,
      ``max_sq`` the largest ``r_i ||x~_i||^2`` over rows that can be drawn (``r_i`` the
      importance weight of :func:`norm_sampling`, 1 with draws by the weights), ``kappa`` the
      bound of psi'' (:data:`CURVATURE`: 1/4 for the logistic loss, as SAG / SAGA
      use). The step follows the features' scale.
    - ``tol="auto"``: :data:`DEFAULT_TOL` with the automatic step; None (every epoch
      runs) with a step the caller gave, so explicit arguments behave as before.
    - ``inner_iter=None``: 50 for svrg, 20 for sgd; for s3gd the paper's 20, or more
      where its snapshot (D and H of Eq. 22: ``3 m (d + 1)`` multiply-adds) would cost
      more than 20 inner steps (``2 p (nnz + 1)`` for the batch rows, plus ``2 (d + 1)``
      for the gradient and prox, or ``p (nnz + 1)`` on the lazy sparse path): the
      snapshot then costs about as much as the steps between two. Dense data with the
      default m and p keeps 20; sparse data with many columns gets longer loops, up to
      one pass over the ``n_rows`` rows between two snapshots (SVRG's usual length):
      past it the snapshot's correction is too old to hold the steps' variance down,
      and very wide data diverged.

    Returns
    -------
    (step, tol, inner_iter) : (float, float or None, int)

    Examples
    --------
    >>> kw = dict(method="s3gd", max_sq=2.0, mean_sq=2.0, nnz_row=10, n_features=10, n_anchors=100,
    ...           batch_size=10, loss="logistic", beta=10.0, l2=0.0, lazy=False)
    >>> choose_defaults("auto", "auto", None, **kw)
    (1.0, 0.003, 20)
    >>> choose_defaults(0.3, "auto", 7, **kw)
    (0.3, None, 7)
    """
    auto = isinstance(step, str)
    if auto:
        p = batch_size
        L = CURVATURE[loss](beta) * (max_sq / p + (1.0 - 1.0 / p) * mean_sq) + 2.0 * l2
        step = 1.0 / (2.0 * L)
    if isinstance(tol, str):
        tol = DEFAULT_TOL if auto else None
    if inner_iter is None:
        inner_iter = DEFAULT_INNER_ITER[method]
        if method == "s3gd":
            d1 = n_features + 1
            per_step = 2 * batch_size * (nnz_row + 1) + (batch_size * (nnz_row + 1) if lazy else 2 * d1)
            inner_iter = max(inner_iter, math.ceil(3 * n_anchors * d1 / per_step))
            if n_rows is not None:
                inner_iter = min(inner_iter, max(DEFAULT_INNER_ITER[method], math.ceil(n_rows / batch_size)))
    return float(step), tol, int(inner_iter)


def row_statistics(X, xp, weights):
    """The squared row norms with the constant 1 appended (host float64, (n,)), their
    mean weighted by ``weights``, and the (largest, median non-zero) column RMS of X:
    one O(nnz) pass."""
    if is_sparse(X):  # canonical CSR (scipy, or cupyx on cuda), O(nnz)
        sq = to_numpy(ops.squared_sums(X, axis=1, dtype="float64", check_finite=False))
        col = to_numpy(ops.squared_sums(X, axis=0, dtype="float64", check_finite=False)) / X.shape[0]
    elif type(X).__module__.startswith("numpy"):
        sq = np.einsum("ij,ij->i", X, X)
        col = np.einsum("ij,ij->j", X, X) / X.shape[0]
    else:
        sq = to_numpy(xp.sum(X * X, axis=1))
        col = to_numpy(xp.mean(X * X, axis=0))
    sq = np.asarray(sq, dtype=np.float64) + 1.0
    col = np.sqrt(np.asarray(col, dtype=np.float64))
    live = col[col > 0]
    rms = (float(live.max()), float(np.median(live))) if live.size else (0.0, 0.0)
    # np.sum of the product, not ``weights @ sq``: a BLAS dot of n > 10^4 wakes OpenBLAS's threads,
    # which then spin for ~0.1 s and took a core from the fit (w8a CSR with default threads: 1.8x)
    return sq, float(np.sum(weights * sq) / weights.sum()), rms


def norm_sampling(sq, mean_sq, weights):
    """Rows drawn in proportion to their weight times their smoothness constant, half
    and half with their weight alone ("partially biased" sampling: Needell, Srebro &
    Ward 2016; Schmidt et al.'s SAG draws by the constants too), for the automatic step.

    Row i (weight s_i, squared norm ``sq_i`` with the constant 1) is drawn with
    probability proportional to ``s_i (1 + sq_i / mean_sq) / 2`` and its term of the
    batch average multiplied by ``r_i = 2 / (1 + sq_i / mean_sq)`` (in (0, 2]), so the
    average stays an unbiased gradient of the weighted loss. The constant the step
    rests on, ``max_i r_i sq_i``, is then below ``2 mean_sq`` however long the longest
    row is (uniform draws: ``max_i sq_i``), and no row's term is scaled by more than 2.
    Rows whose squared norms stay within :data:`NORM_SAMPLING_SPREAD` times the mean
    are drawn by their weights alone (``row_scale`` None).

    Returns
    -------
    draw : ndarray (n,)
        The draw weights (mean 1 where ``weights`` have mean 1; ``weights`` where no
        row is long: :data:`NORM_SAMPLING_SPREAD`).
    row_scale : ndarray (n,) or None
        ``r``; None where the draws are by ``weights`` alone.
    max_sq : float
        ``max r_i sq_i`` over rows of positive weight.
    """
    ratio = sq / mean_sq
    live = weights > 0
    if ratio[live].max() <= NORM_SAMPLING_SPREAD:
        return weights, None, float(sq[live].max())
    row_scale = 2.0 / (1.0 + ratio)
    return weights * (1.0 + ratio) / 2.0, row_scale, float((row_scale * sq)[live].max())


def warn_scale(rms):
    """UserWarning when X's largest column RMS (``rms``: the largest and the median
    non-zero) is over ``SCALE_WARNING`` times (or under 1 / ``SCALE_WARNING`` of) the
    intercept's feature 1, or over ``SCALE_WARNING`` times the median column's: the step
    that suits the largest scale moves the intercept (or the other features) so slowly
    that the fit stops far from the optimum (raw svmguide1: column RMS up to ~300)."""
    largest, median = rms
    if largest > SCALE_WARNING or 0.0 < largest * SCALE_WARNING < 1.0:
        against = "against 1 for the intercept's constant feature"
    elif largest > SCALE_WARNING * median:
        against = f"{largest / median:.3g} times the median column's ({median:.3g})"
    else:
        return
    msg = (f"S3GD: the largest column RMS of X is {largest:.3g}, {against}: the step suits the largest scale "
           "and moves the others slowly, so the fit may stop far from the optimum. Standardise X "
           "(sklearn.preprocessing.StandardScaler; MaxAbsScaler for sparse X).")
    warn_user(msg)


def sample_weights_or_ones(sample_weight, n):
    """``sample_weight`` as float64 (n,) host weights, ones for None or all equal (S3GD's
    loop always weighs its rows), checked by the fits' one rule
    (:func:`algorithms._boundary.fit_plan.check_sample_weight`, which gives None for those)."""
    w = check_sample_weight(sample_weight, n)
    return np.ones(n) if w is None else w





class Clock:
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


class Sampler:
    """Mini-batch rows, drawn with replacement with probabilities proportional to the
    draw weights (uniform when they are all equal): a row of weight 0 is never drawn,
    one of weight k as often as k copies of it. The draw weights are the row weights,
    or :func:`norm_sampling`'s under the automatic step."""

    def __init__(self, rng, weights):
        self.rng, self.n = rng, weights.shape[0]
        self.uniform = bool(np.all(weights == weights[0]))
        if not self.uniform:
            cdf = np.cumsum(weights, dtype=np.float64)
            self.cdf = cdf / cdf[-1]

    def draw(self, steps, p):
        if self.uniform:
            return self.rng.integers(0, self.n, size=(steps, p), dtype=np.int64)
        rows = np.searchsorted(self.cdf, self.rng.random((steps, p)), side="right")
        return np.minimum(rows, self.n - 1).astype(np.int64)


def anchor_graph(X, bk, n_anchors, k_nearest, kmeans_iter, kmeans_sample, rng, weights):
    """Anchors (Algorithm 2, steps 2-5) and the sparse anchor-sample graph (steps 6-13).

    On X without the constant feature: it changes no distance; the anchors' constant
    feature is implied in the loop. k-means runs on rows of positive weight only (a row
    of weight 0 is as good as absent), drawn uniformly; the anchors are dense (m, d)
    even for sparse X. Returns (anchors Z, neighbour indices, graph weights)."""
    xp = bk.xp
    live = np.flatnonzero(weights > 0)
    n_live = live.size
    m = min(n_anchors, n_live)
    k = min(k_nearest, m)
    if kmeans_sample is not None and kmeans_sample < n_live:
        rows = live[np.sort(rng.choice(n_live, size=max(kmeans_sample, m), replace=False))]
        sample = take_rows(X, bk.asarray(rows) if not is_sparse(X) else rows, xp)
    elif n_live < weights.shape[0]:
        sample = take_rows(X, bk.asarray(live) if not is_sparse(X) else live, xp)
    else:
        sample = X
    if is_sparse(sample) and sample.nnz >= 0.1 * sample.shape[0] * sample.shape[1] and \
            sample.shape[0] * sample.shape[1] <= DENSE_SAMPLE:
        sample = sample.toarray()  # k-means on a small, dense-enough sample: BLAS beats sparse loops
    centers = ops.kmeans(sample, m, n_iter=kmeans_iter, random_state=rng, backend=bk, check_finite=False)
    # Eq. (13) over the rows k-means saw (all rows when kmeans_sample is None): one O(n m d)
    # pass fewer than snapping to all of X, and the anchors are still training samples.
    snapped = ops.snap_to_samples(centers, sample, backend=bk, check_finite=False)
    Z = (ops.csr_rows_dense(sample, snapped, backend=bk) if is_sparse(sample)
         else xp.take(sample, snapped, axis=0))
    idx, gw = ops.anchor_graph(X, Z, k, backend=bk, check_finite=False)
    return Z, idx, gw


def pearson(a, b):
    a = np.asarray(a, dtype=np.float64) - np.mean(a)
    b = np.asarray(b, dtype=np.float64) - np.mean(b)
    denom = math.sqrt(float(a @ a) * float(b @ b))
    return float(a @ b) / denom if denom > 0 else float("nan")
