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

__all__ = [
    "rff_features", "rff_predict", "rff_weighted_sum", "water_level", "water_level_biased", "kernel_response_update",
    "kmeans", "snap_to_samples", "anchor_graph", "anchor_propagate", "anchor_accumulate",
]

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


# --- Sparse anchor propagation (S3GD, Algorithm 2) ---------------------------------


def _float_matrix(bk, a, name, ndim=2):
    xp = bk.xp
    if a.ndim != ndim:
        msg = f"`{name}` must be {ndim}-D, got ndim={a.ndim} (shape {tuple(a.shape)})"
        raise ValueError(msg)
    if a.dtype not in (xp.float32, xp.float64):
        msg = f"`{name}` must have a float32 or float64 dtype, got {a.dtype}"
        raise TypeError(msg)


def _check_finite(bk, check_finite, **arrays):
    if check_finite:
        for name, a in arrays.items():
            if not bool(bk.xp.all(bk.xp.isfinite(a))):
                msg = f"`{name}` contains NaN or infinite values"
                raise ValueError(msg)


def _anchor_knn(bk, X, anchors, k):
    return get_kernel("anchor_knn", bk)(X, anchors, xp=bk.xp, k=k)


def kmeans(X, n_clusters, *, n_iter=10, random_state=None, backend="auto", check_finite=True):
    """k-means centers: k-means++ seeding, then ``n_iter`` Lloyd iterations on the backend.

    The assignment step is :func:`anchor_graph`'s nearest-anchor kernel (row
    chunks, so no n x m matrix is held for large n) and the update is
    :func:`anchor_accumulate` with one-hot weights. A cluster left empty keeps
    its previous center.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        float32 or float64, ``n_samples >= n_clusters``.
    n_clusters : int >= 1
    n_iter : int >= 0, default 10
        Lloyd iterations after seeding (0: the k-means++ seeds).
    random_state : int, numpy Generator or None
        Seeds the k-means++ draws (on the host: one draw per center).
    backend, check_finite
        As in :func:`rff_features`.

    Returns
    -------
    array of shape (n_clusters, n_features)

    Examples
    --------
    >>> import numpy as np
    >>> from kbackends.ops import kmeans
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]])
    >>> C = kmeans(X, 2, n_iter=5, random_state=0)
    >>> sorted(np.round(C[:, 0], 2).tolist())
    [0.05, 5.05]
    """
    import numpy as np

    from ._xp_utils import to_numpy

    bk = resolve(backend, X)
    xp = bk.xp
    X = bk.asarray(X)
    _float_matrix(bk, X, "X")
    n = X.shape[0]
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, int) or not 1 <= n_clusters <= max(n, 1) or n == 0:
        msg = f"`n_clusters` must be an integer in [1, n_samples={n}], got {n_clusters!r}"
        raise ValueError(msg)
    if isinstance(n_iter, bool) or not isinstance(n_iter, int) or n_iter < 0:
        msg = f"`n_iter` must be an integer >= 0, got {n_iter!r}"
        raise ValueError(msg)
    _check_finite(bk, check_finite, X=X)
    rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)

    # k-means++ (Arthur & Vassilvitskii 2007): next center drawn with probability ~ D(x)^2.
    sq = xp.sum(X * X, axis=1)
    chosen = [int(rng.integers(n))]
    center = X[chosen[0], :]
    closest = xp.maximum(sq + xp.sum(center * center) - 2.0 * (X @ center), 0.0)
    for _ in range(1, n_clusters):
        p = np.asarray(to_numpy(closest), dtype=np.float64)
        total = p.sum()
        if total > 0:
            nxt = int(np.searchsorted(np.cumsum(p), rng.random() * total, side="right"))
            nxt = min(nxt, n - 1)
        else:  # every row already a center (duplicates): any unchosen row
            nxt = int(rng.choice(np.setdiff1d(np.arange(n), chosen)))
        chosen.append(nxt)
        center = X[nxt, :]
        closest = xp.minimum(closest, xp.maximum(sq + xp.sum(center * center) - 2.0 * (X @ center), 0.0))
    centers = xp.take(X, bk.asarray(np.asarray(chosen, dtype=np.int64)), axis=0)

    ones = xp.ones((n, 1), dtype=X.dtype)
    accumulate = get_kernel("anchor_accumulate", bk)
    for _ in range(n_iter):
        idx, _ = _anchor_knn(bk, X, centers, 1)
        sums = accumulate(idx, ones, X, xp=xp, n_anchors=n_clusters)
        counts = accumulate(idx, ones, ones, xp=xp, n_anchors=n_clusters)
        centers = xp.where(counts > 0, sums / xp.maximum(counts, 1.0), centers)
    return centers


