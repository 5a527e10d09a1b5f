"""Reference anchor kernels in any array-API namespace (the test oracles).

Squared distances use ``||x||^2 + ||z||^2 - 2 x.z`` (clipped at 0) in row
chunks; the k nearest come from a stable argsort, so ties go to the lower
anchor index (every implementation keeps that rule).
"""

from ..._xp_utils import to_numpy

_CHUNK_ELEMENTS = 1 << 22


def squared_distances(Xc, A, sq_a, xp):
    """``||Xc_i - A_j||^2`` of shape (len(Xc), len(A)) by the expansion, clipped at 0."""
    sq = xp.sum(Xc * Xc, axis=1)
    return xp.maximum(sq[:, None] + sq_a[None, :] - 2.0 * (Xc @ A.T), 0.0)


def anchor_knn(X, anchors, *, xp, k):
    n, m = X.shape[0], anchors.shape[0]
    sq_a = xp.sum(anchors * anchors, axis=1)
    step = max(1, _CHUNK_ELEMENTS // max(1, m))
    idx_parts, dist_parts = [], []
    for start in range(0, n, step):
        D = squared_distances(X[start : min(n, start + step), :], anchors, sq_a, xp)
        order = xp.argsort(D, axis=1, stable=True)[:, :k]
        idx_parts.append(order)
        dist_parts.append(xp.take_along_axis(D, order, axis=1))
    if not idx_parts:
        return xp.zeros((0, k), dtype=xp.int64), xp.zeros((0, k), dtype=X.dtype)
    if len(idx_parts) == 1:
        return xp.astype(idx_parts[0], xp.int64), dist_parts[0]
    return xp.astype(xp.concat(idx_parts), xp.int64), xp.concat(dist_parts)


def anchor_propagate(indices, weights, values, *, xp):
    n, k = indices.shape
    flat = xp.reshape(indices, (-1,))
    if values.ndim == 1:
        picked = xp.reshape(xp.take(values, flat), (n, k))
        return xp.sum(weights * picked, axis=1)
    q = values.shape[1]
    picked = xp.reshape(xp.take(values, flat, axis=0), (n, k, q))
    return xp.sum(weights[:, :, None] * picked, axis=1)


def anchor_accumulate(indices, weights, rows, *, xp, n_anchors):
    # No scatter-add in the array API: a weighted one-hot matrix per row chunk.
    n, k = indices.shape
    vector = rows.ndim == 1
    R = rows[:, None] if vector else rows
    q = R.shape[1]
    out = xp.zeros((n_anchors, q), dtype=R.dtype)
    labels = xp.arange(n_anchors, dtype=indices.dtype)
    step = max(1, _CHUNK_ELEMENTS // max(1, n_anchors * k))
    for start in range(0, n, step):
        stop = min(n, start + step)
        idx, w = indices[start:stop, :], weights[start:stop, :]
        onehot = xp.zeros((stop - start, n_anchors), dtype=R.dtype)
        for j in range(k):
            onehot = onehot + xp.where(idx[:, j : j + 1] == labels[None, :], w[:, j : j + 1], 0.0)
        out = out + onehot.T @ R[start:stop, :]
    return out[:, 0] if vector else out


def seeds_loop(X, sq, uniforms, first, xp, dense_row):
    """k-means++ seeding (Arthur & Vassilvitskii 2007) with its draws given: row
    ``first``, then for each further centre the row where ``uniforms[s]`` times the
    total falls in the running sum of D(x)^2 (the squared distance to the nearest
    centre so far; the total is that running sum's last entry). Where every D(x)^2 is 0
    (rows duplicating the centres) the ``floor(u * count)``-th row not yet chosen.
    ``dense_row(i)``: row i of X as a dense 1-D array. Returns the chosen rows, host int64."""
    import numpy as np


    n = sq.shape[0]
    chosen = [int(first)]
    center = dense_row(chosen[0])
    closest = xp.maximum(sq + xp.sum(center * center) - 2.0 * (X @ center), 0.0)
    for u in np.asarray(uniforms, dtype=np.float64).tolist():
        running = np.cumsum(np.asarray(to_numpy(closest), dtype=np.float64))
        if running[-1] > 0:
            nxt = min(int(np.searchsorted(running, u * running[-1], side="right")), n - 1)
        else:
            free = np.setdiff1d(np.arange(n), chosen)
            nxt = int(free[int(u * free.size)])
        chosen.append(nxt)
        center = dense_row(nxt)
        closest = xp.minimum(closest, xp.maximum(sq + xp.sum(center * center) - 2.0 * (X @ center), 0.0))
    return np.asarray(chosen, dtype=np.int64)


def kmeans_seeds(X, sq, uniforms, *, xp, first):
    """See :func:`seeds_loop`; ``sq``: X's squared row norms. A sparse X's rows are
    densified one at a time (scipy / cupyx row indexing)."""
    if hasattr(X, "tocsr"):
        return seeds_loop(X, sq, uniforms, first, xp, lambda i: xp.reshape(xp.asarray(X[i : i + 1].toarray()), (-1,)))
    return seeds_loop(X, sq, uniforms, first, xp, lambda i: X[i, :])
