"""Sparse data in the fits (scipy.sparse; cupyx.scipy.sparse on cuda): checked once
as canonical CSR on the backend's device, rows taken as CSR subsets, never an
(n, d) dense copy."""

from __future__ import annotations

import numpy as np

from kbackends.ops import CSRRows, as_csr, check_sparse_backend, is_sparse, sparse_module, squared_sums, to_backend

from .shapes import check_shape

__all__ = ["batch_rows", "check_sparse_X", "is_sparse", "sparse_gram_sample", "stack_rows", "take_rows"]


def check_sparse_X(X, bk, dtype, *, name="X", min_samples=1):
    """``X`` (any scipy.sparse or cupyx.scipy.sparse format) as a finite canonical
    CSR of the compute dtype on ``bk``'s device (moved once if needed).

    Raises
    ------
    TypeError
        Off the backends with sparse kernels (:data:`kbackends.ops.SPARSE_BACKENDS`),
        or for a non-numeric dtype.
    ValueError
        For too few rows, no column, NaN / inf, or squared row sums that overflow.
    """
    check_sparse_backend(bk, name)
    check_shape(X, name, min_samples)
    if X.dtype.kind == "c" or X.dtype.kind not in "fiub":
        msg = f"`{name}` must have a real numeric dtype, got {X.dtype}"
        raise TypeError(msg)
    target = np.dtype(dtype) if dtype is not None else (X.dtype if X.dtype.kind == "f" and X.dtype.itemsize >= 4
                                                       else np.dtype(np.float64))
    X = as_csr(to_backend(X.astype(target, copy=False) if X.dtype != target else X, bk), name)
    dxp = _data_namespace(X)
    if not bool(dxp.all(dxp.isfinite(X.data))):
        msg = f"`{name}` contains NaN or infinite values"
        raise ValueError(msg)
    if X.nnz:
        # The exact squared row sums (O(nnz), float64): the algorithms sum squares of rows.
        sq = squared_sums(X, axis=1, dtype="float64", backend=bk, check_finite=False)
        if not bool(dxp.all(sq < float(np.finfo(X.dtype).max))):
            msg = (f"`{name}` has rows whose squared sums overflow {X.dtype}; standardise the features "
                   "(e.g. sklearn.preprocessing.MaxAbsScaler) or use float64")
            raise ValueError(msg)
    return X


def _data_namespace(X):
    """NumPy for scipy.sparse, CuPy for cupyx.scipy.sparse: the namespace of ``X.data``."""
    if sparse_module(X).__name__.startswith("cupyx"):
        import cupy

        return cupy
    return np


def take_rows(X, rows, xp):
    """Rows ``rows`` of ``X``: a CSR row subset for sparse ``X`` (indexed on its own
    device), ``xp.take`` otherwise."""
    if is_sparse(X):
        return X[_data_namespace(X).asarray(rows)]
    return xp.take(X, rows, axis=0)


def batch_rows(X, rows, bk):
    """A mini-batch's rows for the rff kernels: on cuda (and the simulator) a
    sparse ``X``'s rows are named, not gathered (:class:`kbackends.ops.CSRRows`:
    gathering cupyx rows reads their count on the host); :func:`take_rows` otherwise."""
    if is_sparse(X) and bk.name in ("cuda", "cudasim"):
        return CSRRows(X, rows)
    return take_rows(X, rows, bk.xp)


def stack_rows(parts, xp):
    """The rows of ``parts`` one after the other (CSR if any part is sparse)."""
    sparse = [p for p in parts if is_sparse(p)]
    if sparse:
        sp = sparse_module(sparse[0])
        return sp.vstack([sp.csr_matrix(p) for p in parts], format="csr")
    return xp.concat(parts, axis=0)


def sparse_gram_sample(X, rows):
    """Squared norms and Gram matrix (float64, dense (k, k), on the host) of the
    sampled rows of sparse ``X``, scaled to max |x| = 1, and that scale: the median
    heuristic's inputs in O(nnz of the sample + k^2), never the (k, d) dense sample."""
    S = take_rows(X, rows, None)
    if sparse_module(S).__name__.startswith("cupyx"):
        S = S.get()  # setup: k rows come to the host once
    S = S.astype(np.float64)
    scale = float(np.max(np.abs(S.data))) if S.nnz else 0.0
    if scale == 0.0:
        return None, None, 0.0
    S = S / scale
    sq = np.asarray(S.multiply(S).sum(axis=1)).ravel()
    return sq, (S @ S.T).toarray(), scale