def snap_to_samples(centers, X, *, backend="auto", check_finite=True):
    """Row index of the sample of ``X`` nearest to each center: the anchors of Eq. (13).

    Parameters
    ----------
    centers : array of shape (m, n_features)
    X : array of shape (n_samples, n_features), same dtype, n_samples >= 1
    backend, check_finite
        As in :func:`rff_features`.

    Returns
    -------
    int64 array of shape (m,)
        ``argmin_i ||X_i - centers_j||^2`` (ties: lowest row). ``X[result]`` are the anchors.
    """
    bk = resolve(backend, centers, X)
    centers, X = bk.asarray(centers), bk.asarray(X)
    _float_matrix(bk, centers, "centers")
    _float_matrix(bk, X, "X")
    if X.shape[0] == 0:
        msg = "`X` must have at least one row to snap to"
        raise ValueError(msg)
    if centers.shape[1] != X.shape[1] or centers.dtype != X.dtype:
        msg = (f"`centers` {tuple(centers.shape)} {centers.dtype} and `X` {tuple(X.shape)} {X.dtype} "
               "must have the same number of columns and dtype")
        raise ValueError(msg)
    _check_finite(bk, check_finite, centers=centers, X=X)
    idx, _ = _anchor_knn(bk, centers, X, 1)
    return idx[:, 0]


def anchor_graph(X, anchors, k, *, eps=1e-4, backend="auto", check_finite=True):
    """Sparse anchor-sample graph (S3GD Algorithm 2, steps 6-13).

    For each row x_i: its ``k`` nearest anchors z_j, the per-sample width of
    Eq. (14), ``sigma_i = max(eps, sqrt(min_j ||x_i - z_j||))``, and weights
    ``gamma_ij = exp(-||x_i - z_j||^2 / sigma_i^2)`` normalised to sum to 1.

    Parameters
    ----------
    X : array of shape (n, d)
    anchors : array of shape (m, d), same dtype
    k : int, 1 <= k <= m
    eps : float > 0, default 1e-4
        The paper's floor on sigma.
    backend, check_finite
        As in :func:`rff_features`.

    Returns
    -------
    indices : int64 array of shape (n, k)
        Nearest anchors, nearest first (ties: lower anchor index).
    weights : array of shape (n, k)
        Rows sum to 1.

    Notes
    -----
    Eq. (14) is read as written: sigma is the square root of the distance (not of the
    squared distance). The exponent is shifted by the nearest squared distance before
    ``exp``, which leaves the normalised weights unchanged and keeps the nearest
    weight at 1 before normalising, so no row can underflow to 0 / 0.

    Examples
    --------
    >>> import numpy as np
    >>> from kbackends.ops import anchor_graph
    >>> idx, w = anchor_graph(np.array([[0.0], [2.9]]), np.array([[0.0], [1.0], [3.0]]), 2)
    >>> idx.tolist(), np.round(w.sum(axis=1), 12).tolist()
    ([[0, 1], [2, 1]], [1.0, 1.0])
    """
    bk = resolve(backend, X, anchors)
    xp = bk.xp
    X, anchors = bk.asarray(X), bk.asarray(anchors)
    _float_matrix(bk, X, "X")
    _float_matrix(bk, anchors, "anchors")
    if anchors.shape[1] != X.shape[1] or anchors.dtype != X.dtype:
        msg = (f"`anchors` {tuple(anchors.shape)} {anchors.dtype} and `X` {tuple(X.shape)} {X.dtype} "
               "must have the same number of columns and dtype")
        raise ValueError(msg)
    m = anchors.shape[0]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= m:
        msg = f"`k` must be an integer in [1, n_anchors={m}], got {k!r}"
        raise ValueError(msg)
    if not float(eps) > 0:
        msg = f"`eps` must be positive, got {eps!r}"
        raise ValueError(msg)
    _check_finite(bk, check_finite, X=X, anchors=anchors)
    indices, sqdist = _anchor_knn(bk, X, anchors, k)
    nearest = sqdist[:, :1]
    sigma2 = xp.maximum(xp.sqrt(nearest), float(eps) ** 2)  # sigma^2 = max(eps, ||x - z_1||^(1/2))^2
    gamma = xp.exp(-(sqdist - nearest) / sigma2)
    return indices, gamma / xp.sum(gamma, axis=1, keepdims=True)


