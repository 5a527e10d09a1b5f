"""Loop ops: the steps of a functional-gradient iteration over random-feature blocks (a
mini-batch from the prediction cache, the loss derivatives, the block's coefficient
update, the Gauss-Newton system and its solve, the held-out mean loss).

Unlike the other ops these trust their inputs: ``backend`` is a resolved
:class:`kbackends.Backend`, the arrays are already its arrays, of the shapes and dtypes
documented, and nothing is checked, moved or converted. They are meant for the inside
of an iteration loop whose data were validated once at the fit's entry: per-call checks
of namespaces, shapes, dtypes and finiteness would cost about as much host time as the
work itself (a GPU step is tens of microseconds), and a finiteness scan would wait for
the device. Each is one call of the kernel the backend prefers (``cuda``: one or a few
launches where the array code is several; elsewhere the pure array-API reference).
Kernels: :mod:`kbackends.kernels.engine`, :mod:`~kbackends.kernels.loss`,
:mod:`~kbackends.kernels.gauss_newton`.
"""

from __future__ import annotations

from .._registry import get_kernel

__all__ = ["block_update", "cache_batch", "gn_solve", "gn_system", "loss_derivative", "mean_loss"]


def cache_batch(cache, y, idx, intercept, *, backend):
    """A mini-batch from a source's prediction cache: ``(cache[idx] + intercept, y[idx])``.

    Parameters
    ----------
    cache : array (n, k)
        The source's predictions less the intercept, on every row.
    y : array (n, k) or None
        The source's targets (None: an unlabeled source).
    idx : integer array (B,)
        The batch's rows.
    intercept : array (k,)
    backend : Backend

    Returns
    -------
    f : array (B, k)
    yb : array (B, k) or None
    """
    return get_kernel("cache_batch", backend)(cache, y, idx, intercept, xp=backend.xp)


def block_update(stored, delta, intercept, delta_b, correction, intercept_sum, *, start, scale, fit_intercept,
                 scale_sum, backend):
    """Add a block's coefficient change to the stored coefficients in place, and the
    intercept's change; with a Polyak average, its correction term and intercept sum.

    Parameters
    ----------
    stored : array (capacity, k)
        Coefficients in stored units (``scale`` times them are the true ones); rows
        ``start`` to ``start + F`` gain ``delta / scale``, in place.
    delta : array (F, k)
        The block's change in true units.
    intercept, delta_b : arrays (k,)
    correction : array (capacity, k) or None
        The average's correction term: rows ``start`` to ``start + F`` gain
        ``delta / scale * scale_sum``, in place. None without averaging.
    intercept_sum : array (k,) or None
        The sum of the intercepts so far (None without averaging).
    start : int
    scale : float
        The global scale factor.
    fit_intercept : bool
    scale_sum : float
        The sum of the scale factors before this iteration (the average's).
    backend : Backend

    Returns
    -------
    intercept : array (k,)
        ``intercept + delta_b`` with an intercept, else ``intercept``.
    intercept_sum : array (k,) or None
        ``intercept_sum`` plus the new intercept (None without averaging).
    """
    return get_kernel("block_update", backend)(stored, delta, intercept, delta_b, correction, intercept_sum,
                                               xp=backend.xp, start=start, scale=scale, fit_intercept=fit_intercept,
                                               scale_sum=scale_sum)


def gn_inverses(systems, *, backend):
    """The inverses of a stack of the preconditioned step's regularised systems (each
    symmetric positive definite), for steps whose systems are built ahead.

    Parameters
    ----------
    systems : float64 array (K, n, n)
    backend : Backend

    Returns
    -------
    float64 array (K, n, n)
    """
    return get_kernel("gn_inverses", backend)(systems, xp=backend.xp)


def loss_derivative(f, y, *, loss, weight, backend):
    """``loss.derivative(f, y) * weight``: the weighted dl/df of a mini-batch, (B, k).

    Parameters
    ----------
    f : array (B, k)
        Predictions on the batch.
    y : array (B, k) or None
        Their targets as ``loss`` expects them (None for the unlabeled losses).
    loss : kbackends.losses.Loss
    weight : float
        The source's weight in the objective.
    backend : Backend
    """
    return get_kernel("loss_derivative", backend)(f, y, xp=backend.xp, loss=loss, weight=weight)


def mean_loss(f, y, intercept, weights, *, loss, backend):
    """The (weighted) mean over the rows of ``loss.value(f + intercept, y)`` summed over
    the outputs: a 0-d array, left on the device.

    Parameters
    ----------
    f : array (n, k)
        Predictions less the intercept.
    y : array (n, k)
    intercept : array (k,)
    weights : float64 array (n,) summing to 1, or None
        Row weights (None: the plain mean, in ``f``'s dtype; else float64).
    loss : kbackends.losses.Loss
    backend : Backend
    """
    return get_kernel("mean_loss", backend)(f, y, intercept, weights, xp=backend.xp, loss=loss)


def gn_system(phi, g, cov, rhs, *, weight, fit_intercept, backend):
    """One source's share of a Gauss-Newton block step's linear system, added to
    ``(cov, rhs)``: ``[phi, 1]^T [phi, 1] * weight / B`` and ``[phi, 1]^T g / B``, float64.

    Parameters
    ----------
    phi : array (B, F)
        The batch's random features, the compute dtype.
    g : array (B, k)
        The batch's weighted loss derivatives.
    cov, rhs : float64 arrays (n_cols, n_cols), (n_cols, k), or None
        The other sources' shares so far, updated in place; None for the first source
        (``n_cols`` is ``F + 1`` with the intercept, else ``F``).
    weight : float
        The source's curvature weight.
    fit_intercept : bool
    backend : Backend

    Returns
    -------
    cov, rhs : float64 arrays
    """
    return get_kernel("gn_system", backend)(phi, g, cov, rhs, xp=backend.xp, weight=weight,
                                            fit_intercept=fit_intercept)


def gn_solve(cov, rhs, *, ridge, eta, n_features, fit_intercept, dtype, backend):
    """The block step from :func:`gn_system`'s sums: ``-eta (cov + penalty)^-1 rhs``, the
    penalty ``ridge * mean(diag(cov)[:F])`` on the features' diagonal (the intercept's
    entry unpenalised).

    Parameters
    ----------
    cov, rhs : float64 arrays (n_cols, n_cols), (n_cols, k)
        ``cov`` may be overwritten.
    ridge : float
        The ridge relative to the mean feature variance.
    eta : float
        The step length.
    n_features : int
        F, the block's features.
    fit_intercept : bool
    dtype
        The compute dtype of the changes.
    backend : Backend

    Returns
    -------
    delta : array (F, k)
        The block's coefficient change.
    delta_b : array (k,)
        The intercept's change (zeros without an intercept).
    """
    return get_kernel("gn_solve", backend)(cov, rhs, xp=backend.xp, ridge=ridge, eta=eta, n_features=n_features,
                                           fit_intercept=fit_intercept, dtype=dtype)
