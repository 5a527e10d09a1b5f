"""SBPClassifier: the scikit-learn estimator over :func:`algorithms.sbp.fit`."""

from __future__ import annotations

from .._models.calibration import with_probability
from .._models.estimator import N_JOBS, FunctionalClassifier, WeightedFit, with_estimator_params
from ._fit import PARAMS, decision_function, fit, predict


class SBPClassifier(WeightedFit, FunctionalClassifier):
    """Kernel SVM by the Stochastic Batch Perceptron, as a scikit-learn estimator.

    The parameters are those of :func:`algorithms.sbp.fit` that a model keeps, and
    ``probability``. Accepts NumPy or CuPy ``X``; outputs follow the input's namespace.

    Parameters
    ----------
    nu : 'auto' or float, default='auto'
        Margin-violation budget as a fraction of n (the nu-SVM's nu); 'auto': matched to SVC(C=1).
    kernel : {'rbf', 'linear'}, default='rbf'
        The kernel of the expansion.
    gamma : {'median', 'scale'} or float, default='scale'
        Kernel width; 'scale': 1 / (n_features Var X), 'median': 1 / median squared distance.
    bias : bool, default=True
        Learn a bias (the constant feature).
    n_iter : 'auto' or int or None, default='auto'
        Iterations; 'auto': from n (60 sqrt(n), at least 1000, at most n); None: n (one pass).
    batch_size : int, default=1
        Points drawn from under the water per iteration.
    <parameters class_weight to n_jobs>

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

    _params = with_estimator_params(with_probability(PARAMS), N_JOBS)  # + `probability` (algorithms._models.calibration)
    _accept_sparse = True  # CSR X (scipy; cupyx on cuda): the sparse response kernels, sparse support vectors
    _fit = staticmethod(fit)
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)

    def __init__(self, *, nu="auto", kernel="rbf", gamma="scale", bias=True, n_iter="auto", batch_size=1,
                 class_weight=None, random_state=None, backend="auto", dtype=None, verbose=0, probability=False,
                 n_jobs=None):
        self._store_params(locals())
