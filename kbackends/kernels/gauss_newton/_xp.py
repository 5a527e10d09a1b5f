"""Array-API reference of the engine's preconditioned block step (the oracle; the cpu
engine runs it on NumPy, array_api_strict under the transfer guard).

The step on one block of F features, with ``phi = cos(X_b omega^T + phase)`` the
batch's features and ``g`` its weighted loss derivatives (the loop ops
:func:`kbackends.ops.gn_system` and :func:`kbackends.ops.gn_solve`):
``-eta (C + ridge mean(diag C) I')^-1 [phi, 1]^T g / B``, ``C`` the covariance of
``[phi, 1]`` summed over the sources (each weighted by its curvature), ``I'`` the
identity without the intercept's entry. The B x F products are formed in the compute
dtype (float32 halves their time; the ridge dominates the rounding), the
(F + 1) x (F + 1) system is float64.
"""

from __future__ import annotations


def _device(a):
    return getattr(a, "device", None)


def gn_system(phi, g, cov, rhs, *, xp, weight, fit_intercept):
    """One source's share of the step's system, added to ``(cov, rhs)``.

    Parameters
    ----------
    phi : array (B, F), the compute dtype
        The batch's features.
    g : array (B, k)
        The batch's weighted loss derivatives (cast to ``phi``'s dtype).
    cov, rhs : float64 arrays (n_cols, n_cols) and (n_cols, k), or None
        The other sources' shares so far, updated in place; None for the first
        source. ``n_cols = F + 1`` with the intercept, else F.
    weight : float
        The source's curvature weight.
    fit_intercept : bool
        Append the constant feature (the intercept's column).

    Returns
    -------
    (cov, rhs)
        ``cov + [phi, 1]^T [phi, 1] * weight / B`` and ``rhs + [phi, 1]^T g / B``.
    """
    B = phi.shape[0]
    if fit_intercept:
        phi = xp.concat((phi, xp.ones((B, 1), dtype=phi.dtype, device=_device(phi))), axis=1)
    f64 = xp.float64
    c = xp.astype(phi.T @ phi, f64) * (weight / B)
    r = xp.astype(phi.T @ xp.astype(g, phi.dtype), f64) / B
    if cov is None:
        return c, r
    cov[...] = cov + c
    rhs[...] = rhs + r
    return cov, rhs


def gn_solve(cov, rhs, *, xp, ridge, eta, n_features, fit_intercept, dtype):
    """The step from the summed system: ``-eta (cov + penalty)^-1 rhs``.

    Parameters
    ----------
    cov, rhs : float64 arrays (n_cols, n_cols), (n_cols, k)
        :func:`gn_system`'s sums (``cov`` may be overwritten).
    ridge : float
        Relative ridge: ``ridge * mean(diag(cov)[:F])`` is added to the features'
        diagonal entries, not the intercept's.
    eta : float
        The step length (already divided by the losses' curvature).
    n_features : int
        F, the block's features.
    fit_intercept : bool
        Whether ``cov``'s last row and column are the intercept's.
    dtype
        The compute dtype of the changes.

    Returns
    -------
    delta : array (F, k), ``dtype``
        The block's coefficient change.
    delta_b : array (k,), ``dtype``
        The intercept's change (zeros without an intercept).
    """
    F = n_features
    f64 = xp.float64
    n_cols = cov.shape[0]
    dev = _device(cov)
    ridge = xp.mean(xp.linalg.diagonal(cov)[:F]) * ridge  # a 0-d device array: no host read
    penalty = xp.ones((n_cols,), dtype=f64, device=dev) * ridge
    if fit_intercept:
        penalty = xp.where(xp.arange(n_cols, device=dev) == F, 0.0, penalty)  # intercept unpenalised
    step = xp.linalg.solve(cov + xp.eye(n_cols, dtype=f64, device=dev) * penalty, rhs)
    delta = xp.astype(-eta * step[:F, :], dtype)
    if fit_intercept:
        return delta, xp.astype(-eta * step[F, :], dtype)
    return delta, xp.zeros_like(delta[0, :])


def gn_inverses(systems, *, xp):
    """The inverses of a stack of the step's systems, ``(K, n, n)`` float64 (each symmetric
    positive definite: a Gram matrix plus a positive ridge): ``linalg.inv`` of the stack."""
    return xp.linalg.inv(systems)
