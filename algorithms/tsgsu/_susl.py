"""SU-SL (Bao et al. 2018): the closed-form squared-loss SU classifier, the baseline.

Its random Fourier features are the library's own (:func:`kbackends.random.omega_block`
and :func:`kbackends.ops.rff_features`), so it runs on every backend and draws the
same features on all of them.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any

from kbackends import ops, resolve
from kbackends.ops import resolve_hint, sparse_module
from kbackends.random import omega_block

from .._boundary.sparse import is_sparse, stack_rows
from .._boundary.validation import (
    check_choice,
    check_gamma,
    check_n_features,
    check_nonneg_float,
    check_positive_int,
    check_prior,
    check_X,
    seed_from,
)
from ._inputs import check_su_inputs

FEATURES = ("linear", "rff")


@dataclass
class SUSLModel:
    """SU-SL: ``f(x) = w . phi(x)`` with ``phi`` linear ``[x, 1]`` or random Fourier
    features ``[sqrt(2/D) cos(x omega^T + phase), 1]``, arrays of one backend.

    Attributes
    ----------
    w : array of shape (n_features + 1,) or (n_components + 1,)
        Weights; the last one multiplies the constant feature (the bias).
    features : {"linear", "rff"}
    omega : array of shape (n_components, n_features) or None
        Frequencies (``features="rff"``), from :func:`kbackends.random.omega_block`.
    phase : array of shape (n_components,) or None
    prior : float
        The class prior ``pi_+`` of the fit.
    """

    w: Any
    features: str
    omega: Any = None
    phase: Any = None
    prior: float = 0.0

    def transform(self, X):
        """``phi(X)``: array of shape (n_samples, len(w)), on the model's backend and dtype
        (a scipy.sparse X: CSR for linear features, dense for random features)."""
        bk = resolve("auto", self.w)
        xp = bk.xp
        X = check_X(X, bk, self.w.dtype, accept_sparse=True)
        if self.features == "linear":
            if is_sparse(X):  # scipy.sparse, or cupyx.scipy.sparse on cuda
                sp = sparse_module(X)
                return sp.hstack((X, sp.csr_matrix(xp.ones((X.shape[0], 1), dtype=X.dtype))), format="csr")
            phi = X
        else:
            check_n_features(X, self.omega.shape[1])
            scale = math.sqrt(2.0 / self.omega.shape[0])
            phi = scale * ops.rff_features(X, self.omega, self.phase, backend=bk, check_finite=False)
        ones = xp.ones((X.shape[0], 1), dtype=X.dtype, device=getattr(X, "device", None))
        return xp.concat((phi, ones), axis=1)

    def decision_function(self, X):
        """``f(X)``: array of shape (n_samples,)."""
        return self.transform(X) @ self.w

    def predict(self, X):
        """+1 where ``f(X) > 0``, else -1: int64 array of shape (n_samples,)."""
        xp = resolve("auto", self.w).xp
        return 2 * xp.astype(self.decision_function(X) > 0, xp.int64) - 1


def su_sl_fit(X_similar, X_unlabeled, prior, *, lam=1e-3, features="linear", n_components=1000,
              gamma="median", random_state=None, backend="auto", dtype="float64"):
    """SU-SL (Bao et al. 2018): the closed-form minimiser of the squared-loss SU risk.

    With ``l(z, t) = (z t - 1)^2 / 4`` the uncorrected risk (7) of a
    linear-in-parameters model ``f = w . phi`` is a convex quadratic,

        R(w) = -c pi_S mean_S f + mean_U (f^2 / 4 + c f / 2) + const,   c = 1 / (2 pi_+ - 1),

    so ``w`` solves the (b x b) system
    ``(Phi_U^T Phi_U / (2 n_U) + lam I') w = c (pi_S mean_S phi - mean_U phi / 2)``
    (``I'`` leaves the bias unpenalised). Cost O(n b^2 + b^3), memory O(n b).

    Parameters
    ----------
    X_similar : array of shape (n_pairs, 2, n_features) or (2 * n_pairs, n_features)
    X_unlabeled : array of shape (n_unlabeled, n_features)
        Dense, or scipy.sparse (cupyx.scipy.sparse on cuda), kept sparse: memory O(nnz + n b).
    prior : float in (0, 1), not 1/2
        The class prior ``pi_+``.
    lam : float >= 0, default 1e-3
        Ridge on the weights (not on the bias).
    features : {"linear", "rff"}, default "linear"
        ``phi = [x, 1]``, or ``n_components`` random Fourier features of the RBF
        kernel ``exp(-gamma ||x - x'||^2)`` and a constant.
    n_components : int, default 1000
        Random features (``features="rff"``).
    gamma : "median" or float > 0, default "median"
        RBF width; "median" is the median heuristic on the pooled points.
    random_state : None, int or numpy Generator
        Seeds the random features (and the median heuristic's sample).
    backend : {"auto", "cpu", "cuda", ...}, default "auto"
    dtype : {"float64", "float32"} or None, default "float64"
        float64 by default on every backend: the normal equations square the
        condition number of ``Phi``. None keeps float32 / float64 inputs.

    Returns
    -------
    SUSLModel
        On the inputs' backend.
    """
    prior = check_prior(prior)
    check_choice("features", features, FEATURES)
    lam = check_nonneg_float("lam", lam)
    n_components = check_positive_int("n_components", n_components)
    bk = resolve(backend, resolve_hint(X_similar), resolve_hint(X_unlabeled))
    xp = bk.xp
    X_s, X_u = check_su_inputs(X_similar, X_unlabeled, bk, dtype)
    seed = seed_from(random_state)
    model = SUSLModel(w=xp.zeros(0, dtype=X_s.dtype), features=features, prior=prior)
    if features == "rff":
        if gamma in ("median", "scale"):  # the data-driven widths read the pooled points
            gamma = check_gamma(gamma, stack_rows((X_s, X_u), xp), bk, seed)
        gamma = check_gamma(gamma, X_s, bk, seed)
        model.omega, model.phase = omega_block(seed, 0, n_components, X_s.shape[1], kernel="rbf", gamma=gamma,
                                               dtype=X_s.dtype, backend=bk)
    phi_s, phi_u = model.transform(X_s), model.transform(X_u)
    c = 1.0 / (2.0 * prior - 1.0)
    pi_s = prior**2 + (1.0 - prior) ** 2
    b = phi_u.shape[1]
    device = getattr(phi_u, "device", None)
    ridge = xp.concat((xp.full((b - 1,), lam, dtype=phi_u.dtype, device=device),
                       xp.zeros((1,), dtype=phi_u.dtype, device=device)))
    if is_sparse(phi_u):  # linear features of sparse rows: the (b, b) Gram matrix is dense, phi is not
        gram = (phi_u.T @ phi_u).toarray()
        mean_s, mean_u = (xp.reshape(xp.asarray(phi.mean(axis=0)), (-1,)) for phi in (phi_s, phi_u))
    else:
        gram = phi_u.T @ phi_u
        mean_s, mean_u = xp.mean(phi_s, axis=0), xp.mean(phi_u, axis=0)
    H = gram / (2.0 * phi_u.shape[0]) + xp.eye(b, dtype=phi_u.dtype, device=device) * ridge
    rhs = c * (pi_s * mean_s - 0.5 * mean_u)
    model.w = xp.linalg.solve(H, xp.reshape(rhs, (b, 1)))[:, 0]
    return model
