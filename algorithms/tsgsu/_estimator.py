"""TSGSUClassifier: the scikit-learn estimator over SU data (y is the indicator s)."""

from __future__ import annotations

import numpy as np

from .._models.estimator import N_JOBS, FunctionalClassifier, with_estimator_params
from .._boundary.validation import is_numpy_like
from ..dsg import decision_function, predict
from ._fit import PARAMS, fit
from ._inputs import _rows_by_indicator


class TSGSUClassifier(FunctionalClassifier):
    """SU classification (TSGSU) as a scikit-learn estimator.

    ``fit(X, s)`` with ``s == 1`` for points of similar pairs (marginalised,
    Eq. (7)) and ``s == 0`` for unlabeled points (any two values: the larger
    marks the similar points); ``predict`` returns ``positive_class`` (default +1)
    for the class of prior ``prior`` and ``negative_class`` (default -1) for the
    other; with ``prior=None`` the prior is estimated and ``positive_class`` is the
    **larger** class. ``classes_`` is the two labels, sorted. The parameters are those
    of :func:`algorithms.tsgsu.fit` that a model keeps. ``X`` may be scipy.sparse or, on cuda,
    cupyx.scipy.sparse (kept sparse) or a dask array (trained on the current ``distributed.Client``'s
    workers, :mod:`algorithms.distributed`; ``y`` = s is read into memory to
    split the rows).

    Parameters
    ----------
    prior : float or None, default=None
        Class prior pi_+ (not 1/2); None: estimated from the data.
    loss : {'squared', 'logistic'}, default='squared'
        Margin loss l(z, t).
    correction : {'abs', 'relu', 'none'}, default='abs'
        Delta of Eq. (9) on the two parts of the risk.
    correction_smoothing : float, default=0.9
        Weight on the past of the parts' running averages.
    correction_margin : float, default=2.0
        Standard errors below zero before a part counts as negative.
    lam : float, default=0.1
        RKHS penalty (lam / 2) ||f||^2.
    <parameters kernel to features>
    n_iter : int, default=100
        Iterations (each adds a block).
    batch_size : int, default=1000
        Points drawn from each of the similar and unlabeled data.
    <parameters block_size to average>
    feature_budget : 'auto', int or None, default='auto'
        At most this many random features, then old blocks are updated; 'auto': the rule of
        every engine algorithm (about a million multiply-adds a row); None: no limit.
    fit_intercept : bool, default=True
        Learn an unpenalised constant.
    positive_class : label (str, int, float or bool), default=1
        Label predicted for the class of prior ``prior`` (estimated: the larger class).
    negative_class : label (str, int, float or bool), default=-1
        Label predicted for the other class.
    <parameters random_state to n_jobs>

    Examples
    --------
    >>> import numpy as np
    >>> from algorithms import TSGSUClassifier, tsgsu
    >>> rng = np.random.default_rng(0)
    >>> y = np.where(rng.random(4000) < 0.7, 1, -1)
    >>> X = rng.normal(size=(4000, 2)) + 2.0 * y[:, None]
    >>> X_s, X_u = tsgsu.make_su_data(X, y, 500, 1000, random_state=0)
    >>> Xf = np.concatenate([X_s.reshape(-1, 2), X_u]); s = np.r_[np.ones(1000), np.zeros(1000)]
    >>> clf = TSGSUClassifier(prior=0.7, random_state=0).fit(Xf, s)
    >>> float((clf.predict(X) == y).mean()) > 0.9
    True
    """

    _params = with_estimator_params(PARAMS, N_JOBS)
    _accept_sparse = True  # scipy.sparse X (cupyx on cuda): CSR row subsets, prior estimation included
    _fit = staticmethod(fit)
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)

    def __init__(self, *, prior=None, loss="squared", correction="abs", correction_smoothing=0.9,
                 correction_margin=2.0, lam=0.1, kernel="rbf", gamma="median", features="monte_carlo",
                 n_iter=100, batch_size=1000, block_size=32, step=0.5, schedule="auto", precondition=1.0, average=True,
                 feature_budget="auto",
                 fit_intercept=True, positive_class=1, negative_class=-1, random_state=None, backend="auto",
                 dtype=None, verbose=0, n_jobs=None):
        self._store_params(locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # s has two values; predictions two classes
        return tags

    def _fit_args(self, X, s, rows=None):
        """The SU convention: ``y`` is the indicator s (1: point of a similar pair, 0:
        unlabeled point), and the rows split into the two sources."""
        if is_numpy_like(s):
            from sklearn.utils.multiclass import type_of_target

            if type_of_target(s) not in ("binary",) and np.unique(s).size > 2:
                msg = ("Only binary classification is supported: y = s must hold 1 (point of a similar pair) "
                       f"or 0 (unlabeled point), got {type_of_target(s)} values")
                raise ValueError(msg)
        return _rows_by_indicator(X, s)

    def fit(self, X, y):
        """Fit on rows ``X`` with ``y`` = s: 1 for points of similar pairs, 0 for unlabeled points.

        (The argument is named ``y`` for scikit-learn; it is the SU indicator s,
        not a class label.)
        """
        super().fit(X, y)
        self.prior_ = self.model_.params["prior"]
        return self
