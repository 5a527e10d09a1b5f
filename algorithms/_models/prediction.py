"""Prediction, written once for the model classes of :mod:`algorithms._models.model`.

:class:`Predictor` gives a model its public ``decision_function`` / ``predict`` from
its ``raw_decision(X, bk)``; :func:`kernel_expansion` evaluates ``K(X, S) @ coef`` in
row chunks (SBP's model, and SBP's response update during training). Large inputs are
predicted :data:`PREDICT_ROWS` rows at a time: the compute-dtype copy of the rows and the
kernels' buffers stay small whatever the number of rows, and every row's value is the
one it gets alone.
"""

from __future__ import annotations

import numpy as np

from kbackends import resolve
from kbackends.ops import resolve_hint

from .._boundary.finite import check_finite_decision
from .._boundary.precision import centred_cast
from .dask_arrays import is_dask_array, map_rows
from .._boundary.validation import check_n_features, check_X
from .calibration import calibrated_proba


#: Rows per chunk of a prediction (16 MB of float32 rows for 16 features).
PREDICT_ROWS = 2**18


def _row_chunks(X):
    """``X`` in slices of :data:`PREDICT_ROWS` rows: arrays, CSR matrices and DataFrames
    of more rows than that; anything else (lists, other sparse formats) whole."""
    shape = getattr(X, "shape", None)
    n = shape[0] if shape is not None and len(shape) == 2 else 0
    sliceable = hasattr(X, "iloc") or getattr(X, "format", "csr") == "csr"
    if n <= PREDICT_ROWS or not sliceable:
        return [X]
    rows = X.iloc if hasattr(X, "iloc") else X
    return [rows[start : start + PREDICT_ROWS] for start in range(0, n, PREDICT_ROWS)]


class Predictor:
    """``decision_function`` / ``predict`` for a model with ``raw_decision(X, bk)`` (shape
    (n_samples, n_outputs)), ``task`` ("binary": the sign of the one column; "ovr" /
    "softmax": the argmax over columns; "regression": the values), ``classes``,
    ``n_features_in`` and ``dtype``."""

    #: Whether ``raw_decision`` takes a sparse CSR ``X`` (on the backends with sparse
    #: kernels, ``kbackends.ops.SPARSE_BACKENDS``).
    accepts_sparse = False

    def decision_function(self, X, *, backend="auto"):
        """Decision values of ``X``, on ``X``'s backend.

        Parameters
        ----------
        X : array of shape (n_samples, n_features_in)
            NumPy, CuPy or any array-API array; a list or other array-like becomes
            an array of the model's dtype.
        backend : {"auto", "cpu", "cuda"} or Backend, default "auto"

        Returns
        -------
        array of shape (n_samples,) for one output (two classes, regression), else
        (n_samples, n_outputs); a dask array in, a lazy dask array out (chunk-wise)
        """
        if is_dask_array(X):
            return map_rows(type(self).decision_function, X, self)
        bk = resolve(backend, resolve_hint(X))
        parts = [self._decision_of_rows(rows, bk) for rows in _row_chunks(X)]
        f = parts[0] if len(parts) == 1 else bk.xp.concat(parts, axis=0)
        return f[:, 0] if f.shape[1] == 1 else f

    def _decision_of_rows(self, X, bk):
        """``raw_decision`` of the rows ``X`` (validated here), shape (n, n_outputs)."""
        centre = getattr(self, "centre", None)
        # computed in the model's dtype (float32 models: the fast path); a centred model's rows
        # are read in their own dtype and centred in float64 before the cast, as in its fit
        X = check_X(X, bk, self.dtype if centre is None else None, accept_sparse=self.accepts_sparse)
        check_n_features(X, self.n_features_in)
        if centre is not None:
            X = centred_cast(X, centre, bk.xp, getattr(bk.xp, self.dtype))
        return self.raw_decision(X, bk)

    def predict(self, X, *, backend="auto"):
        """Predicted labels (classification) or values (regression) for ``X``, on ``X``'s
        backend: array of shape (n_samples,); a dask array in, a lazy dask array out."""
        if is_dask_array(X):
            return map_rows(type(self).predict, X, self)
        bk = resolve(backend, resolve_hint(X))
        f = self.decision_function(X, backend=bk)
        xp = bk.xp
        if self.task == "regression":
            return f
        check_finite_decision(f, xp)  # never a default class for a NaN decision value
        classes = bk.asarray(np.asarray(self.classes))
        index = xp.astype(f > 0, xp.int64) if self.task == "binary" else xp.argmax(f, axis=1)
        return xp.take(classes, index, axis=0)

    @property
    def has_proba(self):
        """Whether :meth:`predict_proba` is defined: a classifier fitted with the logistic
        loss, whose decision values are log-odds (softmax logits for "softmax"), or one
        calibrated on held-out rows (``params["calibration"]``, :mod:`algorithms._models.calibration`)."""
        params = getattr(self, "params", None) or {}
        return self.task in ("binary", "ovr", "softmax") and (
            params.get("loss") == "logistic" or "calibration" in params)

    def predict_proba(self, X, *, backend="auto"):
        """Class probabilities of ``X``, on ``X``'s backend, columns in ``classes`` order.

        Defined for the logistic loss (:attr:`has_proba`), where the decision
        value is the log-odds: two classes ``[1 - s(f), s(f)]`` with ``s`` the
        sigmoid; one-vs-rest rows of ``s(f_k)`` normalised to sum to one (as
        scikit-learn's one-vs-rest ``LogisticRegression``); softmax over the
        multinomial logits. A calibrated model (``params["calibration"]``: the
        estimators' ``probability=True``, or :func:`algorithms._models.calibration.calibrate`)
        uses its Platt sigmoids instead, whatever the loss. Hinge-type losses have
        no probabilistic reading without one.

        Returns
        -------
        array of shape (n_samples, n_classes)

        Raises
        ------
        ValueError
            The model was not fitted with ``loss="logistic"`` (or is a regressor).
        """
        if not self.has_proba:
            loss = (getattr(self, "params", None) or {}).get("loss")
            msg = (f"predict_proba needs a classifier fitted with loss='logistic', this {self.task} model has "
                   f"loss={loss!r}; fit the estimator with probability=True, or calibrate it with "
                   "sklearn.calibration.CalibratedClassifierCV")
            raise ValueError(msg)
        if is_dask_array(X):
            return map_rows(type(self).predict_proba, X, self)
        bk = resolve(backend, resolve_hint(X))
        xp = bk.xp
        f = self.decision_function(X, backend=bk)
        check_finite_decision(f, xp)
        calibration = self.params.get("calibration")
        if calibration is not None:
            return calibrated_proba(f, calibration, xp)
        if self.task == "softmax":
            e = xp.exp(f - xp.max(f, axis=1, keepdims=True))
            return e / xp.sum(e, axis=1, keepdims=True)
        # exp(60) is finite in float32; sigmoid(60) is 1 to float64's precision
        p = 1.0 / (1.0 + xp.exp(-xp.clip(f, -60.0, 60.0)))
        if self.task == "binary":
            return xp.stack((1.0 - p, p), axis=1)
        return p / xp.sum(p, axis=1, keepdims=True)


