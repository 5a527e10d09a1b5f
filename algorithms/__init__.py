"""algorithms: scalable kernel machines on the kbackends engines.

Functional API per algorithm module (``fit``, ``decision_function``,
``predict``), scikit-learn estimators re-exported here, and :func:`load` for
saved models::

    from algorithms import dsg, DSGClassifier, load
    model = dsg.fit(X, y, backend="cuda")
    model.save("model.npz")
    load("model.npz", backend="cpu")
"""

from . import dsg, s3gd, sbp, tsgs3vm, tsgsu
from ._models.model import KernelExpansionModel, LinearModel, RFFModel, load
from .dsg import DSGClassifier, DSGRegressor
from .s3gd import S3GDClassifier
from .sbp import SBPClassifier
from .tsgs3vm import TSGS3VMClassifier
from .tsgsu import TSGSUClassifier

__all__ = [
    "dsg", "tsgs3vm", "tsgsu", "sbp", "s3gd", "load", "RFFModel", "KernelExpansionModel", "LinearModel",
    "DSGClassifier", "DSGRegressor", "TSGS3VMClassifier", "TSGSUClassifier", "SBPClassifier", "S3GDClassifier",
]
from kbackends import __version__  # one distribution, one version (pyproject.toml)
