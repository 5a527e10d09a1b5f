"""TSGS3VMClassifier: the scikit-learn estimator over :func:`algorithms.tsgs3vm.fit`."""

from __future__ import annotations

from .._models.estimator import FunctionalClassifier
from ..dsg import decision_function, predict
from ._fit import PARAMS, fit


class TSGS3VMClassifier(FunctionalClassifier):
    """Semi-supervised SVM (TSGS3VM) as a scikit-learn estimator.

    ``fit(X, y)`` with unlabeled rows marked ``y == -1`` (scikit-learn's
    semi-supervised convention, as in ``SelfTrainingClassifier``); parameters
    as in :func:`algorithms.tsgs3vm.fit`. No ``probability`` parameter (unlike
    DSG and SBP): its labelled rows are the scarce part, and holding 10% of them
    out for Platt's sigmoid leaves too few for the sigmoid and costs the fit the
    labels it needs most; ``sklearn.calibration.CalibratedClassifierCV`` wraps it.
    """

    _params = PARAMS
    _accept_sparse = True  # scipy.sparse X; cupyx.scipy.sparse on cuda: docs/architecture.md, RFF ops
    _fit = staticmethod(fit)
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)
