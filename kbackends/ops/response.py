"""The SBP's response update: responses after changing some coefficients of a
kernel expansion, fused so no n x |idx| kernel matrix is kept. Kernels:
:mod:`kbackends.kernels.response`."""

from __future__ import annotations

from .._backend import resolve
from .._registry import get_kernel
from ..kernels.response._xp import KERNEL_CODES
from ._checks import check_all_finite, check_float, check_index, check_ndim, check_positive, check_signs
from ._sparse import as_csr, check_sparse_backend, is_sparse, resolve_hint, to_backend
from .rows import squared_sums

__all__ = ["RESPONSE_KERNELS", "kernel_response_update"]

"""The backends whose response kernels take CSR ``X``."""

RESPONSE_KERNELS = tuple(KERNEL_CODES)
"""The kernels of :func:`kernel_response_update`: ``("rbf", "linear")``, read from
the table its compiled kernels take the codes from."""


def kernel_response_update(X, idx, coef, y, c, *, kernel="rbf", gamma=1.0, sq_norms=None, backend="auto",
                           check_finite=True):
    """Responses after changing the coefficients of rows ``idx``: the SBP's update.

    ``c + y * (K(X, X[idx]) @ (coef * y[idx]))``, fused: no n x |idx| kernel matrix is
    kept (cpu and cuda compute each kernel value where it is used).

    Parameters
    ----------
    X : array or scipy.sparse matrix / array of shape (n, d)
        Sparse (any format; made canonical CSR): scipy.sparse on the cpu
        backend (and the CUDA simulator), cupyx.scipy.sparse on cuda (a
        scipy.sparse one is moved there once). The m changed rows are densified
        (m x d), never X: on cpu each row is read through its non-zeros, on
        cuda the products ``X @ S.T`` are one SpMM (cuSPARSE) per row chunk.
    idx : int array of shape (m,)
        Rows whose coefficients changed.
    coef : array of shape (m,)
        Their coefficient changes (alpha).
    y : array of shape (n,)
        Labels +1 / -1.
    c : array of shape (n,)
        Responses before the update; not modified.
    kernel : {"rbf", "linear"}, default "rbf"
        ``exp(-gamma ||x - x'||^2)`` or ``x . x'``.
    gamma : float > 0
    sq_norms : array of shape (n,), optional
        ``||x_i||^2`` of the rows of a sparse ``X`` (computed once by a caller that
        updates many times; computed here otherwise). Ignored for dense ``X``.
    backend, check_finite
        As in :func:`rff_features`.

    Returns
    -------
    array of shape (n,)
        The updated responses.
    """
    if kernel not in RESPONSE_KERNELS:
        msg = f"`kernel` must be one of {RESPONSE_KERNELS}, got {kernel!r}"
        raise ValueError(msg)
    check_positive("gamma", gamma)
    sparse_X = X if is_sparse(X) else None
    bk = resolve(backend, *((idx, coef, y, c, resolve_hint(X)) if sparse_X is not None else (X, idx, coef, y, c)))
    xp = bk.xp
    idx, coef, y, c = (bk.asarray(a) for a in (idx, coef, y, c))
    if sparse_X is not None:
        check_sparse_backend(bk, "X")
        X = as_csr(to_backend(sparse_X, bk))
    else:
        X = bk.asarray(X)
        check_ndim(X, "X", 2, show_shape=False)
        check_float(xp, X, "X")
    n = X.shape[0]
    for name, a, length in (("y", y, n), ("c", c, n), ("coef", coef, idx.shape[0] if idx.ndim == 1 else -1)):
        if a.ndim != 1 or a.shape[0] != length:
            msg = f"`{name}` must be 1-D of length {length}, got shape {tuple(a.shape)}"
            raise ValueError(msg)
    if idx.ndim != 1 or not xp.isdtype(idx.dtype, "integral"):
        msg = f"`idx` must be a 1-D integer array, got shape {tuple(idx.shape)}, dtype {idx.dtype}"
        raise ValueError(msg)
    check_index(xp, idx, n, f"`idx` must index rows of `X` (0 <= idx < {n})")
    check_signs(xp, y)
    check_all_finite(xp, check_finite, {"X": X if sparse_X is None else xp.asarray(X.data), "coef": coef, "c": c},
                     together=True)
    c = xp.astype(c, X.dtype)
    y = xp.astype(y, X.dtype)
    w = xp.astype(coef, X.dtype) * xp.take(y, idx)
    extra = {}
    if sparse_X is not None:
        extra["sq_norms"] = (squared_sums(X, backend=bk, check_finite=False) if sq_norms is None
                             else xp.astype(bk.asarray(sq_norms), X.dtype))
    return get_kernel("kernel_response_update", bk)(X, idx, w, y, c, xp=xp, kernel=kernel, gamma=float(gamma), **extra)

