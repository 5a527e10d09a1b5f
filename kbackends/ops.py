"""Public ops: validate the arguments once, then dispatch to the registered kernel.

Each op resolves its backend from its array arguments (or ``backend=``), moves
inputs there if needed, checks shapes, dtypes and finiteness, and calls the
implementation the backend prefers (``numba`` on cpu, ``cuda`` on cuda, the
pure ``xp`` reference elsewhere). Algorithms that already validated their
data pass ``check_finite=False`` to skip the O(n d) scan (and, on a GPU, the
synchronisation it implies).
"""

from __future__ import annotations

from ._backend import resolve
from ._registry import get_kernel

__all__ = ["rff_features", "rff_predict", "rff_weighted_sum", "water_level", "water_level_biased", "kernel_response_update"]

FORMS = ("cos", "cossin")


def rff_features(X, omega, phase, *, form="cos", backend="auto", check_finite=True):
    """Random Fourier features of the rows of ``X``.

    Parameters
    ----------
    X : array of shape (n_samples, n_dims)
        float32 or float64.
    omega : array of shape (n_features, n_dims)
        Frequencies (see :func:`kbackends.random.omega_block`), same dtype as ``X``.
    phase : array of shape (n_features,)
        Phases, same dtype; unused when ``form="cossin"``.
    form : {"cos", "cossin"}, default "cos"
        ``"cos"``: ``cos(X @ omega.T + phase)``, shape (n_samples, n_features).
        ``"cossin"``: ``[cos(X @ omega.T), sin(X @ omega.T)]``, shape
        (n_samples, 2 * n_features).
    backend : str or Backend, default "auto"
        Follows the arrays' namespace unless named.
    check_finite : bool, default True
        Reject NaN or infinite entries in ``X``.

    Returns
    -------
    array of shape (n_samples, n_features) or (n_samples, 2 * n_features)

    Notes
    -----
    The features are unscaled: with ``omega``, ``phase`` drawn for kernel k,
    ``2/m * features(x) @ features(x')`` (cos) or ``1/m * ...`` (cossin)
    estimates k(x, x').
    """
    bk, (X, omega, phase) = _prepare(backend, form, check_finite, X, omega, phase)
    return get_kernel("rff_features", bk)(X, omega, phase, xp=bk.xp, form=form)


def rff_predict(X, omega, phase, coef, *, form="cos", backend="auto", check_finite=True):
    """``rff_features(X, omega, phase, form=form) @ coef`` without the (n, m) matrix.

    Parameters
    ----------
    X, omega, phase, form, backend, check_finite
        As in :func:`rff_features`.
    coef : array of shape (n_out,) or (n_out, n_targets)
        ``n_out`` is ``n_features`` for ``"cos"``, ``2 * n_features`` for ``"cossin"``.

    Returns
    -------
    array of shape (n_samples,) or (n_samples, n_targets)
    """
    bk, (X, omega, phase, coef) = _prepare(backend, form, check_finite, X, omega, phase, coef, "coef")
    n_out = _n_out(omega, form)
    if coef.ndim not in (1, 2) or coef.shape[0] != n_out:
        msg = (
            f"`coef` must have shape ({n_out},) or ({n_out}, n_targets) for form={form!r} "
            f"and {omega.shape[0]} features, got {tuple(coef.shape)}"
        )
        raise ValueError(msg)
    return get_kernel("rff_predict", bk)(X, omega, phase, coef, xp=bk.xp, form=form)


def rff_weighted_sum(X, omega, phase, g, *, form="cos", backend="auto", check_finite=True):
    """``g @ rff_features(X, omega, phase, form=form)``: the gradient-step product.

    Parameters
    ----------
    X, omega, phase, form, backend, check_finite
        As in :func:`rff_features`.
    g : array of shape (n_samples,) or (n_targets, n_samples)
        Per-sample weights (e.g. loss derivatives).

    Returns
    -------
    array of shape (n_out,) or (n_targets, n_out)
        ``n_out`` is ``n_features`` for ``"cos"``, ``2 * n_features`` for ``"cossin"``.
    """
    bk, (X, omega, phase, g) = _prepare(backend, form, check_finite, X, omega, phase, g, "g")
    if g.ndim not in (1, 2) or g.shape[-1] != X.shape[0]:
        msg = (
            f"`g` must have shape ({X.shape[0]},) or (n_targets, {X.shape[0]}) to match "
            f"`X` with {X.shape[0]} rows, got {tuple(g.shape)}"
        )
        raise ValueError(msg)
    return get_kernel("rff_weighted_sum", bk)(X, omega, phase, g, xp=bk.xp, form=form)


