"""TSGSU: similar-unlabeled (SU) classification by triply stochastic functional gradients.

Shi, Gu, Geng, Huang et al., "Triply stochastic gradient method for large-scale
nonlinear similar unlabeled classification" (Machine Learning, 2021), on the SU
risk of Bao, Niu & Sugiyama (ICML 2018). The data are pairs of points known to
share a (unknown) class and unlabeled points; the class prior ``pi_+`` (known,
or estimated by :func:`estimate_prior`) turns them into an unbiased estimate of
the classification risk. Marginalising the pairs (Eq. (5)-(7)), every point of a
similar pair is a draw from ``p~_S = (pi_+^2 p_+ + pi_-^2 p_-) / pi_S`` with
``pi_S = pi_+^2 + pi_-^2``, and the corrected empirical risk (Eq. (9), the
consistent correction of Lu et al. 2020) is

    J(f) = (lam/2) ||f||^2 + delta(A(f)) + delta(B(f)),
    A = c * (pi_S mean_S l(f, +1) - pi_- mean_U l(f, +1)),
    B = c * (pi_+ mean_U l(f, -1) - pi_S mean_S l(f, -1)),    c = 1 / (2 pi_+ - 1),

with ``delta`` the identity (``correction="none"``: Bao et al.'s unbiased risk,
convex for the squared loss), ``|.|`` (``"abs"``, the paper's choice) or
``max(0, .)`` (``"relu"``). ``A`` and ``B`` are the two parts of the risk that a
flexible model can drive negative.

Each iteration (Eq. (18)-(26)) draws a mini-batch of similar points, a
mini-batch of unlabeled points and a block of random features (the three
sources of randomness), evaluates ``A`` and ``B`` on the mini-batches, and
takes the functional gradient ``delta'(A) dA + delta'(B) dB`` on the new block,
shrinking the older blocks by ``1 - eta lam``. By default (beyond the paper,
``correction_smoothing`` and ``correction_margin``) the signs ``delta'`` are taken at
running averages of the batch values of A and B, and a part counts as negative only
when it is below two standard errors of that average: the correction then reacts
to overfitting, not to the noise of the batch estimates. It runs on the shared engine
(:mod:`algorithms._engine`) with two sources, the similar points and the
unlabeled points; the correction is the engine's ``derivatives`` hook, since
``delta'`` weighs both sources' derivatives by the sign of a sum over both
batches.

Also here: :func:`make_su_data` (the paper's protocol for building SU data from
a labeled set; it lives in :mod:`algorithms.datasets`), :func:`estimate_prior`
(class-prior estimation from SU data) and :func:`su_sl_fit` (Bao et al.'s
closed-form SU-SL baseline).

The package's rooms: ``_risk`` (the SU risk, its margin losses and the engine's
derivative hook; :func:`su_risk`), ``_fit`` (:func:`fit`), ``_selection``
(:func:`select_params`, :func:`su_scorer`), ``_prior`` (:func:`estimate_prior`),
``_susl`` (:func:`su_sl_fit`), ``_inputs`` (pairs or points, the indicator s, fold
splits) and ``_estimator`` (:class:`TSGSUClassifier`).

Examples
--------
>>> import numpy as np
>>> from algorithms import tsgsu
>>> from algorithms.datasets import example_data
>>> X, benign = example_data()  # breast cancer, standardised; benign (1) is the majority
>>> y = 2 * benign - 1  # +1 the larger class, as SU's prior pi_+ > 1/2 has it
>>> X_s, X_u = tsgsu.make_su_data(X, y, n_pairs=150, n_unlabeled=250, replace=True, random_state=0)
>>> X_s.shape, X_u.shape
((150, 2, 30), (250, 30))
>>> model = tsgsu.fit(X_s, X_u, prior=float(np.mean(y == 1)), random_state=0)
>>> float((tsgsu.predict(model, X) == y).mean()) > 0.7
True
"""

from __future__ import annotations

# Every name the module had before it became a package stays importable from here
# (the bench and the tests use some of the private ones).
from . import _kernels  # noqa: F401  (registers the SU coefficients with kbackends' kernel registry)
from .._boundary.validation import check_prior  # noqa: F401
from ..datasets import make_su_data
from ..dsg import decision_function, predict
from ._estimator import TSGSUClassifier
from ._fit import PARAMS, build, fit, orient, with_classes  # noqa: F401
from ._inputs import _fold_rows, _pointwise, _rows_by_indicator, _split_folds  # noqa: F401
from ._prior import _bottom_bin_proportion, _prior_from_kappa, estimate_prior  # noqa: F401
from ._risk import (  # noqa: F401
    CORRECTIONS,
    EVAL_LOSSES,
    MARGIN_LOSSES,
    _SURisk,
    su_risk,
)
from ._selection import (  # noqa: F401
    CRITERIA,
    SELECT_CV,
    SELECT_GAMMA_SCALES,
    SELECT_LAMS,
    Selection,
    select_params,
    su_scorer,
)
from ._susl import SUSLModel, su_sl_fit

__all__ = [
    "SUSLModel",
    "Selection",
    "TSGSUClassifier",
    "build",
    "decision_function",
    "estimate_prior",
    "fit",
    "make_su_data",
    "orient",
    "predict",
    "select_params",
    "su_risk",
    "su_scorer",
    "su_sl_fit",
]
