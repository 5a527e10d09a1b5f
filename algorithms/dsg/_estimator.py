"""DSGClassifier and DSGRegressor: the scikit-learn estimators over :func:`algorithms.dsg.fit`."""

from __future__ import annotations

from sklearn.base import RegressorMixin

from .. import distributed
from .._boundary.params import options
from .._models.calibration import with_probability
from .._models.estimator import FunctionalClassifier, FunctionalEstimator, WeightedFit
from ._fit import CLASSIFICATION_LOSSES, DISTRIBUTED, PARAMS, decision_function, fit, predict


class _DSGFit(WeightedFit):
    """``partial_fit`` of the DSG estimators (``fit`` with ``sample_weight``: :class:`WeightedFit`)."""

    def partial_fit(self, X, y, classes=None):
        """Continue the fit on one batch of rows (for data streamed by your own loader).

        Each call runs ``ceil(len(X) / batch_size)`` iterations sampling from this
        batch, resuming the step schedule, the blocks and the coefficients where the
        last call left them; ``classes`` (classifiers) and ``gamma="median"`` are
        fixed by the first call. ``n_iter`` is not used.
        """
        distributed.partial_fit(self, X, y, DISTRIBUTED, classes=classes)
        self.n_iter_ = int(self.model_.params["n_iter_done"])
        return self


class DSGClassifier(_DSGFit, FunctionalClassifier):
    """Kernel classifier by doubly stochastic gradients (DSG / UDSG / CDSG).

    Parameters are those of :func:`algorithms.dsg.fit` (``loss`` defaults to
    "hinge"; "logistic" gives ``predict_proba``), and ``probability`` (bool, default
    False): fit on 90% of the rows and Platt's sigmoid on the other 10%, for
    ``predict_proba`` with any loss (:mod:`algorithms._models.calibration`). Accepts NumPy, CuPy,
    scipy.sparse or cupyx.scipy.sparse ``X``; outputs follow the input's namespace.

    Attributes
    ----------
    model_ : RFFModel
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    n_iter_ : int
        Iterations run (early stopping may end the fit before ``n_iter``).

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from algorithms import DSGClassifier
    >>> X, y = load_digits(return_X_y=True)
    >>> clf = DSGClassifier(n_iter=40, batch_size=512, gamma=0.02, random_state=0).fit(X / 16, y)
    >>> clf.score(X / 16, y) > 0.95
    True
    """

    # A classifier's losses only: squared-loss predictions are values, not labels; and
    # `probability` (predict_proba for every loss: algorithms._models.calibration).
    _params = with_probability(PARAMS.replace(loss={"constraint": options(*CLASSIFICATION_LOSSES)}))
    _accept_sparse = True  # scipy.sparse X; cupyx.scipy.sparse on cuda: docs/architecture.md, RFF ops
    _fit = staticmethod(fit)
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)


class DSGRegressor(_DSGFit, RegressorMixin, FunctionalEstimator):
    """Kernel ridge-style regression by doubly stochastic gradients (squared loss).

    Parameters are those of :func:`algorithms.dsg.fit`; ``loss`` is "squared" (the
    only regression loss).

    Attributes
    ----------
    model_ : RFFModel
    n_features_in_ : int
    n_iter_ : int
        Iterations run (early stopping may end the fit before ``n_iter``).
    """

    _params = PARAMS.replace(loss={"default": "squared", "constraint": options("squared")})
    _accept_sparse = True  # scipy.sparse X; cupyx.scipy.sparse on cuda: docs/architecture.md, RFF ops
    _fit = staticmethod(fit)
    _predict = staticmethod(predict)
