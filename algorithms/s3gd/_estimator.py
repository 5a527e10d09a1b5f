"""S3GDClassifier: the scikit-learn estimator over :func:`algorithms.s3gd.fit`."""

from __future__ import annotations

from .._models.estimator import N_JOBS, FunctionalClassifier, WeightedFit, with_estimator_params
from ._fit import PARAMS, decision_function, fit, predict


class S3GDClassifier(WeightedFit, FunctionalClassifier):
    """Linear classifier trained by S3GD (or prox-SVRG / prox-SGD), scikit-learn style.

    The parameters are those of :func:`algorithms.s3gd.fit` that a model keeps. Like scikit-learn's linear
    classifiers it exposes ``coef_`` (n_outputs, n_features) and ``intercept_``
    (n_outputs,), ``n_outputs = 1`` for two classes; the intercept is the weight of
    the constant feature appended during fitting (so it is regularised).

    Takes dense arrays (NumPy, CuPy, any array-API namespace) and scipy.sparse
    matrices (CSR / CSC / COO, cpu backend: never densified); ``fit`` takes
    ``sample_weight`` (scikit-learn's semantics: see :func:`algorithms.s3gd.fit`).

    Parameters
    ----------
    loss : {'logistic', 'squared_hinge', 'smooth_hinge'}, default='logistic'
        Smooth loss of the linear model.
    penalty : {'l2', 'l1', 'elasticnet'}, default='l2'
        Regulariser.
    lam : float, default=1e-3
        Regularisation strength.
    l1_ratio : float, default=0.5
        Share of l1 in the elastic net.
    n_anchors : int, default=100
        Anchors of the graph (k-means centres).
    k_nearest : int, default=5
        Anchors per point.
    step : 'auto' or float, default='auto'
        Step size; 'auto': 1 / (2 L) from the data's squared row norms.
    inner_iter : int or None, default=None
        Inner iterations per snapshot; None: the method's.
    batch_size : int, default=10
        Rows per stochastic step.
    max_epochs : float, default=10.0
        Passes over the data.
    max_time : float or None, default=None
        Seconds of training at most; None: no limit.
    tol : 'auto' or float or None, default='auto'
        Stop when an epoch lowers the training objective by less than tol (relative); None: never; 'auto': 3e-3
        with step='auto', None with a given step.
    class_weight : 'balanced' or None or dict, default=None
        Per-class weights of the loss.
    method : {'s3gd', 'sgd', 'svrg'}, default='s3gd'
        "s3gd", or prox-SVRG ("svrg") / prox-SGD ("sgd") on the same loop.
    beta : float, default=10.0
        Smoothing of the anchor graph's weights.
    kmeans_iter : int, default=5
        K-means iterations for the anchors.
    kmeans_sample : int or None, default=1000
        Rows k-means runs on; None: all.
    checkpoint : float, default=0.25
        Epochs between checkpoints (where ``max_time`` is checked).
    <parameters random_state to n_jobs>

    Attributes
    ----------
    model_ : LinearModel
    coef_, intercept_ : arrays on the input's backend
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    n_iter_ : int
        Epochs run (passes of sampled rows; the largest over the one-vs-rest problems),
        rounded to the nearest whole epoch, at least 1 (the early stop tests at whole
        epochs): fewer than ``max_epochs`` when ``tol`` stopped the fit. The exact
        figures per problem are ``model_.params["epochs"]``. A ``ConvergenceWarning``
        says when ``max_epochs`` ended the fit before ``tol``'s test.

    Examples
    --------
    >>> from algorithms import S3GDClassifier
    >>> from algorithms.datasets import example_data
    >>> X, y = example_data()  # breast cancer, standardised
    >>> S3GDClassifier(step=0.1, max_epochs=5, random_state=0).fit(X, y).score(X, y) > 0.95
    True
    """

    _params = with_estimator_params(PARAMS, N_JOBS)
    _fit = staticmethod(fit)
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)
    _accept_sparse = True  # CSR X (scipy; cupyx on cuda): the anchor ops and the loop read its rows

    def __init__(self, *, loss="logistic", penalty="l2", lam=1e-3, l1_ratio=0.5, n_anchors=100, k_nearest=5,
                 step="auto", inner_iter=None, batch_size=10, max_epochs=10.0, max_time=None, tol="auto",
                 class_weight=None, method="s3gd", beta=10.0, kmeans_iter=5, kmeans_sample=1000,
                 checkpoint=0.25, random_state=None, backend="auto", dtype=None, verbose=0, n_jobs=None):
        self._store_params(locals())

    def fit(self, X, y, sample_weight=None):
        """Fit on (X, y), rows weighted by ``sample_weight`` (None: all 1); sets ``coef_``,
        ``intercept_`` like scikit-learn's linear models, and ``n_iter_`` (whole epochs run)."""
        super().fit(X, y, sample_weight)
        self.coef_ = self.model_.coef
        self.intercept_ = self.model_.intercept
        return self

    def _n_iter_done(self):
        # a schedule rounded up to whole outer loops and checkpoints runs a little past
        # an epoch's end (2.02 epochs for 2 tested): the nearest whole epoch
        return max(1, round(max(self.model_.params["epochs"])))


