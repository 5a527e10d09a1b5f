"""Sparse anchor propagation and its preprocessing (S3GD, Algorithm 2): k-means
centers, snapping them to samples (the anchors of Eq. 13), the anchor-sample graph
of Eq. (14), and the propagation / accumulation products of Eqs. (19)-(22).
Kernels: :mod:`kbackends.kernels.anchors`.

Sparse rows: ``X`` of :func:`kmeans`, :func:`snap_to_samples`, :func:`anchor_graph`
and ``rows`` of :func:`anchor_accumulate` may be scipy.sparse (any format, matrix or
array) on the cpu backend and the CUDA simulator, or cupyx.scipy.sparse on cuda (a
scipy.sparse one is moved there once): converted once to canonical CSR, never
densified (the centres, anchors and accumulated sums are dense (m, d)); memory
O(nnz + m d)."""

from __future__ import annotations

from .._backend import resolve
from .._registry import get_kernel
from ._checks import (
    check_all_finite, check_float, check_float_array, check_index, check_int, check_positive, check_same_columns, is_float,
)
from ._sparse import check_rows, finite_view, is_sparse, resolve_rows
from .rows import squared_sums

__all__ = ["kmeans", "snap_to_samples", "anchor_graph", "anchor_propagate", "anchor_accumulate"]

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
    X : array or scipy.sparse matrix of shape (n_samples, n_features)
        float32 or float64, ``n_samples >= n_clusters``. Sparse rows (cpu,
        cudasim, cuda): the centres are dense, no dense copy of ``X`` is made.
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

    bk, X, _ = resolve_rows(backend, X)
    xp = bk.xp
    check_rows(xp, X, "X")
    n = X.shape[0]
    check_int("n_clusters", n_clusters, 1, n, "n_samples")
    check_int("n_iter", n_iter, 0)
    check_all_finite(xp, check_finite, {"X": finite_view(xp, X)})
    rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
    sparse = is_sparse(X)

    # k-means++ (Arthur & Vassilvitskii 2007): next center drawn with probability ~ D(x)^2;
    # the draws are made here, on the host, so every backend seeds alike.
    sq = squared_sums(X, axis=1, backend=bk, check_finite=False)
    first = int(rng.integers(n))
    chosen = get_kernel("kmeans_seeds", bk)(X, sq, rng.random(n_clusters - 1), xp=xp, first=first)
    chosen = bk.asarray(np.asarray(chosen, dtype=np.int64))
    centers = get_kernel("csr_rows_dense", bk)(X, chosen, xp=xp) if sparse else xp.take(X, chosen, axis=0)

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
    X : array or scipy.sparse matrix of shape (n_samples, n_features), same dtype, n_samples >= 1
    backend, check_finite
        As in :func:`rff_features`.

    Returns
    -------
    int64 array of shape (m,)
        ``argmin_i ||X_i - centers_j||^2`` (ties: lowest row). ``X[result]`` are the anchors.
    """
    bk, X, (centers,) = resolve_rows(backend, X, centers)
    check_float_array(bk.xp, centers, "centers", 2)
    check_rows(bk.xp, X, "X")
    if X.shape[0] == 0:
        msg = "`X` must have at least one row to snap to"
        raise ValueError(msg)
    check_same_columns(bk.xp, centers, "centers", X)
    check_all_finite(bk.xp, check_finite, {"centers": centers, "X": finite_view(bk.xp, X)})
    idx, _ = _anchor_knn(bk, centers, X, 1)
    return idx[:, 0]


def anchor_graph(X, anchors, k, *, eps=1e-4, backend="auto", check_finite=True):
    """Sparse anchor-sample graph (S3GD Algorithm 2, steps 6-13).

    For each row x_i: its ``k`` nearest anchors z_j, the per-sample width of
    Eq. (14), ``sigma_i = max(eps, sqrt(min_j ||x_i - z_j||))``, and weights
    ``gamma_ij = exp(-||x_i - z_j||^2 / sigma_i^2)`` normalised to sum to 1.

    Parameters
    ----------
    X : array or scipy.sparse matrix of shape (n, d)
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
    bk, X, (anchors,) = resolve_rows(backend, X, anchors)
    xp = bk.xp
    check_rows(xp, X, "X")
    check_float_array(xp, anchors, "anchors", 2)
    check_same_columns(xp, anchors, "anchors", X)
    check_int("k", k, 1, anchors.shape[0], "n_anchors")
    check_positive("eps", eps)
    check_all_finite(xp, check_finite, {"X": finite_view(xp, X), "anchors": anchors})
    indices, sqdist = _anchor_knn(bk, X, anchors, k)
    nearest = sqdist[:, :1]
    sigma2 = xp.maximum(xp.sqrt(nearest), float(eps) ** 2)  # sigma^2 = max(eps, ||x - z_1||^(1/2))^2
    gamma = xp.exp(-(sqdist - nearest) / sigma2)
    return indices, gamma / xp.sum(gamma, axis=1, keepdims=True)


