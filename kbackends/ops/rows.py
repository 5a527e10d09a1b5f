"""Sums of squares of dense or sparse rows, once for every caller: the squared row
norms of the anchor graph, k-means, the SBP response and S3GD's step, and the column
scales S3GD warns on. Kernels: :mod:`kbackends.kernels.rows`."""

from __future__ import annotations

from .._registry import get_kernel
from ._checks import check_all_finite
from ._sparse import check_rows, finite_view, resolve_rows

__all__ = ["csr_rows_dense", "squared_sums"]

_DTYPES = ("float32", "float64")


def squared_sums(X, *, axis=1, dtype=None, backend="auto", check_finite=True):
    """``sum_j X_ij^2`` for every row (``axis=1``) or ``sum_i X_ij^2`` for every column (``axis=0``).

    Parameters
    ----------
    X : array or sparse matrix / array of shape (n, d)
        Dense float32 / float64, or sparse (any format, made canonical CSR): scipy.sparse
        on the cpu backend, cupyx.scipy.sparse on cuda. O(nnz) for sparse X, no dense copy.
    axis : {1, 0}, default 1
    dtype : {"float32", "float64"} or None
        What the squares are summed in; None: X's dtype. "float64" for a float32 X gives
        sums that cannot overflow.
    backend, check_finite
        As in :func:`kbackends.ops.rff_features`.

    Returns
    -------
    array of shape (n,) or (d,), of ``dtype``, on X's device

    Examples
    --------
    >>> import numpy as np, scipy.sparse
    >>> from kbackends.ops import squared_sums
    >>> X = scipy.sparse.csr_matrix(np.array([[3.0, 4.0], [0.0, 1.0]]))
    >>> squared_sums(X).tolist(), squared_sums(X, axis=0).tolist()
    ([25.0, 1.0], [9.0, 17.0])
    """
    bk, X, _ = resolve_rows(backend, X)
    xp = bk.xp
    check_rows(xp, X, "X")
    if axis not in (0, 1) or isinstance(axis, bool):
        msg = f"`axis` must be 0 or 1, got {axis!r}"
        raise ValueError(msg)
    if dtype is None:
        dtype = "float32" if X.dtype == xp.float32 else "float64"
    elif str(dtype) not in _DTYPES:
        msg = f"`dtype` must be one of {_DTYPES} or None, got {dtype!r}"
        raise ValueError(msg)
    check_all_finite(xp, check_finite, {"X": finite_view(xp, X)})
    return get_kernel("squared_sums", bk)(X, xp=xp, axis=axis, dtype=str(dtype))


def csr_rows_dense(X, rows, *, backend):
    """Rows ``rows`` of a CSR matrix as a dense ``(len(rows), d)`` array of its dtype.

    On cuda the rows are scattered from their stored values on the device with no host
    synchronisation (cupyx's row indexing reads the result's size back to the host); on
    cpu a compiled scatter (scipy's fancy row indexing costs about 0.1 ms a call). A loop
    op that trusts its inputs, as :mod:`kbackends.ops.steps`.

    Parameters
    ----------
    X : canonical CSR matrix on ``backend`` (scipy.sparse on cpu, cupyx.scipy.sparse on cuda)
        See :func:`kbackends.ops.as_csr`.
    rows : 1-D integer array of the backend
        Row indices, each in ``[0, n)``.
    backend : Backend

    Returns
    -------
    array of shape (len(rows), n_dims)
    """
    return get_kernel("csr_rows_dense", backend)(X, rows, xp=backend.xp)
