"""The scikit-learn classifier shared by the algorithm modules' estimators."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .distributed import is_dask_array
from ._validation import is_numpy_like, sklearn_validate


class FunctionalClassifier(ClassifierMixin, BaseEstimator):
    """A scikit-learn classifier over a module's ``fit`` / ``decision_function`` / ``predict``.

    Subclasses store their parameters in ``__init__`` and name the module's functions
    (``_fit = staticmethod(fit)``, ``_decision_function``, ``_predict``); ``fit`` passes
    every parameter to ``_fit`` and keeps the model as ``model_``. CuPy in, CuPy out.
    """

    def fit(self, X, y):
        """Fit on (X, y); CuPy in, model on the GPU."""
        from sklearn.utils.multiclass import check_classification_targets

        if y is None:
            msg = f"{type(self).__name__} requires y to be passed, but the target y is None"
            raise ValueError(msg)
        if is_dask_array(X):  # data-parallel on the cluster (dsg, tsgs3vm, tsgsu)
            self.model_ = type(self)._fit(X, y, **self.get_params())
            self.classes_ = np.asarray(self.model_.classes)
            return self
        X, y = sklearn_validate(self, X, y, reset=True)
        if is_numpy_like(y):
            check_classification_targets(y)
        self.model_ = type(self)._fit(X, y, **self.get_params())
        self.classes_ = np.asarray(self.model_.classes)
        return self

    def decision_function(self, X):
        """Decision values: (n_samples,) for two classes, else (n_samples, n_classes)."""
        check_is_fitted(self, "model_")
        if is_dask_array(X):
            return type(self)._decision_function(self.model_, X)
        return type(self)._decision_function(self.model_, sklearn_validate(self, X, None, reset=False))

    def predict(self, X):
        """Predicted labels; CuPy in, CuPy out."""
        check_is_fitted(self, "model_")
        if is_dask_array(X):
            return type(self)._predict(self.model_, X)
        return type(self)._predict(self.model_, sklearn_validate(self, X, None, reset=False))
