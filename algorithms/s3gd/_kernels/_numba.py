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

Indices read from arrays (a row's columns, its anchors) index as unsigned integers:
Numba adds a negative-index wrap-around test to every signed index, which cost 15-20 %
of the sparse loop (w8a, a9a; the same iterates to the bit).
"""

import numpy as np
from numba import njit

from kbackends.kernel_tools import prefetch
from kbackends.losses import PSI_CODES, dpsi_scalar
from ._xp import METHODS


@njit(cache=True, inline="always")
def _dot(X, data, indices, indptr, sparse, i, w, d):
    """``x_i . w[:d] + w[d]`` (the constant feature's weight)."""
    s = w[d]
    if sparse:
        for t in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
            s += data[t] * w[np.uint64(indices[t])]
    else:
        for c in range(d):
            s += X[i, c] * w[c]
    return s


@njit(cache=True, inline="always")
def _axpy(X, data, indices, indptr, sparse, i, a, g, d):
    """``g[:d] += a x_i``, ``g[d] += a``."""
    if sparse:
        for t in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
            g[np.uint64(indices[t])] += a * data[t]
    else:
        for c in range(d):
            g[c] += a * X[i, c]
    g[d] += a


@njit(cache=True, inline="always")
def _snapshot(X, data, indices, indptr, sparse, n, d, cls, w, sample_weight, anchors, G, code, loss, beta, H, D,
              u_ref):
    """The outer loop's fixed part at the snapshot w: S3GD's D and H (Eq. 22), SVRG's
    u_ref and exact H; nothing for SGD."""
    m = anchors.shape[0]
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


@njit(cache=True, inline="always")
def _coefficient(s, i, cls, nbr_idx, nbr_w, D, u_ref, code, loss, beta):
    """psi'(s; y_i) minus the control variate of row i."""
    y = 2.0 * cls[i] - 1.0
    a = dpsi_scalar(s, y, loss, beta)
    if code == 1:
        ci = cls[i]
        for q in range(nbr_idx.shape[1]):
            a -= nbr_w[i, q] * D[ci, np.uint64(nbr_idx[i, q])]
    elif code == 2:
        a -= dpsi_scalar(u_ref[i], y, loss, beta)
    return a


@njit(cache=True, inline="always")
def _scaled(a, i, row_scale, p):
    """Row i's term of the batch average: ``a / p``, times its importance weight where
    rows are not drawn in proportion to their weights (``row_scale`` empty: all 1)."""
    if row_scale.shape[0]:
        return a * row_scale[i] / p
    return a / p


@njit(cache=True)
def _run(X, data, indices, indptr, sparse, n, d, cls, w, batches, sample_weight, row_scale, anchors, G, nbr_idx, nbr_w,
         code, loss, beta, eta, l1, l2, k_in, n_outer, record_step, record_g, record_w):
    # w, g, H have d + 1 entries: the last is the constant feature's (intercept)
    p = batches.shape[1]
    m = anchors.shape[0]
    shrink = 1.0 / (1.0 + 2.0 * eta * l2)
    H = np.zeros(d + 1, dtype=np.float64)
    g = np.zeros(d + 1, dtype=np.float64)
    D = np.zeros((2, m), dtype=np.float64)
    u_ref = np.zeros(n if code == 2 else 0, dtype=np.float64)
    for outer in range(n_outer):
        _snapshot(X, data, indices, indptr, sparse, n, d, cls, w, sample_weight, anchors, G, code, loss, beta, H, D,
                  u_ref)
        for inner in range(k_in):
            t = outer * k_in + inner
            for c in range(d + 1):
                g[c] = H[c]
            for b in range(p):
                i = batches[t, b]
                s = _dot(X, data, indices, indptr, sparse, i, w, d)
                a = _scaled(_coefficient(s, i, cls, nbr_idx, nbr_w, D, u_ref, code, loss, beta), i, row_scale, p)
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


@njit(cache=True, inline="always")
def _prefetch_rows(batches, t, n_steps, indptr, data, indices, nbr_idx, nbr_w, cls):
    """Ask for the rows of the steps ahead: two steps ahead a row's offset and
    graph entries, one step ahead its stored values (its offset is cached by then)."""
    if t + 2 < n_steps:
        for b in range(batches.shape[1]):
            i = batches[t + 2, b]
            prefetch(indptr, i)
            prefetch(cls, i)
            if nbr_idx.shape[0]:
                prefetch(nbr_idx, i)
                prefetch(nbr_w, i)
    if t + 1 < n_steps:
        for b in range(batches.shape[1]):
            i = batches[t + 1, b]
            start, stop = indptr[i], indptr[i + 1]
            if stop > start:
                prefetch(data, start)
                prefetch(data, stop - 1)
                prefetch(indices, start)
                prefetch(indices, stop - 1)


@njit(cache=True)
def _run_lazy(data, indices, indptr, n, d, cls, w, batches, sample_weight, row_scale, anchors, G, nbr_idx, nbr_w, code,
              loss, beta, eta, l2, k_in, n_outer, record_step, record_g, record_w):
    """Sparse rows and no l1 term: the same iterates in O(nnz) per step (no O(d) pass).

    Within an outer loop H is fixed and the prox is the shrink s = 1 / (1 + 2 eta l2),
    so w_{t+1} = s (w_t - eta H - eta sum_b a_b x_b) keeps the form
    ``w = alpha v + beta_h H``: alpha <- s alpha, beta_h <- s (beta_h - eta), and v
    changes only on the batch rows' nonzeros (by -s eta a_b x_b / alpha). A row's
    score is ``alpha x.v + beta_h x.H``. w is formed (O(d)) once per outer loop and at
    ``record_step``."""
    p = batches.shape[1]
    m = anchors.shape[0]
    shrink = 1.0 / (1.0 + 2.0 * eta * l2)
    H = np.zeros(d + 1, dtype=np.float64)
    D = np.zeros((2, m), dtype=np.float64)
    u_ref = np.zeros(n if code == 2 else 0, dtype=np.float64)
    v = np.zeros(d + 1, dtype=np.float64)
    coef = np.zeros(p, dtype=np.float64)
    X = np.zeros((0, 0), dtype=data.dtype)
    for outer in range(n_outer):
        _snapshot(X, data, indices, indptr, True, n, d, cls, w, sample_weight, anchors, G, code, loss, beta, H, D,
                  u_ref)
        for c in range(d + 1):
            v[c] = w[c]
        alpha = 1.0
        beta_h = 0.0
        for inner in range(k_in):
            t = outer * k_in + inner
            _prefetch_rows(batches, t, n_outer * k_in, indptr, data, indices, nbr_idx, nbr_w, cls)
            for b in range(p):
                i = batches[t, b]
                xv = v[d]
                xh = H[d]
                for q in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
                    c = np.uint64(indices[q])
                    xv += data[q] * v[c]
                    xh += data[q] * H[c]
                s = alpha * xv + beta_h * xh
                coef[b] = _scaled(_coefficient(s, i, cls, nbr_idx, nbr_w, D, u_ref, code, loss, beta), i, row_scale, p)
            if t == record_step:
                for c in range(d + 1):
                    record_w[c] = alpha * v[c] + beta_h * H[c]
                    record_g[c] = H[c]
                for b in range(p):
                    _axpy(X, data, indices, indptr, True, batches[t, b], coef[b], record_g, d)
            alpha_next = shrink * alpha
            beta_h = shrink * (beta_h - eta)
            scale = -shrink * eta / alpha_next
            for b in range(p):
                _axpy(X, data, indices, indptr, True, batches[t, b], scale * coef[b], v, d)
            alpha = alpha_next
        for c in range(d + 1):
            w[c] = alpha * v[c] + beta_h * H[c]


def prox_sgd_run(X, cls, w, batches, sample_weight, anchors, G, nbr_idx, nbr_w, *, xp, method, loss, beta,
                 eta, l1, l2, k_in, n_outer, record_step, row_scale=None, lazy=True):
    """See ``_xp.prox_sgd_run``. CSR ``X`` without an l1 term runs ``_run_lazy``
    (``lazy=False``: the O(d)-per-step loop, for the tests that compare them)."""
    n, d = X.shape
    w = np.array(w, dtype=X.dtype, copy=True)
    record_g = np.zeros(d + 1, dtype=X.dtype)
    record_w = np.zeros(d + 1, dtype=X.dtype)
    scale = np.zeros(0, dtype=X.dtype) if row_scale is None else np.asarray(row_scale)
    if hasattr(X, "tocsr") and l1 == 0.0 and lazy:  # canonical CSR from the caller
        _run_lazy(X.data, X.indices, X.indptr, n, d, cls, w, batches, sample_weight.astype(np.float64), scale,
                  anchors, G, nbr_idx, nbr_w, METHODS[method], PSI_CODES[loss], float(beta), float(eta), float(l2), int(k_in),
                  int(n_outer), int(record_step), record_g, record_w)
        return w, record_g, record_w
    if hasattr(X, "tocsr"):
        rows = (np.zeros((0, 0), dtype=X.dtype), X.data, X.indices, X.indptr, True)
    else:
        rows = (X, np.zeros(0, dtype=X.dtype), np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int32), False)
    _run(*rows, n, d, cls, w, batches, sample_weight.astype(np.float64), scale, anchors, G, nbr_idx, nbr_w,
         METHODS[method], PSI_CODES[loss], float(beta), float(eta), float(l1), float(l2), int(k_in), int(n_outer), int(record_step),
         record_g, record_w)
    return w, record_g, record_w
