"""Reference sums of squares in any array-API namespace; a sparse X (scipy.sparse, or
cupyx.scipy.sparse on a GPU) through its own ``multiply`` and ``sum`` (O(nnz))."""


def squared_sums(X, *, xp, axis, dtype):
    if hasattr(X, "tocsr"):
        S = X.astype(dtype)
        return xp.reshape(xp.asarray(S.multiply(S).sum(axis=axis), dtype=getattr(xp, dtype)), (-1,))
    Xd = xp.astype(X, getattr(xp, dtype))
    return xp.sum(Xd * Xd, axis=axis)
