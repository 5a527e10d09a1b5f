"""Water-filling ops (SBP): the level of one or many segments, and the level
with the unregularised bias of the two-basin problem. Kernels:
:mod:`kbackends.kernels.waterfill`."""

from __future__ import annotations

import numpy as np

from .._backend import resolve
from .._registry import get_kernel
from ._checks import check_all_finite, check_float, check_ndim, check_real, check_signs

__all__ = ["water_level", "water_level_biased"]


def _check_weights(xp, bk, weights, c):
    """``weights`` as a float64 backend array of c's length, finite and >= 0."""
    weights = bk.asarray(weights)
    if weights.shape != c.shape:
        msg = f"`weights` must have the shape of `c` {tuple(c.shape)}, got {tuple(weights.shape)}"
        raise ValueError(msg)
    if not (xp.isdtype(weights.dtype, "real floating") or xp.isdtype(weights.dtype, "integral")):
        msg = f"`weights` must be real numbers, got dtype {weights.dtype}"
        raise TypeError(msg)
    weights = xp.astype(weights, xp.float64)
    if not bool(xp.all(xp.isfinite(weights) & (weights >= 0))):
        msg = "`weights` must be finite and >= 0"
        raise ValueError(msg)
    return weights


def water_level(c, volume, *, segments=None, weights=None, backend="auto", check_finite=True):
    """Water level gamma with ``sum_i max(0, gamma - c_i) = volume`` (the SBP's find_gamma).

    Pour ``volume`` of water over columns of heights ``c``: gamma is the surface.
    With ``segments`` the array is split into contiguous segments, each with its
    own volume, and all levels come from one call (one-vs-rest classes at once).

    Parameters
    ----------
    c : array of shape (n,)
        Heights, float32 or float64.
    volume : float >= 0, or array of shape (n_segments,)
        Water per segment. Volume 0 gives the segment's minimum.
    segments : array of shape (n_segments + 1,) of int, optional
        Offsets: segment s is ``c[segments[s]:segments[s+1]]``; non-decreasing,
        from 0 to n, no empty segment. None: one segment, all of ``c``.
    weights : array of shape (n,), optional
        Column widths ``w_i >= 0`` (sample weights): ``sum_i w_i max(0, gamma -
        c_i) = volume``; integer widths give the level of each height repeated
        that many times, width 0 removes it. Each segment needs a positive total.
    backend, check_finite
        As in :func:`rff_features`.

    Returns
    -------
    array of shape () without segments, (n_segments,) with them

    Notes
    -----
    cpu: expected O(n) selection per segment (Cotter et al. 2012, Appendix B),
    segments in parallel; cuda: radix bracketing, every segment over many
    threads, all segments in the same launches, no host round trip; xp:
    sort-based reference.

    Examples
    --------
    >>> import numpy as np
    >>> from kbackends.ops import water_level
    >>> float(water_level(np.array([0.0, 1.0, 3.0]), 2.0))   # 1.5 - 0 + 1.5 - 1 = 2
    1.5
    """
    bk = resolve(backend, c, volume if hasattr(volume, "shape") else None, segments)
    xp = bk.xp
    c = bk.asarray(c)
    check_ndim(c, "c", 1, show_shape=False)
    check_float(xp, c, "c")
    n = c.shape[0]
    if segments is None:
        offsets = bk.asarray([0, n])
    else:
        offsets = bk.asarray(segments)
        if offsets.ndim != 1 or offsets.shape[0] < 1 or not xp.isdtype(offsets.dtype, "integral"):
            msg = f"`segments` must be a 1-D integer array of offsets, got shape {tuple(offsets.shape)}, dtype {offsets.dtype}"
            raise ValueError(msg)
    k = offsets.shape[0] - 1
    if (volume.ndim if hasattr(volume, "ndim") else np.ndim(volume)):  # an array or a list of volumes
        volume = bk.asarray(volume)
        if not (xp.isdtype(volume.dtype, "real floating") or xp.isdtype(volume.dtype, "integral")):
            msg = f"`volume` must be a real number or an array of them, got dtype {volume.dtype}"
            raise TypeError(msg)
        volume = xp.astype(volume, xp.float64)
    else:  # a scalar (0-d arrays included)
        volume = xp.full((k,), check_real("volume", volume.item() if hasattr(volume, "item") else volume),
                         dtype=xp.float64)
    if volume.shape != (k,):
        msg = f"`volume` must be a scalar or have one entry per segment ({k}), got shape {tuple(volume.shape)}"
        raise ValueError(msg)
    if k:
        gaps = offsets[1:] - offsets[:-1]
        if int(offsets[0]) != 0 or int(offsets[-1]) != n or not bool(xp.all(gaps > 0)):
            msg = f"`segments` must rise strictly from 0 to len(c)={n} (no empty segment)"
            raise ValueError(msg)
    elif n:
        msg = "`segments` has no segment but `c` is not empty"
        raise ValueError(msg)
    if not bool(xp.all(volume >= 0)):
        msg = "`volume` must be >= 0"
        raise ValueError(msg)
    check_all_finite(xp, check_finite, {"c": c, "volume": volume}, together=True)
    if weights is not None:
        weights = _check_weights(xp, bk, weights, c)
        if k:
            total = xp.cumulative_sum(weights)
            ends = xp.take(xp.concat((xp.zeros((1,), dtype=xp.float64), total)), offsets)
            if not bool(xp.all(ends[1:] - ends[:-1] > 0)):
                msg = "`weights` must have a positive sum in every segment"
                raise ValueError(msg)
        levels = xp.astype(get_kernel("water_level_weighted", bk)(c, weights, volume, offsets, xp=xp), c.dtype)
        return levels[0] if segments is None else levels
    levels = get_kernel("water_level", bk)(c, volume, offsets, xp=xp)
    return levels[0] if segments is None else levels


