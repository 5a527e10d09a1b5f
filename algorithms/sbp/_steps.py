"""SBP's loop parts that do not touch the loop's state: the self-kernel, the batch's
quadratic form, the multi-class response block, the replay of the averaged
coefficients from the loop's log (:mod:`algorithms.sbp`). Dense or CSR rows (scipy.sparse;
cupyx.scipy.sparse on cuda, whose rows a loop takes with :func:`dense_rows`: no host sync)."""

from __future__ import annotations

import numpy as np

from kbackends import get_kernel, ops, to_numpy

from .._models.prediction import kernel_expansion
from .._boundary.sparse import is_sparse

def scalar_as(xp, v, dtype):
    """A kernel's scalar result (a host float or a 0-d array) as a 0-d array of ``dtype``
    (no copy when it is one already)."""
    if isinstance(v, (float, np.floating)):
        return xp.asarray(v, dtype=dtype)
    return v if v.dtype == dtype else xp.astype(v, dtype)


def squared_norms(X, xp):
    """``||x_i||^2`` of every row, on X's device (float64 for sparse X, O(nnz))."""
    if is_sparse(X):  # squared in X's dtype, as the response kernels square it
        return xp.astype(ops.squared_sums(X, check_finite=False), xp.float64)
    return xp.sum(X * X, axis=1)


def dense_rows(X, rows, xp, bk):
    """Rows ``rows`` (a device index array) of X, dense: for CSR X densified on its
    device with no host synchronisation (the ``csr_rows_dense`` kernel; cupyx's row
    indexing reads the result's size back to the host)."""
    if is_sparse(X):
        return ops.csr_rows_dense(X, rows, backend=bk)
    return xp.take(X, rows, axis=0)


def self_kernel(X, xp, kernel):
    """``K(x_i, x_i)`` for every row: 1 for the RBF kernel, ``||x_i||^2`` for the linear."""
    if kernel == "rbf":
        return np.ones(X.shape[0])
    return np.asarray(to_numpy(squared_norms(X, xp)), dtype=np.float64)


def batch_quad(S, yb, xp, kernel, gamma):
    """``yb @ K(S, S) @ yb`` for the dense rows S, in float64 on the backend."""
    S = xp.astype(S, xp.float64)
    G = S @ S.T
    if kernel == "rbf":
        sq = xp.linalg.diagonal(G)
        G = xp.exp(-gamma * xp.maximum(sq[:, None] + sq[None, :] - 2.0 * G, 0.0))
    return yb @ G @ yb


def block_response(X, rows, coef, pattern, xp, kernel, gamma, bk, chunk_elements=1 << 22):
    """``(K(X, X[rows]) @ W).T`` of shape (K, n) where W (K * batch, K) is block
    diagonal with class k's coefficients ``coef[k]`` in its own rows (``pattern``:
    the 0/1 block-diagonal mask): every class's sampled rows share one kernel
    block per row chunk (the sampled rows dense, X as it is)."""
    n_out, batch = coef.shape
    Srows = dense_rows(X, rows, xp, bk)
    W = xp.astype(xp.reshape(coef, (n_out * batch,))[:, None] * pattern, X.dtype)
    return kernel_expansion(X, Srows, W, kernel=kernel, gamma=gamma, xp=xp, chunk_elements=chunk_elements).T


def replay(idx_log, s_log, n, eta0, batch_size, renormalise_below):
    """The averaged coefficients ``alpha_bar`` (K, n) from the loop's log, on the host:
    the ``sbp_replay`` kernel of the cpu engine (compiled where Numba is; its reference
    ``algorithms/sbp/_kernels/_xp.py`` says what it computes)."""
    return get_kernel("sbp_replay", "cpu")(idx_log, s_log, xp=np, n=n, eta0=eta0, batch_size=batch_size,
                                           renormalise_below=renormalise_below)
