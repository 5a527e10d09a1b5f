"""Array-API reference of the engine's bookkeeping (the oracle; the cpu engine runs it on NumPy)."""

from __future__ import annotations


def cache_batch(cache, y, idx, intercept, *, xp):
    """A mini-batch from a source's prediction cache.

    Parameters
    ----------
    cache : array (n, k)
        ``f`` (less the intercept) on every row of the source, scaled.
    y : array (n, k) or None
        The source's targets (None: an unlabeled source).
    idx : integer array (B,)
        The batch's rows.
    intercept : array (k,)

    Returns
    -------
    f : array (B, k)
        ``cache[idx] + intercept``.
    yb : array (B, k) or None
        ``y[idx]``.
    """
    f = xp.take(cache, idx, axis=0) + intercept
    return f, None if y is None else xp.take(y, idx, axis=0)


def block_update(stored, delta, intercept, delta_b, correction, intercept_sum, *, xp, start, scale, fit_intercept,
                 scale_sum):
    """Add a block's change to the stored coefficients, in place, and the intercept's;
    with the Polyak average, its bookkeeping too.

    Parameters
    ----------
    stored : array (capacity, k)
        The coefficients in stored units (times ``scale`` the true ones); rows
        ``start`` to ``start + F`` are updated in place.
    delta : array (F, k)
        The block's change in true units.
    intercept, delta_b : arrays (k,)
    correction : array (capacity, k) or None
        The Polyak average's running correction term: its rows
        ``start`` to ``start + F`` gain ``delta / scale * scale_sum``, in place. None
        without averaging.
    intercept_sum : array (k,) or None
        The sum of the intercepts so far (None without averaging).
    start : int
        The block's first row.
    scale : float
        The global scale factor.
    fit_intercept : bool
    scale_sum : float
        The sum of the scale factors before this iteration (the average's).

    Returns
    -------
    intercept : array (k,)
        ``intercept + delta_b`` (a new array), or ``intercept`` itself without one.
    intercept_sum : array (k,) or None
        ``intercept_sum + intercept`` (the new intercept), a new array.
    """
    rows = slice(start, start + delta.shape[0])
    stored_delta = delta / scale
    stored[rows, :] = stored[rows, :] + stored_delta
    if fit_intercept:
        intercept = intercept + delta_b
    if correction is None:
        return intercept, None
    correction[rows, :] = correction[rows, :] + stored_delta * scale_sum
    return intercept, intercept_sum + intercept
