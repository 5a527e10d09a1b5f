"""S3GDClassifier: the scikit-learn estimator over :func:`algorithms.s3gd.fit`."""

from __future__ import annotations

from .._models.estimator import FunctionalClassifier, WeightedFit
from ._fit import PARAMS, decision_function, fit, predict


class S3GDClassifier(WeightedFit, FunctionalClassifier):
    """Linear classifier trained by S3GD (or prox-SVRG / prox-SGD), scikit-learn style.

    Parameters are those of :func:`algorithms.s3gd.fit`. Like scikit-learn's linear
    classifiers it exposes ``coef_`` (n_outputs, n_features) and ``intercept_``
    (n_outputs,), ``n_outputs = 1`` for two classes; the intercept is the weight of
    the constant feature appended during fitting (so it is regularised).

    Takes dense arrays (NumPy, CuPy, any array-API namespace) and scipy.sparse
    matrices (CSR / CSC / COO, cpu backend: never densified); ``fit`` takes
    ``sample_weight`` (scikit-learn's semantics: see :func:`algorithms.s3gd.fit`).

    Attributes
    ----------
    model_ : LinearModel
    coef_, intercept_ : arrays on the input's backend
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    n_iter_ : float
        Epochs run (passes of sampled rows; the largest over the one-vs-rest problems):
        fewer than ``max_epochs`` when ``tol`` stopped the fit.

    Examples
    --------
    >>> from algorithms import S3GDClassifier
    >>> from algorithms.datasets import example_data
    >>> X, y = example_data()  # breast cancer, standardised
    >>> S3GDClassifier(step=0.1, max_epochs=5, random_state=0).fit(X, y).score(X, y) > 0.95
    True
    """

    _params = PARAMS
    _fit = staticmethod(fit)
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)
    _accept_sparse = True  # CSR X (scipy; cupyx on cuda): the anchor ops and the loop read its rows

    def fit(self, X, y, sample_weight=None):
        """Fit on (X, y), rows weighted by ``sample_weight`` (None: all 1); sets ``coef_``,
        ``intercept_`` like scikit-learn's linear models, and ``n_iter_`` (epochs run)."""
        super().fit(X, y, sample_weight)
        self.coef_ = self.model_.coef
        self.intercept_ = self.model_.intercept
        return self

    def _n_iter_done(self):
        return float(max(self.model_.params["epochs"]))