def _check_graph(bk, indices, weights, n_anchors):
    xp = bk.xp
    if indices.ndim != 2 or weights.shape != indices.shape:
        msg = f"`indices` and `weights` must be 2-D of one shape (n, k), got {tuple(indices.shape)} and {tuple(weights.shape)}"
        raise ValueError(msg)
    if not xp.isdtype(indices.dtype, "integral"):
        msg = f"`indices` must be an integer array, got dtype {indices.dtype}"
        raise TypeError(msg)
    check_float(xp, weights, "weights")
    check_index(xp, indices, n_anchors, f"`indices` must index anchors (0 <= indices < {n_anchors})")


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
    if not is_float(bk.xp, values) or values.dtype != weights.dtype:
        msg = f"`anchor_values` must be float32 or float64 like `weights` ({weights.dtype}), got {values.dtype}"
        raise TypeError(msg)
    _check_graph(bk, indices, weights, values.shape[0])
    check_all_finite(bk.xp, check_finite, {"weights": weights, "anchor_values": values})
    return get_kernel("anchor_propagate", bk)(indices, weights, values, xp=bk.xp)


def anchor_accumulate(indices, weights, rows, n_anchors, *, backend="auto", check_finite=True):
    """Transpose of :func:`anchor_propagate`: ``out[j] = sum_{i,k: idx_ik = j} w_ik rows[i]``.

    With ``rows = X`` this is ``(X M)^T`` of Eq. (22), M the n x m graph matrix:
    computed once, it turns the approximate full gradient into an (m, d) product.

    Parameters
    ----------
    indices : int array of shape (n, k)
    weights : array of shape (n, k)
    rows : array of shape (n,) or (n, q), same dtype as ``weights``; or a sparse
        (n, q) matrix (cpu, cudasim, cuda; the result is dense, and on cuda the
        same bits every run: no float atomics)
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
    bk, rows, (indices, weights) = resolve_rows(backend, rows, indices, weights, name="rows")
    check_int("n_anchors", n_anchors, 1)
    if rows.ndim not in (1, 2) or rows.shape[0] != indices.shape[0]:
        msg = f"`rows` must have shape ({indices.shape[0]},) or ({indices.shape[0]}, q), got {tuple(rows.shape)}"
        raise ValueError(msg)
    if rows.dtype != weights.dtype:
        msg = f"`rows` ({rows.dtype}) and `weights` ({weights.dtype}) must have one float dtype"
        raise TypeError(msg)
    _check_graph(bk, indices, weights, n_anchors)
    check_all_finite(bk.xp, check_finite, {"weights": weights, "rows": finite_view(bk.xp, rows)})
    return get_kernel("anchor_accumulate", bk)(indices, weights, rows, xp=bk.xp, n_anchors=n_anchors)
