"""Reference kernel-response update in any array-API namespace (the test oracle):
``c + y * (K(X, X[idx]) @ w)`` in row chunks, K never held for all rows."""

KERNEL_CODES = {"rbf": 0, "linear": 1}
_CHUNK_ELEMENTS = 1 << 22


def kernel_response_update(X, idx, w, y, c, *, xp, kernel, gamma, sq_norms=None):
    if hasattr(X, "tocsr"):  # scipy.sparse: the changed rows dense, the products by scipy
        import numpy as np

        S = X[np.asarray(idx)].toarray()
        dots = np.asarray(X @ S.T)
        if KERNEL_CODES[kernel] == 0:
            sq = np.asarray(X.multiply(X).sum(axis=1)).ravel() if sq_norms is None else sq_norms
            dots = np.exp(-gamma * np.maximum(sq[:, None] + np.sum(S * S, axis=1)[None, :] - 2.0 * dots, 0.0))
        return c + y * (dots @ w)
    S = xp.take(X, idx, axis=0)
    sq_s = xp.sum(S * S, axis=1)
    n = X.shape[0]
    step = max(1, _CHUNK_ELEMENTS // max(1, S.shape[0]))
    parts = []
    for start in range(0, n, step):
        Xc = X[start : min(n, start + step), :]
        dots = Xc @ S.T
        if KERNEL_CODES[kernel] == 0:
            sq = xp.sum(Xc * Xc, axis=1)
            K = xp.exp(-gamma * xp.maximum(sq[:, None] + sq_s[None, :] - 2.0 * dots, 0.0))
        else:
            K = dots
        parts.append(K @ w)
    if not parts:
        return c
    change = parts[0] if len(parts) == 1 else xp.concat(parts)
    return c + y * change


def csr_rows_dense(X, rows, *, xp):
    """Rows ``rows`` of the scipy.sparse CSR ``X`` as a dense (len(rows), d) array (the
    reference of the cuda kernel of the same name)."""
    import numpy as np

    return X[np.asarray(rows)].toarray()