def water_level(c, volume, *, segments=None, backend="auto", check_finite=True):
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
    backend, check_finite
        As in :func:`rff_features`.

    Returns
    -------
    array of shape () without segments, (n_segments,) with them

    Notes
    -----
    cpu: expected O(n) selection per segment (Cotter et al. 2012, Appendix B),
    segments in parallel; cuda: one launch for all segments; xp: sort-based
    reference.

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
    if c.ndim != 1:
        msg = f"`c` must be 1-D, got ndim={c.ndim}"
        raise ValueError(msg)
    if c.dtype not in (xp.float32, xp.float64):
        msg = f"`c` must have a float32 or float64 dtype, got {c.dtype}"
        raise TypeError(msg)
    n = c.shape[0]
    if segments is None:
        offsets = bk.asarray([0, n])
    else:
        offsets = bk.asarray(segments)
        if offsets.ndim != 1 or offsets.shape[0] < 1 or not xp.isdtype(offsets.dtype, "integral"):
            msg = f"`segments` must be a 1-D integer array of offsets, got shape {tuple(offsets.shape)}, dtype {offsets.dtype}"
            raise ValueError(msg)
    k = offsets.shape[0] - 1
    volume = bk.asarray(volume)
    volume = xp.astype(volume, xp.float64) if volume.ndim else xp.full((k,), float(volume), dtype=xp.float64)
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
    if check_finite and not (bool(xp.all(xp.isfinite(c))) and bool(xp.all(xp.isfinite(volume)))):
        msg = "`c` or `volume` contains NaN or infinite values"
        raise ValueError(msg)
    levels = get_kernel("water_level", bk)(c, volume, offsets, xp=xp)
    return levels[0] if segments is None else levels


def water_level_biased(c, y, volume, *, backend="auto", check_finite=True):
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
    backend, check_finite
        As in :func:`rff_features`.

    Returns
    -------
    gamma, b : 0-d arrays
        ``b`` is the middle of the interval of optimal biases (ties make it an interval).

    Notes
    -----
    cpu and cuda: expected O(n), a bisection on the number k of values under
    water whose probes are quickselects in both classes (no sort; cuda runs it
    in one thread on the device); xp: sort-based reference.

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
    if c.dtype not in (xp.float32, xp.float64):
        msg = f"`c` must have a float32 or float64 dtype, got {c.dtype}"
        raise TypeError(msg)
    if not bool(xp.all((y == 1) | (y == -1))):
        msg = "`y` must hold only +1 and -1"
        raise ValueError(msg)
    if not (bool(xp.any(y == 1)) and bool(xp.any(y == -1))):
        msg = "`y` must contain both classes: the two basins need one example each at least"
        raise ValueError(msg)
    volume = float(volume)
    if not volume >= 0:
        msg = f"`volume` must be >= 0, got {volume}"
        raise ValueError(msg)
    if check_finite and not (bool(xp.all(xp.isfinite(c))) and volume < float("inf")):
        msg = "`c` or `volume` contains NaN or infinite values"
        raise ValueError(msg)
    gamma, b = get_kernel("water_level_biased", bk)(c, y, volume, xp=xp)
    return xp.asarray(gamma, dtype=c.dtype), xp.asarray(b, dtype=c.dtype)


RESPONSE_KERNELS = ("rbf", "linear")


