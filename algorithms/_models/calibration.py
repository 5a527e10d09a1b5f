"""Probabilities for hinge-type classifiers: Platt's sigmoid on held-out rows.

A hinge-type decision value is a margin, not a log-odds. ``probability=True``
(``DSGClassifier``, ``SBPClassifier``; as scikit-learn's ``SVC``) turns it into one
the way Platt (1999, "Probabilistic outputs for support vector machines") does:
1. hold out a stratified :data:`CALIBRATION_FRACTION` of the labelled rows
   (at least one per class; :func:`calibration_split`), fit the model on the rest;
2. on the held-out decision values ``f``, fit ``P(y = 1 | f) = 1 / (1 + exp(a f + b))``
   by maximum likelihood against Platt's smoothed targets ``(N+ + 1) / (N+ + 2)``
   for the positive rows and ``1 / (N- + 2)`` for the negative ones (so a
   separable held-out set does not push ``a`` to infinity); :func:`platt_sigmoid`;
3. more than two classes (one-vs-rest decision columns): one sigmoid per class
   on its own column, then the row normalised to sum to one (as scikit-learn's
   ``CalibratedClassifierCV``).

The fitted ``(a, b)`` are stored in the model's ``params["calibration"]``, so
``model.predict_proba`` uses them, and a saved model keeps them
(:mod:`algorithms._models.persistence`: ``params`` is the file's JSON header).
:func:`calibrate` does steps 2-3 for a model fitted through the functional API.

Why not all rows agree with ``predict``: ``predict`` thresholds ``f`` at 0, the
calibrated probability at ``f = -b / a``; and with several classes each column
has its own sigmoid, so the argmax of the probabilities can differ from the
argmax of ``f`` where two classes' decision values are close. Both happen only
for rows near a decision boundary.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from kbackends import array_namespace, is_array, to_numpy

from .._boundary.fit_plan import validation_rows
from .._boundary.params import Param, ParamTable, boolean
from .._boundary.validation import seed_from

__all__ = ["CALIBRATION_FRACTION", "PROBABILITY", "calibrate", "calibrated_proba", "calibration_split",
           "platt_sigmoid", "with_probability"]

#: Fraction of the labelled rows held out to fit the sigmoid (``probability=True``).
CALIBRATION_FRACTION = 0.1

PROBABILITY = Param("probability", False, boolean(),
                    "predict_proba by Platt's sigmoid fitted on 10% held-out labelled rows (the model is "
                    "fitted on the other 90%)")


def with_probability(table):
    """An estimator's table: ``table`` plus :data:`PROBABILITY` (not an argument of the
    module's ``fit``: the estimator splits the rows and calibrates)."""
    return ParamTable(*table.params, PROBABILITY)


def platt_sigmoid(f, positive):
    """Platt's sigmoid ``P(positive | f) = 1 / (1 + exp(a f + b))`` fitted to decision values.

    Maximum likelihood with Platt's smoothed targets, ``(N+ + 1) / (N+ + 2)`` for
    the positive rows and ``1 / (N- + 2)`` for the others, started at ``a = 0``,
    ``b = log((N- + 1) / (N+ + 1))`` as in Platt's pseudo-code, by Newton's method
    on the two parameters with a backtracking line search (Lin, Lin & Weng 2007:
    the objective is convex; their stable forms of ``log(1 + exp(.))``).

    Parameters
    ----------
    f : array-like of shape (n,)
        Decision values (host).
    positive : array-like of bool, shape (n,)

    Returns
    -------
    (float, float)
        ``a`` (negative when larger ``f`` means more likely positive) and ``b``.
    """
    f = np.asarray(f, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    t = np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))

    def objective(a, b):
        z = a * f + b  # -log p = log(1 + exp(z)), -log(1 - p) = log(1 + exp(-z))
        return float(np.sum(t * np.logaddexp(0.0, z) + (1.0 - t) * np.logaddexp(0.0, -z)))

    a, b = 0.0, math.log((n_neg + 1.0) / (n_pos + 1.0))
    value = objective(a, b)
    for _ in range(100):
        p = 0.5 * (1.0 + np.tanh(-0.5 * (a * f + b)))  # 1 / (1 + exp(z)), without overflow
        r = t - p  # d objective / d z
        grad = np.array([np.sum(r * f), np.sum(r)])
        w = p * (1.0 - p)
        hess = np.array([[np.sum(w * f * f), np.sum(w * f)], [np.sum(w * f), np.sum(w)]])
        hess += 1e-12 * np.eye(2)  # Platt's sigma: keeps the 2 x 2 system solvable
        if np.max(np.abs(grad)) < 1e-7:
            break
        step = np.linalg.solve(hess, grad)
        length = 1.0
        while length >= 1e-10:
            new = objective(a - length * step[0], b - length * step[1])
            if new < value + 1e-4 * length * float(grad @ -step):  # sufficient decrease
                break
            length /= 2.0
        else:
            break  # no decrease along Newton's direction: at the minimum to rounding
        a, b, value = a - length * step[0], b - length * step[1], new
    return float(a), float(b)


