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


def block_update(stored, delta, intercept, delta_b, *, xp, start, scale, fit_intercept):
    """Add a block's change to the stored coefficients, in place, and the intercept's.

    Parameters
    ----------
    stored : array (capacity, k)
        The coefficients in stored units (times ``scale`` the true ones); rows
        ``start`` to ``start + F`` are updated in place.
    delta : array (F, k)
        The block's change in true units.
    intercept, delta_b : arrays (k,)
    start : int
        The block's first row.
    scale : float
        The global scale factor.
    fit_intercept : bool

    Returns
    -------
    stored_delta : array (F, k)
        ``delta / scale``, what was added (the Polyak average records it).
    intercept : array (k,)
        ``intercept + delta_b`` (a new array), or ``intercept`` itself without one.
    """
    rows = slice(start, start + delta.shape[0])
    stored_delta = delta / scale
    stored[rows, :] = stored[rows, :] + stored_delta
    return stored_delta, intercept + delta_b if fit_intercept else intercept
