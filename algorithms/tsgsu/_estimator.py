"""TSGSUClassifier: the scikit-learn estimator over SU data (y is the indicator s)."""

from __future__ import annotations

import numpy as np

from .._estimator import FunctionalClassifier
from .._validation import is_numpy_like, sklearn_validate
from ..dsg import decision_function, predict
from ._fit import fit
from ._inputs import _rows_by_indicator


class TSGSUClassifier(FunctionalClassifier):
    """SU classification (TSGSU) as a scikit-learn estimator.

    ``fit(X, s)`` with ``s == 1`` for points of similar pairs (marginalised,
    Eq. (7)) and ``s == 0`` for unlabeled points (any two values: the larger
    marks the similar points); ``predict`` returns +1 / -1
    (+1 the class of prior ``prior``; with ``prior=None`` it is estimated and
    +1 is the larger class). Parameters as in :func:`algorithms.tsgsu.fit`.

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

    # fit is its own (y is the SU indicator); decision_function and predict are the shared ones
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)

    def __init__(self, *, prior=None, loss="squared", correction="abs", correction_smoothing=0.9, correction_margin=2.0,
                 lam=0.1, kernel="rbf", gamma="median", n_iter=100, batch_size=1000, block_size=32, step=0.5, schedule="auto", precondition=1.0,
                 average=True, feature_budget=None, fit_intercept=True, random_state=None, backend="auto", dtype=None):
        self.prior = prior
        self.loss = loss
        self.correction = correction
        self.correction_smoothing = correction_smoothing
        self.correction_margin = correction_margin
        self.lam = lam
        self.kernel = kernel
        self.gamma = gamma
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.block_size = block_size
        self.step = step
        self.schedule = schedule
        self.precondition = precondition
        self.average = average
        self.feature_budget = feature_budget
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.backend = backend
        self.dtype = dtype

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # s has two values; predictions two classes
        return tags

    def fit(self, X, y):
        """Fit on rows ``X`` with ``y`` = s: 1 for points of similar pairs, 0 for unlabeled points.

        (The argument is named ``y`` for scikit-learn; it is the SU indicator s,
        not a class label.)
        """
        if y is None:
            msg = (f"{type(self).__name__} requires y to be passed, but the target y is None "
                   "(y = s: 1 similar, 0 unlabeled)")
            raise ValueError(msg)
        X, s = sklearn_validate(self, X, y, reset=True)
        if is_numpy_like(s):
            from sklearn.utils.multiclass import (
                check_classification_targets,
                type_of_target,
            )

            check_classification_targets(s)
            if type_of_target(s) not in ("binary",) and np.unique(s).size > 2:
                msg = ("Only binary classification is supported: y = s must hold 1 (point of a similar pair) "
                       f"or 0 (unlabeled point), got {type_of_target(s)} values")
                raise ValueError(msg)
        X_s, X_u = _rows_by_indicator(X, s)
        self.model_ = fit(X_s, X_u, **self.get_params())
        self.prior_ = self.model_.params["prior"]
        self.classes_ = np.array([-1, 1])
        return self
