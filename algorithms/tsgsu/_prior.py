"""Class-prior estimation from SU data (mixture proportion estimation)."""

from __future__ import annotations

import math

import numpy as np

from kbackends import is_array, to_numpy

from .._boundary.sparse import is_sparse
from .._boundary.validation import check_nonneg_float, check_positive_int, seed_from
from ._inputs import _pointwise, _split_folds
from ._susl import su_sl_fit
from kbackends.ops import sparse_module


def _prior_from_kappa(kappa):
    """pi_+ > 1/2 from kappa = pi_- / pi_S (the root of 2 k p^2 - (2k - 1) p + k - 1 = 0)."""
    return ((2.0 * kappa - 1.0) + math.sqrt(-4.0 * kappa * kappa + 4.0 * kappa + 1.0)) / (4.0 * kappa)


def _bottom_bin_proportion(score_s, score_u, confidences, lo=0.02, hi=0.6, n_bins=60):
    """min over thresholds t of (F_S(t) + z se) / (F_U(t) - z se), F the empirical CDFs:
    the best-bin estimate of the proportion of U in S (Garg et al. 2021, after Scott 2015),
    one per z in ``confidences``."""
    best = [np.inf] * len(confidences)
    n_s, n_u = score_s.size, score_u.size
    for t in np.quantile(score_u, np.linspace(lo, hi, n_bins)):
        a = float(np.mean(score_s <= t))
        b = float(np.mean(score_u <= t))
        se_a, se_b = math.sqrt(a * (1.0 - a) / n_s), math.sqrt(b * (1.0 - b) / n_u)
        for i, z in enumerate(confidences):
            if b - z * se_b > 0:
                best[i] = min(best[i], (a + z * se_a) / (b - z * se_b))
    return best


