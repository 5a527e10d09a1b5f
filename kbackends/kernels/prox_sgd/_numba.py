"""The cpu engine of the inner loops: same arithmetic as ``_xp`` (see there),
a whole run of outer loops in one compiled, single-threaded call.

The model has d + 1 weights: X's columns and an implicit constant feature 1
(the intercept), so no (n, d + 1) copy of X is ever made.

Per inner step O(p d + p k + d): the batch dot products, the anchor
correction gathered from k neighbours per row, one axpy per row, the prox.

Sparse X (scipy CSR, canonical): the same loop reads rows through
``(data, indices, indptr)``: a row's dot product and axpy cost O(nnz of the row)
instead of O(d) (the gradient, the prox and the snapshot stay O(d) per step on
the dense weights); X is never densified.
Per outer loop: S3GD O(m d) (anchor scores and the (2, m) x (m, d) product);
SVRG O(n d) (the exact gradient); SGD nothing.
"""

import numpy as np
from numba import njit

from ...losses import PSI_CODES, dpsi_scalar
from ._xp import METHODS


@njit(cache=True, inline="always")
def _dot(X, data, indices, indptr, sparse, i, w, d):
    """``x_i . w[:d] + w[d]`` (the constant feature's weight)."""
    s = w[d]
    if sparse:
        for t in range(indptr[i], indptr[i + 1]):
            s += data[t] * w[indices[t]]
    else:
        for c in range(d):
            s += X[i, c] * w[c]
    return s


@njit(cache=True, inline="always")
def _axpy(X, data, indices, indptr, sparse, i, a, g, d):
    """``g[:d] += a x_i``, ``g[d] += a``."""
    if sparse:
        for t in range(indptr[i], indptr[i + 1]):
            g[indices[t]] += a * data[t]
    else:
        for c in range(d):
            g[c] += a * X[i, c]
    g[d] += a


@njit(cache=True)
def _run(X, data, indices, indptr, sparse, n, d, cls, w, batches, sample_weight, anchors, G, nbr_idx, nbr_w, code,
         loss, beta, eta, l1, l2, k_in, n_outer, record_step, record_g, record_w):
    # w, g, H have d + 1 entries: the last is the constant feature's (intercept)
    p = batches.shape[1]
    m = anchors.shape[0]
    k = nbr_idx.shape[1]
    shrink = 1.0 / (1.0 + 2.0 * eta * l2)
    H = np.zeros(d + 1, dtype=np.float64)
    g = np.zeros(d + 1, dtype=np.float64)
    D = np.zeros((2, m), dtype=np.float64)
    u_ref = np.zeros(n if code == 2 else 0, dtype=np.float64)
    for outer in range(n_outer):
        if code == 1:
            for j in range(m):
                s = w[d]
                for c in range(d):
                    s += anchors[j, c] * w[c]
                D[0, j] = dpsi_scalar(s, -1.0, loss, beta)
                D[1, j] = dpsi_scalar(s, 1.0, loss, beta)
            for c in range(d + 1):
                H[c] = 0.0
            for cl in range(2):
                for j in range(m):
                    dj = D[cl, j]
                    for c in range(d + 1):
                        H[c] += dj * G[cl, j, c]
        elif code == 2:
            for c in range(d + 1):
                H[c] = 0.0
            for i in range(n):
                s = _dot(X, data, indices, indptr, sparse, i, w, d)
                u_ref[i] = s
                y = 2.0 * cls[i] - 1.0
                a = sample_weight[i] * dpsi_scalar(s, y, loss, beta) / n
                _axpy(X, data, indices, indptr, sparse, i, a, H, d)
        for inner in range(k_in):
            t = outer * k_in + inner
            for c in range(d + 1):
                g[c] = H[c]
            for b in range(p):
                i = batches[t, b]
                s = _dot(X, data, indices, indptr, sparse, i, w, d)
                y = 2.0 * cls[i] - 1.0
                a = dpsi_scalar(s, y, loss, beta)
                if code == 1:
                    ci = cls[i]
                    for q in range(k):
                        a -= nbr_w[i, q] * D[ci, nbr_idx[i, q]]
                elif code == 2:
                    a -= dpsi_scalar(u_ref[i], y, loss, beta)
                a /= p
                _axpy(X, data, indices, indptr, sparse, i, a, g, d)
            if t == record_step:
                for c in range(d + 1):
                    record_g[c] = g[c]
                    record_w[c] = w[c]
            for c in range(d + 1):
                v = w[c] - eta * g[c]
                if l1 > 0.0:
                    if v > eta * l1:
                        v -= eta * l1
                    elif v < -eta * l1:
                        v += eta * l1
                    else:
                        v = 0.0
                w[c] = v * shrink


def prox_sgd_run(X, cls, w, batches, sample_weight, anchors, G, nbr_idx, nbr_w, *, xp, method, loss, beta,
                 eta, l1, l2, k_in, n_outer, record_step):
    n, d = X.shape
    w = np.array(w, dtype=X.dtype, copy=True)
    record_g = np.zeros(d + 1, dtype=X.dtype)
    record_w = np.zeros(d + 1, dtype=X.dtype)
    if hasattr(X, "tocsr"):  # canonical CSR from the caller
        rows = (np.zeros((0, 0), dtype=X.dtype), X.data, X.indices, X.indptr, True)
    else:
        rows = (X, np.zeros(0, dtype=X.dtype), np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int32), False)
    _run(*rows, n, d, cls, w, batches, sample_weight.astype(np.float64), anchors, G, nbr_idx, nbr_w, METHODS[method],
         PSI_CODES[loss], float(beta), float(eta), float(l1), float(l2), int(k_in), int(n_outer), int(record_step),
         record_g, record_w)
    return w, record_g, record_w
