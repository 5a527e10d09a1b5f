"""SU inputs: pairs or points, the indicator s of the estimator, and fold splits."""

from __future__ import annotations

import numpy as np

from kbackends import array_namespace, is_array, to_numpy

from .._models.dask_arrays import is_dask_array
from .._boundary.sparse import is_sparse, take_rows
from .._boundary.precision import as_compute_dtype, compute_array, second_source
from .._boundary.validation import check_X, is_numpy_like

# --- input handling -----------------------------------------------------------------------


def _pointwise(X_similar, name="X_similar"):
    """(n_pairs, 2, d) -> (2 n_pairs, d) (pair i on rows 2i, 2i+1); 2-D passes through."""
    if X_similar is None:
        msg = f"`{name}` is required, got None"
        raise ValueError(msg)
    if is_sparse(X_similar):  # scipy.sparse is 2-D: points already
        return X_similar
    if not is_array(X_similar):
        X_similar = np.asarray(X_similar)
    ndim = X_similar.ndim
    if ndim == 3:
        if X_similar.shape[1] != 2:
            msg = f"`{name}` as pairs must have shape (n_pairs, 2, n_features), got {tuple(X_similar.shape)}"
            raise ValueError(msg)
        xp = array_namespace(X_similar) if is_array(X_similar) else np
        return xp.reshape(X_similar, (X_similar.shape[0] * 2, X_similar.shape[2]))
    if ndim != 2:
        msg = (
            f"`{name}` must be (n_pairs, 2, n_features) pairs or (2 * n_pairs, n_features) points, "
            f"got ndim={ndim}"
        )
        raise ValueError(msg)
    return X_similar



def _split_folds(rng, n_units, n_unlabeled, k, max_units=None, max_unlabeled=None):
    """k random disjoint folds of the similar units (pairs or points) and of the
    unlabeled points, optionally of random subsets of at most ``max_*`` of each."""
    folds_s = np.array_split(rng.permutation(n_units)[:max_units], k)
    folds_u = np.array_split(rng.permutation(n_unlabeled)[:max_unlabeled], k)
    return folds_s, folds_u


def _fold_rows(folds_s, folds_u, pairs):
    """Per fold: (fit rows, held-out rows) of the similar points and of the unlabeled
    points, sorted; a similar unit is a pair (rows 2i, 2i + 1) when ``pairs``."""

    def rows(units, as_pairs):
        units = np.sort(units)
        return np.stack([2 * units, 2 * units + 1], axis=1).reshape(-1) if as_pairs else units

    for k in range(len(folds_s)):
        rest_s = np.concatenate([f for j, f in enumerate(folds_s) if j != k])
        rest_u = np.concatenate([f for j, f in enumerate(folds_u) if j != k])
        yield rows(rest_s, pairs), rows(folds_s[k], pairs), rows(rest_u, False), rows(folds_u[k], False)



def _rows_by_indicator(X, s):
    """(similar rows, unlabeled rows) of X by the SU indicator s (NumPy or any array):
    of its two values the larger marks the similar points (1 / 0, True / False, 1 / -1).
    A scipy.sparse X gives CSR row subsets, a dask X lazy dask row subsets (s is read)."""
    if is_dask_array(s):
        s = s.compute()
    s = to_numpy(s) if not is_numpy_like(s) else np.asarray(s)
    if s.ndim != 1:
        msg = f"`y` (s) must be 1-D (1: similar, 0: unlabeled), got shape {s.shape}"
        raise ValueError(msg)
    values = np.unique(s)
    if values.size != 2:
        what = f"only 1 class ({values.tolist()})" if values.size < 2 else f"{values.size} values"
        msg = f"`y` (s) has {what}; two values are needed: similar (1) and unlabeled (0) points"
        raise ValueError(msg)
    rows_s, rows_u = np.flatnonzero(s == values[1]), np.flatnonzero(s == values[0])
    if is_sparse(X):  # scipy.sparse or cupyx.scipy.sparse: rows indexed on X's device
        X = X.tocsr()
        return take_rows(X, rows_s, None), take_rows(X, rows_u, None)
    if is_dask_array(X):
        if X.shape[0] != s.shape[0]:
            msg = f"`y` (s) has {s.shape[0]} entries but `X` has {X.shape[0]} rows"
            raise ValueError(msg)
        return X[rows_s], X[rows_u]
    if is_numpy_like(X):
        X = np.asarray(X)
        return X[rows_s], X[rows_u]
    xp = array_namespace(X)
    dev = getattr(X, "device", None)
    return xp.take(X, xp.asarray(rows_s, device=dev), axis=0), xp.take(X, xp.asarray(rows_u, device=dev), axis=0)


def engine_su_inputs(X_similar, X_unlabeled, bk, dtype):
    """:func:`check_su_inputs` in the engine's compute dtype for a fit, with the centre:
    ``(X_s, X_u, centre)``. Where the fit may centre (``precision.centre_features``) and
    float32 would round the similar points' spread away, both sources are centred on the
    similar points' column means (subtracted in float64, then cast); ``centre`` is those
    means (a tuple) or None."""
    X_s = check_X(_pointwise(X_similar), bk, dtype, name="X_similar", accept_sparse=True)
    X_s, centre = compute_array(X_s, bk, dtype)
    X_u = second_source(X_unlabeled, bk, X_s.dtype, centre, name="X_unlabeled")
    if X_u.shape[1] != X_s.shape[1]:
        msg = f"`X_unlabeled` has {X_u.shape[1]} features but `X_similar` has {X_s.shape[1]}"
        raise ValueError(msg)
    return X_s, X_u, centre


def check_su_inputs(X_similar, X_unlabeled, bk, dtype, *, engine=False):
    """The similar points (pairs flattened, :func:`_pointwise`) and the unlabeled points
    as finite 2-D arrays of ``bk`` in one float dtype, with the same number of features
    (``engine``: the engine's compute dtype, :func:`algorithms._boundary.precision.as_compute_dtype`).
    Sparse inputs (scipy.sparse; cupyx.scipy.sparse on cuda) come back as canonical CSR on
    ``bk``'s device, never densified.

    Returns
    -------
    X_s : array of shape (n_similar_points, n_features)
    X_u : array of shape (n_unlabeled, n_features)
    """
    X_s = check_X(_pointwise(X_similar), bk, dtype, name="X_similar", accept_sparse=True)
    if engine:
        X_s = as_compute_dtype(X_s, bk, dtype)
    X_u = check_X(X_unlabeled, bk, X_s.dtype, name="X_unlabeled", accept_sparse=True)
    if X_u.shape[1] != X_s.shape[1]:
        msg = f"`X_unlabeled` has {X_u.shape[1]} features but `X_similar` has {X_s.shape[1]}"
        raise ValueError(msg)
    return X_s, X_u