def estimate_prior(X_similar, X_unlabeled, *, n_components=300, lam=1e-3, confidence=0.0, n_repeats=5,
                   max_samples=20000, random_state=None, return_pi_s=False):
    """Estimate the class prior ``pi_+`` (> 1/2) from SU data by mixture proportion estimation.

    Method. The similar points' density is ``p~_S = (pi_+^2 p_+ + pi_-^2 p_-) / pi_S``
    and the unlabeled density ``p = pi_+ p_+ + pi_- p_-``, so ``p~_S`` contains ``p``
    with the largest proportion ``kappa = pi_- / pi_S`` (the negative class is used
    up first; ``p_+`` and ``p_-`` mutually irreducible, the usual MPE assumption).
    (The other direction, the proportion of ``p~_S`` in ``p`` that Eq. (12) of the
    paper suggests, is ``pi_S / pi_+``, not ``pi_S``: ``p~_D = (p_+ + p_-) / 2``
    still contains part of ``p~_S``; and it does not determine ``pi_+`` near
    ``1/sqrt(2)``.) ``kappa`` is estimated by the best-bin estimator (BBE, Garg
    et al. 2021, the ROC estimator of Scott 2015 on held-out scores): score the
    points with a function that ranks them by ``P(y = +1 | x)``, then
    ``kappa = min_t (F_S(t) + z se) / (F_U(t) - z se)`` over thresholds ``t`` in the
    low tail of the unlabeled scores (F the empirical fractions below ``t``,
    se their binomial standard errors, z = ``confidence``). The ranking function
    is an SU-SL fit on random Fourier features (:func:`su_sl_fit`), cross-fitted
    on two halves of the data so every point is scored by a model that did not
    see it; the estimate is averaged over ``n_repeats`` random halvings (the
    split alone moves a single estimate by 0.01-0.03 on phishing; the average
    of 6 is within 0.016 of the truth on all 5 draws there). Then ``pi_+`` solves
    ``kappa = pi_- / (pi_+^2 + pi_-^2)``, and ``pi_S = pi_+^2 + pi_-^2`` (so
    ``pi_+ = (sqrt(2 pi_S - 1) + 1) / 2``).

    Which side to err on: an impure bottom bin biases ``kappa`` up, so ``pi_+``
    down, towards 1/2; BBE's standard-error term (``confidence`` > 0) adds to
    that, which is the safe side in PU learning but not here: an underestimated
    ``pi_+`` makes one part of the corrected SU risk negative at good
    classifiers, so the correction works against the data (measured on
    phishing: an error of -0.03 costs 1-5 points of accuracy, +0.03 0-3).
    Hence ``confidence=0`` by default.

    Cost: ``2 n_repeats`` SU-SL fits on ``n_components`` random features,
    O(n b^2) with n <= ``max_samples`` points per side; about 2 s on 2 x 10^4
    points with the defaults.

    Parameters
    ----------
    X_similar : array of shape (n_pairs, 2, n_features) or (2 * n_pairs, n_features)
    X_unlabeled : array of shape (n_unlabeled, n_features)
        Dense, or scipy.sparse (then both are scored as CSR rows: memory O(nnz +
        n n_components), never a dense copy of the data).
    n_components : int, default 300
        Random features of the ranking function (RBF kernel, median width).
    lam : float, default 1e-3
        Its ridge.
    confidence : float >= 0, default 0.0
        Standard errors added against the estimate (1: BBE's upper bound on
        ``kappa``, a lower one on ``pi_+``; see above for why not by default).
    n_repeats : int >= 1, default 5
        Random halvings the estimate of ``kappa`` is averaged over.
    max_samples : int, default 20000
        Subsample each side to at most this many points.
    random_state : None, int or numpy Generator
    return_pi_s : bool, default False
        Also return the estimated ``pi_S``.

    Returns
    -------
    float
        ``pi_+`` in (1/2, 1); with ``return_pi_s``, the tuple ``(pi_+, pi_S)``.

    Raises
    ------
    ValueError
        When the estimate is undefined: the similar and unlabeled points look
        alike (``kappa`` not below 1 by a standard error, i.e. ``pi_S <= 1/2`` and
        ``pi_+ = 1/2``, where the SU risk is singular, cannot be ruled out), or
        too few points (< 20 per side).

    Examples
    --------
    >>> import numpy as np
    >>> from algorithms import tsgsu
    >>> rng = np.random.default_rng(0)
    >>> y = np.where(rng.random(20000) < 0.7, 1, -1)
    >>> X = rng.normal(size=(20000, 2)) + 3.0 * y[:, None]
    >>> X_s, X_u = tsgsu.make_su_data(X, y, 3000, 6000, random_state=0)
    >>> abs(tsgsu.estimate_prior(X_s, X_u, random_state=0) - 0.7) < 0.05
    True
    """
    if is_sparse(X_similar) or is_sparse(X_unlabeled):  # CSR rows throughout: no dense copy
        import scipy.sparse


        X_s, X_u = (scipy.sparse.csr_matrix(X.get() if sparse_module(X).__name__.startswith("cupyx") else X,
                                            dtype=np.float64)  # a cupyx matrix comes to the host once
                    for X in (_pointwise(X_similar), X_unlabeled))
    else:
        X_s = np.asarray(to_numpy(_pointwise(X_similar)) if is_array(X_similar)
                         else _pointwise(X_similar), dtype=np.float64)
        X_u = np.asarray(to_numpy(X_unlabeled) if is_array(X_unlabeled) else X_unlabeled,
                         dtype=np.float64)
    if X_u.ndim != 2 or X_u.shape[1] != X_s.shape[1]:
        msg = f"`X_unlabeled` must be (n_unlabeled, {X_s.shape[1]}), got shape {X_u.shape}"
        raise ValueError(msg)
    if X_s.shape[0] < 20 or X_u.shape[0] < 20:
        msg = (f"too few points to estimate the prior: `X_similar` gives {X_s.shape[0]} and `X_unlabeled` has "
               f"{X_u.shape[0]}; at least 20 of each")
        raise ValueError(msg)
    if not all(np.all(np.isfinite(X.data if is_sparse(X) else X)) for X in (X_s, X_u)):
        msg = "`X_similar` or `X_unlabeled` contains NaN or infinite values"
        raise ValueError(msg)
    n_components = check_positive_int("n_components", n_components)
    confidence = check_nonneg_float("confidence", confidence)
    max_samples = check_positive_int("max_samples", max_samples, minimum=20)
    n_repeats = check_positive_int("n_repeats", n_repeats)
    rng = np.random.default_rng(seed_from(random_state))
    kappas, uppers = [], []
    for _ in range(n_repeats):
        # Two halves (whole pairs, rows 2i and 2i + 1), each scored by a ranker fitted on the other.
        (pairs_a, pairs_b), (u_a, u_b) = _split_folds(rng, X_s.shape[0] // 2, X_u.shape[0], 2,
                                                      max_samples // 2, max_samples)
        rows_a, rows_b = (np.concatenate([2 * p, 2 * p + 1]) for p in (pairs_a, pairs_b))
        seed = int(rng.integers(2**31))
        scores_s, scores_u = [], []
        for fit_s, val_s, fit_u, val_u in ((rows_a, rows_b, u_a, u_b), (rows_b, rows_a, u_b, u_a)):
            # The ranking does not depend on the provisional prior (it scales the risk's
            # terms); 3/4 is any value away from 1/2.
            ranker = su_sl_fit(X_s[fit_s], X_u[fit_u], 0.75, lam=lam, features="rff",
                               n_components=n_components, random_state=seed)
            scores_s.append(ranker.decision_function(X_s[val_s]))
            scores_u.append(ranker.decision_function(X_u[val_u]))
        # The estimate, and one standard error up: does the data show kappa < 1 at all?
        kappa, upper = _bottom_bin_proportion(np.concatenate(scores_s), np.concatenate(scores_u),
                                              (confidence, max(confidence, 1.0)))
        kappas.append(kappa)
        uppers.append(upper)
    kappa, upper = float(np.mean(kappas)), float(np.mean(uppers))
    if not upper < 1.0 - 1e-3:
        msg = (
            f"the class prior cannot be estimated: the similar and unlabeled points look alike "
            f"(the proportion of U in S is {kappa:.3f}, but not below 1 by a standard error: {upper:.3f}; "
            "pi_S <= 1/2 and pi_+ = 1/2 cannot be ruled out, where the SU risk is singular); "
            "pass `prior` if it is known"
        )
        raise ValueError(msg)
    if not kappa > 1e-3:  # pi_- = 0: the prior is 1, outside (0, 1) (and kappa = 0 divides by zero)
        msg = (
            f"the class prior cannot be estimated: no similar point looks like the unlabeled points' negative "
            f"class (the proportion of U in S is {kappa:.3g}), so every unlabeled point would be positive; "
            "`X_similar` must hold pairs of either class (both positive or both negative): pass `prior` if it is known"
        )
        raise ValueError(msg)
    prior = _prior_from_kappa(kappa)
    pi_s = prior**2 + (1.0 - prior) ** 2
    return (prior, pi_s) if return_pi_s else prior