def kernel_response_update(X, idx, coef, y, c, *, kernel="rbf", gamma=1.0, backend="auto", check_finite=True):
    """Responses after changing the coefficients of rows ``idx``: the SBP's update.

    ``c + y * (K(X, X[idx]) @ (coef * y[idx]))``, fused: no n x |idx| kernel matrix is
    kept (cpu and cuda compute each kernel value where it is used).

    Parameters
    ----------
    X : array of shape (n, d)
    idx : int array of shape (m,)
        Rows whose coefficients changed.
    coef : array of shape (m,)
        Their coefficient changes (alpha).
    y : array of shape (n,)
        Labels +1 / -1.
    c : array of shape (n,)
        Responses before the update; not modified.
    kernel : {"rbf", "linear"}, default "rbf"
        ``exp(-gamma ||x - x'||^2)`` or ``x . x'``.
    gamma : float > 0
    backend, check_finite
        As in :func:`rff_features`.

    Returns
    -------
    array of shape (n,)
        The updated responses.
    """
    if kernel not in RESPONSE_KERNELS:
        msg = f"`kernel` must be one of {RESPONSE_KERNELS}, got {kernel!r}"
        raise ValueError(msg)
    if not float(gamma) > 0:
        msg = f"`gamma` must be positive, got {gamma!r}"
        raise ValueError(msg)
    bk = resolve(backend, X, idx, coef, y, c)
    xp = bk.xp
    X, idx, coef, y, c = (bk.asarray(a) for a in (X, idx, coef, y, c))
    if X.ndim != 2:
        msg = f"`X` must be 2-D, got ndim={X.ndim}"
        raise ValueError(msg)
    n = X.shape[0]
    if X.dtype not in (xp.float32, xp.float64):
        msg = f"`X` must have a float32 or float64 dtype, got {X.dtype}"
        raise TypeError(msg)
    for name, a, length in (("y", y, n), ("c", c, n), ("coef", coef, idx.shape[0] if idx.ndim == 1 else -1)):
        if a.ndim != 1 or a.shape[0] != length:
            msg = f"`{name}` must be 1-D of length {length}, got shape {tuple(a.shape)}"
            raise ValueError(msg)
    if idx.ndim != 1 or not xp.isdtype(idx.dtype, "integral"):
        msg = f"`idx` must be a 1-D integer array, got shape {tuple(idx.shape)}, dtype {idx.dtype}"
        raise ValueError(msg)
    if idx.shape[0] and not (bool(xp.all(idx >= 0)) and bool(xp.all(idx < n))):
        msg = f"`idx` must index rows of `X` (0 <= idx < {n})"
        raise ValueError(msg)
    if check_finite and not all(bool(xp.all(xp.isfinite(a))) for a in (X, coef, c)):
        msg = "`X`, `coef` or `c` contains NaN or infinite values"
        raise ValueError(msg)
    c = xp.astype(c, X.dtype)
    y = xp.astype(y, X.dtype)
    w = xp.astype(coef, X.dtype) * xp.take(y, idx)
    return get_kernel("kernel_response_update", bk)(X, idx, w, y, c, xp=xp, kernel=kernel, gamma=float(gamma))


def _n_out(omega, form):
    return omega.shape[0] * (1 if form == "cos" else 2)


def _prepare(backend, form, check_finite, X, omega, phase, extra=None, extra_name=None):
    """Resolve the backend, move the arrays there and validate them."""
    if form not in FORMS:
        msg = f"`form` must be one of {FORMS}, got {form!r}"
        raise ValueError(msg)
    arrays = (X, omega, phase) if extra is None else (X, omega, phase, extra)
    bk = resolve(backend, *arrays)
    arrays = tuple(bk.asarray(a) for a in arrays)
    X, omega, phase = arrays[:3]
    xp = bk.xp
    names = ("X", "omega", "phase", extra_name)
    for name, a, ndim in zip(names, arrays, (2, 2, 1, None)):
        if ndim is not None and a.ndim != ndim:
            msg = f"`{name}` must be {ndim}-D, got ndim={a.ndim} (shape {tuple(a.shape)})"
            raise ValueError(msg)
        if a.dtype not in (xp.float32, xp.float64):
            msg = f"`{name}` must have a float32 or float64 dtype, got {a.dtype}"
            raise TypeError(msg)
        if a.dtype != X.dtype:
            msg = f"`{name}` has dtype {a.dtype} but `X` has {X.dtype}: cast them to one float dtype"
            raise TypeError(msg)
    if omega.shape[1] != X.shape[1]:
        msg = f"`omega` has {omega.shape[1]} columns but `X` has {X.shape[1]}: they must match"
        raise ValueError(msg)
    if phase.shape[0] != omega.shape[0]:
        msg = f"`phase` has {phase.shape[0]} entries but `omega` has {omega.shape[0]} rows"
        raise ValueError(msg)
    if check_finite:
        for name, a in zip(names, arrays):
            if not bool(xp.all(xp.isfinite(a))):
                msg = f"`{name}` contains NaN or infinite values"
                raise ValueError(msg)
    return bk, arrays
