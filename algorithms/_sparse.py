"""scipy.sparse data in the engine fits (DSG / UDSG / CDSG, TSGS3VM): checked once
as canonical CSR, rows taken as CSR subsets, never an (n, d) dense copy."""

from __future__ import annotations

import numpy as np

from kbackends.ops import as_csr, check_sparse_backend, is_sparse

__all__ = ["check_sparse_X", "for_resolve", "is_sparse", "sparse_gram_sample", "stack_rows", "take_rows"]


def check_sparse_X(X, bk, dtype, *, name="X", min_samples=1):
    """``X`` (any scipy.sparse format) as a finite canonical CSR of the compute dtype.

    Raises
    ------
    TypeError
        Off the cpu backend, or for a non-numeric dtype.
    ValueError
        For too few rows, no column, NaN / inf, or squared row sums that overflow.
    """
    from ._validation import check_shape

    check_sparse_backend(bk, name)
    check_shape(X, name, min_samples)
    if X.dtype.kind == "c" or X.dtype.kind not in "fiub":
        msg = f"`{name}` must have a real numeric dtype, got {X.dtype}"
        raise TypeError(msg)
    target = np.dtype(dtype) if dtype is not None else (X.dtype if X.dtype.kind == "f" and X.dtype.itemsize >= 4
                                                       else np.dtype(np.float64))
    X = as_csr(X.astype(target, copy=False) if X.dtype != target else X, name)
    if not np.all(np.isfinite(X.data)):
        msg = f"`{name}` contains NaN or infinite values"
        raise ValueError(msg)
    if X.nnz:
        # The exact squared row sums (O(nnz), float64): the algorithms sum squares of rows.
        with np.errstate(over="ignore"):  # an overflow to inf is what is looked for
            sq = np.add.reduceat(X.data.astype(np.float64) ** 2, X.indptr[:-1][np.diff(X.indptr) > 0])
        if not np.all(sq < float(np.finfo(X.dtype).max)):
            msg = (f"`{name}` has rows whose squared sums overflow {X.dtype}; standardise the features "
                   "(e.g. sklearn.preprocessing.MaxAbsScaler) or use float64")
            raise ValueError(msg)
    return X


def for_resolve(X):
    """``X`` as :func:`kbackends.resolve` should see it: a sparse matrix picks no
    backend of its own (``None``: the others', else cpu), a dense array is itself."""
    return None if is_sparse(X) else X


def take_rows(X, rows, xp):
    """Rows ``rows`` of ``X``: a CSR row subset for sparse ``X``, ``xp.take`` otherwise."""
    if is_sparse(X):
        return X[np.asarray(rows)]
    return xp.take(X, rows, axis=0)


def stack_rows(parts, xp):
    """The rows of ``parts`` one after the other (CSR if any part is sparse)."""
    if any(is_sparse(p) for p in parts):
        import scipy.sparse

        return scipy.sparse.vstack([scipy.sparse.csr_matrix(p) for p in parts], format="csr")
    return xp.concat(parts, axis=0)


def sparse_gram_sample(X, rows):
    """Squared norms and Gram matrix (float64, dense (k, k)) of the sampled rows of
    sparse ``X``, scaled to max |x| = 1, and that scale: the median heuristic's
    inputs in O(nnz of the sample + k^2), never the (k, d) dense sample."""
    S = X[np.asarray(rows)].astype(np.float64)
    scale = float(np.max(np.abs(S.data))) if S.nnz else 0.0
    if scale == 0.0:
        return None, None, 0.0
    S = S / scale
    sq = np.asarray(S.multiply(S).sum(axis=1)).ravel()
    return sq, (S @ S.T).toarray(), scale