def _check_graph(bk, indices, weights, n_anchors=None):
    xp = bk.xp
    if indices.ndim != 2 or weights.shape != indices.shape:
        msg = f"`indices` and `weights` must be 2-D of one shape (n, k), got {tuple(indices.shape)} and {tuple(weights.shape)}"
        raise ValueError(msg)
    if not xp.isdtype(indices.dtype, "integral"):
        msg = f"`indices` must be an integer array, got dtype {indices.dtype}"
        raise TypeError(msg)
    if weights.dtype not in (xp.float32, xp.float64):
        msg = f"`weights` must have a float32 or float64 dtype, got {weights.dtype}"
        raise TypeError(msg)
    if n_anchors is not None and indices.shape[0] * indices.shape[1]:
        if not (bool(xp.all(indices >= 0)) and bool(xp.all(indices < n_anchors))):
            msg = f"`indices` must index anchors (0 <= indices < {n_anchors})"
            raise ValueError(msg)


def anchor_propagate(indices, weights, anchor_values, *, backend="auto", check_finite=True):
    """Per-sample values propagated from the anchors: ``sum_k w_ik v[idx_ik]`` (Eq. 19's factor).

    Parameters
    ----------
    indices : int array of shape (n, k)
    weights : array of shape (n, k)
        From :func:`anchor_graph`.
    anchor_values : array of shape (m,) or (m, q)
        One value (or q values) per anchor, e.g. the loss derivatives of Eq. (21).
    backend, check_finite
        As in :func:`rff_features`.

    Returns
    -------
    array of shape (n,) or (n, q)

    Examples
    --------
    >>> import numpy as np
    >>> from kbackends.ops import anchor_propagate
    >>> anchor_propagate(np.array([[0, 2]]), np.array([[0.25, 0.75]]), np.array([4.0, 0.0, 8.0])).tolist()
    [7.0]
    """
    bk = resolve(backend, indices, weights, anchor_values)
    indices, weights, values = (bk.asarray(a) for a in (indices, weights, anchor_values))
    if values.ndim not in (1, 2):
        msg = f"`anchor_values` must have shape (m,) or (m, q), got {tuple(values.shape)}"
        raise ValueError(msg)
    if values.dtype not in (bk.xp.float32, bk.xp.float64) or values.dtype != weights.dtype:
        msg = f"`anchor_values` must be float32 or float64 like `weights` ({weights.dtype}), got {values.dtype}"
        raise TypeError(msg)
    _check_graph(bk, indices, weights, values.shape[0])
    _check_finite(bk, check_finite, weights=weights, anchor_values=values)
    return get_kernel("anchor_propagate", bk)(indices, weights, values, xp=bk.xp)


def anchor_accumulate(indices, weights, rows, n_anchors, *, backend="auto", check_finite=True):
    """Transpose of :func:`anchor_propagate`: ``out[j] = sum_{i,k: idx_ik = j} w_ik rows[i]``.

    With ``rows = X`` this is ``(X M)^T`` of Eq. (22), M the n x m graph matrix:
    computed once, it turns the approximate full gradient into an (m, d) product.

    Parameters
    ----------
    indices : int array of shape (n, k)
    weights : array of shape (n, k)
    rows : array of shape (n,) or (n, q), same dtype as ``weights``
    n_anchors : int >= 1
    backend, check_finite
        As in :func:`rff_features`.

    Returns
    -------
    array of shape (n_anchors,) or (n_anchors, q)

    Examples
    --------
    >>> import numpy as np
    >>> from kbackends.ops import anchor_accumulate
    >>> anchor_accumulate(np.array([[0, 1], [1, 0]]), np.array([[0.5, 0.5], [1.0, 0.0]]),
    ...                   np.array([2.0, 4.0]), 2).tolist()
    [1.0, 5.0]
    """
    bk = resolve(backend, indices, weights, rows)
    indices, weights, rows = (bk.asarray(a) for a in (indices, weights, rows))
    if isinstance(n_anchors, bool) or not isinstance(n_anchors, int) or n_anchors < 1:
        msg = f"`n_anchors` must be an integer >= 1, got {n_anchors!r}"
        raise ValueError(msg)
    if rows.ndim not in (1, 2) or rows.shape[0] != indices.shape[0]:
        msg = f"`rows` must have shape ({indices.shape[0]},) or ({indices.shape[0]}, q), got {tuple(rows.shape)}"
        raise ValueError(msg)
    if rows.dtype != weights.dtype:
        msg = f"`rows` ({rows.dtype}) and `weights` ({weights.dtype}) must have one float dtype"
        raise TypeError(msg)
    _check_graph(bk, indices, weights, n_anchors)
    _check_finite(bk, check_finite, weights=weights, rows=rows)
    return get_kernel("anchor_accumulate", bk)(indices, weights, rows, xp=bk.xp, n_anchors=n_anchors)
