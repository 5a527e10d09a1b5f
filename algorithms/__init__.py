"""algorithms: scalable kernel machines on the kbackends engines.

Functional API per algorithm module (``fit``, ``decision_function``,
``predict``), scikit-learn estimators re-exported here, and :func:`load` for
saved models::

    from algorithms import dsg, DSGClassifier, load
    model = dsg.fit(X, y, backend="cuda")
    model.save("model.npz")
    load("model.npz", backend="cpu")
"""

from . import dsg
from ._model import RFFModel, load
from .dsg import DSGClassifier, DSGRegressor

__all__ = ["dsg", "load", "RFFModel", "DSGClassifier", "DSGRegressor"]
__version__ = "0.1.0"
