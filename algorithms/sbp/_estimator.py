"""SBPClassifier: the scikit-learn estimator over :func:`algorithms.sbp.fit`."""

from __future__ import annotations

from .._models.calibration import with_probability
from .._models.estimator import FunctionalClassifier, WeightedFit
from ._fit import PARAMS, decision_function, fit, predict


class SBPClassifier(WeightedFit, FunctionalClassifier):
    """Kernel SVM by the Stochastic Batch Perceptron, as a scikit-learn estimator.

    Parameters as in :func:`algorithms.sbp.fit`, and ``probability`` (bool, default
    False): fit on 90% of the rows and Platt's sigmoid on the other 10%, for
    ``predict_proba`` (:mod:`algorithms._models.calibration`). Accepts NumPy or CuPy ``X``;
    outputs follow the input's namespace.

    Attributes
    ----------
    model_ : KernelExpansionModel
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    n_iter_ : int
        Iterations run (``n_iter="auto"``: chosen from the data).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from algorithms import SBPClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = SBPClassifier(nu=0.05, n_iter=1500, random_state=0).fit(X, y)
    >>> clf.n_iter_
    1500
    >>> clf.score(X, y) > 0.9
    True
    """

    _params = with_probability(PARAMS)  # + `probability` (algorithms._models.calibration)
    _accept_sparse = True  # CSR X (scipy; cupyx on cuda): the sparse response kernels, sparse support vectors
    _fit = staticmethod(fit)
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)