def water_level_biased(c, y, volume, *, weights=None, backend="auto", check_finite=True):
    """Water level and unregularised bias of the two-basin problem (SBP, Section 3.6).

    Finds gamma and b with ``sum_i max(0, gamma - (c_i + y_i b)) = volume`` and the
    same number of positive and negative examples under water, which is the b
    that makes gamma largest (Cotter et al. 2012, Appendix B).

    Parameters
    ----------
    c : array of shape (n,)
        Responses, float32 or float64.
    y : array of shape (n,)
        Labels +1 / -1 (both present).
    volume : float >= 0
    weights : array of shape (n,), optional
        Column widths ``w_i >= 0`` (sample weights): ``sum_i w_i max(0, gamma -
        (c_i + y_i b)) = volume``, and at the optimum both basins hold the same
        width under water; each class needs a positive total width.
    backend, check_finite
        As in :func:`rff_features`.

    Returns
    -------
    gamma, b : 0-d arrays
        ``b`` is the middle of the interval of optimal biases (ties make it an interval).

    Notes
    -----
    cpu: expected O(n), a bisection on the number k of values under water whose
    probes are quickselects in both classes (no sort); cuda: device sorts, a
    scan and a search, no host round trip; xp: sort-based reference.

    Examples
    --------
    >>> import numpy as np
    >>> from kbackends.ops import water_level_biased
    >>> g, b = water_level_biased(np.array([0.0, 2.0, 1.0, 3.0]), np.array([1, 1, -1, -1]), 2.0)
    >>> float(g), float(b)
    (1.5, 0.5)
    """
    bk = resolve(backend, c, y)
    xp = bk.xp
    c, y = bk.asarray(c), bk.asarray(y)
    if c.ndim != 1 or y.shape != c.shape:
        msg = f"`c` and `y` must be 1-D of the same length, got shapes {tuple(c.shape)} and {tuple(y.shape)}"
        raise ValueError(msg)
    check_float(xp, c, "c")
    check_signs(xp, y)
    if not (bool(xp.any(y == 1)) and bool(xp.any(y == -1))):
        msg = "`y` must contain both classes: the two basins need one example each at least"
        raise ValueError(msg)
    volume = check_real("volume", volume.item() if hasattr(volume, "item") else volume, low=0.0)
    check_all_finite(xp, check_finite, {"c": c, "volume": volume}, together=True)
    if weights is not None:
        weights = _check_weights(xp, bk, weights, c)
        if not (bool(xp.any((y == 1) & (weights > 0))) and bool(xp.any((y == -1) & (weights > 0)))):
            msg = "`weights` must be positive on some example of each class"
            raise ValueError(msg)
        gamma, b = get_kernel("water_level_biased_weighted", bk)(c, y, weights, volume, xp=xp)
        return xp.asarray(gamma, dtype=c.dtype), xp.asarray(b, dtype=c.dtype)
    gamma, b = get_kernel("water_level_biased", bk)(c, y, volume, xp=xp)
    return xp.asarray(gamma, dtype=c.dtype), xp.asarray(b, dtype=c.dtype)

