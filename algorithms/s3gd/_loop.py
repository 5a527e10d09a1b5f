"""S3GD's loop (:mod:`algorithms.s3gd`; ``fit`` in ``_fit``): the early stop on the
training objective and the exact gradient the callback's diagnostics compare with."""

from __future__ import annotations

import math

from kbackends.losses import PSI_CODES, dpsi, psi

from .._boundary.sparse import is_sparse


class _EarlyStop:
    """The training objective F(w) = (1/n) sum_i s_i psi_i + R(w) once per whole epoch:
    ``converged`` is True when an epoch lowered it by less than ``tol`` (relative to the
    best so far); ``best`` is the iterate of the lowest F seen (the last one without
    ``tol``). Without an l1 term the mean of the epoch's checkpoint iterates is a
    candidate too (it averages out much of a constant step's noise; l1 would lose its
    zeros). Two passes over X (O(nnz)) and one host sync per epoch."""

    def __init__(self, tol, X, cls, sw, loss, beta, l1, l2, xp):
        self.tol, self.X, self.sw, self.code, self.beta, self.l1, self.l2, self.xp = (
            tol, X, sw, PSI_CODES[loss], beta, l1, l2, xp)
        self.signs = xp.astype(cls, X.dtype) * 2.0 - 1.0
        self.f_best, self.w_best, self.next_epoch = math.inf, None, 1
        self.total, self.count = None, 0

    def value(self, w):
        xp = self.xp
        u = self.X @ w[:-1] + w[-1]
        data = xp.mean(self.sw * psi(u, self.signs, self.code, self.beta, xp))
        return float(data + self.l2 * xp.sum(w * w) + self.l1 * xp.sum(xp.abs(w)))

    def converged(self, w, epoch):
        if self.tol is None:
            return False
        if self.l1 == 0.0:
            self.total = w if self.total is None else self.total + w
            self.count += 1
        if epoch + 1e-9 < self.next_epoch:
            return False
        self.next_epoch = math.floor(epoch + 1e-9) + 1
        f, w_f = self.value(w), w
        if self.count > 1:
            mean = self.total / self.count
            f_mean = self.value(mean)
            if f_mean < f or not math.isfinite(f):
                f, w_f = f_mean, mean
        self.total, self.count = None, 0
        if not math.isfinite(f):
            return True
        improved = self.f_best - f
        if f < self.f_best:
            self.f_best, self.w_best = f, self.xp.asarray(w_f, copy=True)
        return improved < self.tol * abs(self.f_best)

    def best(self, w):
        return w if self.w_best is None else self.w_best


def _smooth_gradient(X, cls, sw, w, loss, beta, xp):
    """Exact gradient of the smooth part (1/n) sum_i s_i psi_i at w (w[-1]: the intercept)."""
    signs = xp.astype(cls, X.dtype) * 2.0 - 1.0
    a = sw * dpsi(X @ w[:-1] + w[-1], signs, PSI_CODES[loss], beta, xp) / X.shape[0]
    return xp.concat((X.T @ a if is_sparse(X) else a @ X, xp.sum(a)[None]))