def calibration_split(y, random_state):
    """(fit rows, calibration rows): a stratified :data:`CALIBRATION_FRACTION` of the
    rows (at least one per class) held out (:func:`algorithms._boundary.fit_plan.validation_rows`).

    Raises
    ------
    ValueError
        A class with fewer than 2 rows (one is needed on each side).
    """
    y = np.asarray(y)
    classes, counts = np.unique(y, return_counts=True)
    if counts.min() < 2:
        msg = (f"`probability=True` holds out {CALIBRATION_FRACTION:.0%} of the rows of each class for the "
               f"calibration: every class needs at least 2 rows, class {classes[np.argmin(counts)]!r} has "
               f"{counts.min()}")
        raise ValueError(msg)
    return validation_rows(y.size, CALIBRATION_FRACTION, random_state, labels=y, every_class=True)


def calibration_params(f, y, classes):
    """``params["calibration"]`` from held-out decision values ``f`` ((n,) or (n, k), host)
    and their labels ``y``: one Platt sigmoid for two classes, one per class column else."""
    f = np.asarray(f, dtype=np.float64)
    y = np.asarray(y)
    classes = np.asarray(classes)
    if f.ndim == 1:
        pairs = [platt_sigmoid(f, y == classes[1])]
    else:
        pairs = [platt_sigmoid(f[:, k], y == classes[k]) for k in range(f.shape[1])]
    return {"method": "platt", "a": [a for a, _ in pairs], "b": [b for _, b in pairs], "n_rows": int(y.size)}


def calibrated_proba(f, calibration, xp):
    """Class probabilities (n, n_classes) from decision values ``f`` and a model's
    ``params["calibration"]``, in ``f``'s namespace."""
    a = xp.asarray(np.asarray(calibration["a"]), dtype=f.dtype, device=getattr(f, "device", None))
    b = xp.asarray(np.asarray(calibration["b"]), dtype=f.dtype, device=getattr(f, "device", None))
    if f.ndim == 1:
        p = 1.0 / (1.0 + xp.exp(xp.clip(a[0] * f + b[0], -60.0, 60.0)))
        return xp.stack((1.0 - p, p), axis=1)
    p = 1.0 / (1.0 + xp.exp(xp.clip(a[None, :] * f + b[None, :], -60.0, 60.0)))
    return p / xp.sum(p, axis=1, keepdims=True)


def calibrate(model, X, y, *, backend="auto"):
    """``model`` with Platt's sigmoid fitted on rows (X, y) it was not trained on.

    Parameters
    ----------
    model : RFFModel or KernelExpansionModel (or any classifier model)
        Fitted with two classes (one decision column) or one-vs-rest.
    X : array of shape (n_rows, n_features_in)
        Held-out rows (every class present).
    y : array of shape (n_rows,)
        Their labels, of ``model.classes``.

    Returns
    -------
    model
        The same model, ``params["calibration"]`` set: its ``predict_proba`` is defined.
    """
    if model.task not in ("binary", "ovr", "softmax"):
        msg = f"`model` must be a classifier to calibrate, got a {model.task} model"
        raise ValueError(msg)
    f = to_numpy(model.decision_function(X, backend=backend))
    y = np.asarray(to_numpy(y) if is_array(y) else y)
    unknown = np.setdiff1d(np.unique(y), np.asarray(model.classes))
    if unknown.size:
        msg = f"`y` has labels the model does not know: {unknown.tolist()[:5]}"
        raise ValueError(msg)
    calibration = calibration_params(f, y, model.classes)
    return dataclasses.replace(model, params={**model.params, "calibration": calibration})


def fit_calibrated(fit, X, y, params):
    """The estimators' ``probability=True``: ``fit(X_fit, y_fit, fit_rows, **params)`` on all
    but a stratified held-out fraction (``fit_rows``: their host indices, for per-row
    arguments such as ``sample_weight``), then :func:`calibrate` on that fraction (unweighted)."""

    y_host = np.asarray(to_numpy(y) if is_array(y) else y)
    split_seed = seed_from(params.get("random_state")) % 2**32
    fit_rows, held_rows = calibration_split(y_host, split_seed)
    model = fit(_rows(X, fit_rows), _rows(y, fit_rows), fit_rows, **params)
    return calibrate(model, _rows(X, held_rows), y_host[held_rows], backend=params.get("backend", "auto"))


def _rows(a, rows):
    """Rows ``rows`` (host int array) of a NumPy / CuPy / array-API array or a sparse matrix."""
    if isinstance(a, np.ndarray) or hasattr(a, "tocsr"):
        return a[rows]
    if not is_array(a):  # a list or a pandas object
        return np.asarray(a)[rows]
    xp = array_namespace(a)
    return xp.take(a, xp.asarray(rows, device=getattr(a, "device", None)), axis=0)