def kernel_expansion(X, S, coef, *, kernel, gamma, xp, chunk_elements=1 << 22):
    """``K(X, S) @ coef`` in row chunks of ``X``, so no more than ``chunk_elements``
    kernel values are held at once.

    Parameters
    ----------
    X : array of shape (n, d)
        Or a sparse CSR (scipy; cupyx on cuda): products by the sparse library,
        row norms from the non-zeros.
    S : array of shape (m, d), m >= 1
        The expansion's points (support vectors), X's dtype; CSR too.
    coef : array of shape (m, k)
        X's dtype.
    kernel : {"rbf", "linear"}
        ``exp(-gamma ||x - s||^2)`` or ``x . s``.
    gamma : float
    xp : array namespace

    Returns
    -------
    array of shape (n, k)
    """
    def squares(A):  # on A's device (cupyx: CuPy arrays)
        if hasattr(A, "tocsr"):
            return xp.reshape(xp.asarray(A.multiply(A).sum(axis=1), dtype=A.dtype), (-1,))
        return xp.sum(A * A, axis=1)

    sq_s = squares(S)
    step = max(1, chunk_elements // S.shape[0])
    parts = []
    for start in range(0, X.shape[0], step):
        Xc = X[start : min(X.shape[0], start + step), :]
        K = Xc @ S.T
        if hasattr(K, "toarray"):  # sparse times sparse: a (chunk, m) block, small
            K = K.toarray()
        K = xp.asarray(K) if hasattr(Xc, "tocsr") or hasattr(S, "tocsr") else K
        if kernel == "rbf":
            sq = squares(Xc)
            K = xp.exp(-gamma * xp.maximum(sq[:, None] + sq_s[None, :] - 2.0 * K, 0.0))
        parts.append(K @ coef)
    return parts[0] if len(parts) == 1 else xp.concat(parts, axis=0)
