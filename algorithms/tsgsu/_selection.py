"""Label-free model selection: cross-validated SU risk, and a scikit-learn scorer."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import check_is_fitted

from kbackends import resolve
from kbackends.ops import resolve_hint
from kbackends import to_numpy

from .._boundary.sparse import is_sparse, stack_rows, take_rows
from .._boundary.validation import (
    check_choice,
    check_gamma,
    check_nonneg_float,
    check_positive_int,
    check_prior,
    seed_from,
)
from ._fit import fit
from ._inputs import (
    _fold_rows,
    _rows_by_indicator,
    _split_folds,
    check_su_inputs,
)
from ._prior import estimate_prior
from ._risk import _SURisk, su_risk

# Model-selection criteria: name -> (loss, correction) of the held-out SU risk.
CRITERIA = {"zero_one": ("zero_one", "none"), "squared": ("squared", "abs")}
# select_params' default candidates (lam; width as a multiple of the median heuristic) and folds.
SELECT_LAMS = (0.01, 0.03, 0.1, 0.3)
SELECT_GAMMA_SCALES = (0.03, 0.1, 0.3, 1.0)
SELECT_CV = 3


# --- label-free model selection ---------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """What :func:`select_params` chose.

    Attributes
    ----------
    params : dict
        ``prior``, ``lam`` and ``gamma`` (absolute) of the lowest held-out risk,
        plus the fixed ``fit_params``: ``fit(X_similar, X_unlabeled, **params)``
        fits the chosen model on all the data.
    risks : dict
        ``(lam, gamma_scale) ->`` cross-validated SU risk (the criterion), every candidate.
    gamma_median : float
        The median-heuristic width the scales multiply.
    """

    params: dict
    risks: dict
    gamma_median: float


def select_params(X_similar, X_unlabeled, *, prior=None, lams=SELECT_LAMS, gamma_scales=SELECT_GAMMA_SCALES,
                  cv=SELECT_CV, criterion="zero_one", random_state=None, backend="auto", dtype=None,
                  **fit_params):
    """Choose ``lam`` and the kernel width without labels, by cross-validated SU risk.

    SU data carry no labels, but the SU risk (Eq. (9)) estimates the
    classification risk from SU data alone, so hyper-parameters can be
    validated on it (Bao et al. 2018 and Shi et al. 2021 choose ``lam`` and the
    width by 5-fold cross-validation on it). Here: split the pairs and the
    unlabeled points into ``cv`` folds each, fit every ``(lam, gamma)`` on all
    folds but one and average its risk on the held-out folds; keep the lowest.
    The default criterion is the SU risk of the 0-1 loss, uncorrected: an
    unbiased estimate of the test error itself (the rewriting holds for any
    loss). "squared": the training loss's risk with the abs correction (its
    unbiased version rewards the overfit models that drive it negative), which
    can prefer a better-calibrated but worse-ranking model (phishing, one draw:
    lowest squared risk at 78.8% accuracy, lowest 0-1 risk at 87.2%).

    The width matters as much as ``lam``: the SU gradient is the supervised one
    amplified by ``1 / (2 pi_+ - 1)``, and near balanced classes a smoother
    kernel than the median heuristic's is often better (phishing, pi_+ = 0.565:
    80% accuracy at the median width, 86% at a tenth of it; docs/benchmarks.md).

    Parameters
    ----------
    X_similar, X_unlabeled : arrays as in :func:`fit`
    prior : float, optional
        ``pi_+``; None estimates it once (:func:`estimate_prior`) for all fits.
    lams : sequence of float > 0
        Candidate RKHS penalties.
    gamma_scales : sequence of float > 0
        Candidate widths as multiples of the median heuristic on the pooled points.
    cv : int >= 2, default 3
        Folds (pairs stay whole when ``X_similar`` is given as pairs).
    criterion : {"zero_one", "squared"}, default "zero_one"
        The held-out SU risk that ranks the candidates (see above).
    random_state : None, int or numpy Generator
        Seeds the folds, the median heuristic and every fit.
    backend, dtype : as in :func:`fit`
    **fit_params
        Passed to every fit (``correction``, ``n_iter``, ``batch_size``, ...).

    Returns
    -------
    Selection
        ``fit(X_similar, X_unlabeled, **selection.params)`` refits the choice on all data.

    Examples
    --------
    >>> from algorithms import tsgsu
    >>> from algorithms.datasets import example_data
    >>> X, benign = example_data()
    >>> y = 2 * benign - 1  # +1 the larger class
    >>> X_s, X_u = tsgsu.make_su_data(X, y, 150, 250, replace=True, random_state=0)
    >>> sel = tsgsu.select_params(X_s, X_u, prior=float((y == 1).mean()), lams=(0.01, 0.1), gamma_scales=(0.3, 1.0),
    ...                           n_iter=20, random_state=0)
    >>> sorted(sel.params)
    ['gamma', 'lam', 'n_iter', 'prior', 'random_state']
    >>> model = tsgsu.fit(X_s, X_u, **sel.params)
    >>> float((tsgsu.predict(model, X) == y).mean()) > 0.9
    True
    """
    for name in ("lam", "gamma"):
        if name in fit_params:
            msg = f"`{name}` is chosen by select_params; pass the candidates as `lams` / `gamma_scales`"
            raise TypeError(msg)
    lams = [check_nonneg_float("lams", v, positive=True) for v in lams]
    gamma_scales = [check_nonneg_float("gamma_scales", v, positive=True) for v in gamma_scales]
    if not lams or not gamma_scales:
        msg = "`lams` and `gamma_scales` must each hold at least one candidate"
        raise ValueError(msg)
    cv = check_positive_int("cv", cv, minimum=2)
    check_choice("criterion", criterion, tuple(CRITERIA))
    bk = resolve(backend, resolve_hint(X_similar), resolve_hint(X_unlabeled))
    xp = bk.xp
    pairs = (X_similar.ndim if hasattr(X_similar, "ndim") else np.ndim(X_similar)) == 3
    X_s, X_u = check_su_inputs(X_similar, X_unlabeled, bk, dtype, engine=True)
    # Folds over whole pairs (rows 2i, 2i + 1) when the input was pairs.
    n_units = X_s.shape[0] // 2 if pairs else X_s.shape[0]
    if min(n_units, X_u.shape[0]) < cv:
        msg = f"`cv`={cv} folds need at least {cv} pairs and {cv} unlabeled points"
        raise ValueError(msg)
    seed = seed_from(random_state)
    if prior is None:
        prior = estimate_prior(*((X if is_sparse(X) else to_numpy(X)) for X in (X_s, X_u)), random_state=seed)
    prior = check_prior(prior)
    folds_s, folds_u = _split_folds(np.random.default_rng(seed), n_units, X_u.shape[0], cv)
    gamma_median = check_gamma("median", stack_rows((X_s, X_u), xp), bk, seed)
    fixed = {**fit_params, "random_state": seed}
    criterion_risk = _SURisk(prior, *CRITERIA[criterion])
    risks = dict.fromkeys(((lam, scale) for lam in lams for scale in gamma_scales), 0.0)
    for rows in _fold_rows(folds_s, folds_u, pairs):
        fit_s, val_s, fit_u, val_u = (take_rows(X, bk.asarray(r), xp) for X, r in zip((X_s, X_s, X_u, X_u), rows))
        for lam, scale in risks:
            model = fit(fit_s, fit_u, prior=prior, lam=lam, gamma=scale * gamma_median, backend=bk, **fixed)
            f_s, f_u = model.raw_decision(val_s, bk), model.raw_decision(val_u, bk)
            risks[(lam, scale)] += criterion_risk.risk(f_s, f_u, xp) / cv
    lam, scale = min(risks, key=risks.get)
    params = {**fixed, "prior": prior, "lam": lam, "gamma": scale * gamma_median}
    return Selection(params=params, risks=risks, gamma_median=gamma_median)


def su_scorer(estimator, X, s):
    """A label-free scikit-learn scorer for :class:`TSGSUClassifier`: the accuracy
    estimated from SU data, ``1 -`` the uncorrected SU risk of the 0-1 loss of the
    fitted model on ``(X, s)`` (s = 1 similar, 0 unlabeled), as in
    :func:`select_params`. For ``GridSearchCV(TSGSUClassifier(...), grid,
    scoring=tsgsu.su_scorer)``: the classifier's own ``score`` is accuracy against
    true labels, which SU data do not have. (An unbiased estimate: it can leave
    [0, 1] on small folds.)"""
    check_is_fitted(estimator, "model_")
    X_s, X_u = _rows_by_indicator(X, s)
    loss, correction = CRITERIA["zero_one"]
    return 1.0 - su_risk(estimator.model_, X_s, X_u, loss=loss, correction=correction)
