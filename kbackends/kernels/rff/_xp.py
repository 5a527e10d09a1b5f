"""Reference random-Fourier-feature kernels in any array-API namespace (the test oracle).

Rows are processed in chunks so the (n, m) feature matrix is never held whole
for ``rff_predict`` and ``rff_weighted_sum``.
"""

_CHUNK_ELEMENTS = 1 << 22  # features held at once: 16 MiB in float32


def _chunk_rows(n_out):
    return max(1, _CHUNK_ELEMENTS // max(1, n_out))


def rff_features(X, omega, phase, *, xp, form):
    Z = X @ omega.T
    if form == "cos":
        return xp.cos(Z + phase)
    return xp.concat((xp.cos(Z), xp.sin(Z)), axis=1)


def rff_predict(X, omega, phase, coef, *, xp, form):
    n = X.shape[0]
    n_out = omega.shape[0] * (1 if form == "cos" else 2)
    step = _chunk_rows(n_out)
    parts = [
        rff_features(X[start : min(n, start + step), :], omega, phase, xp=xp, form=form) @ coef
        for start in range(0, n, step)
    ]
    if not parts:
        return xp.zeros((0,) + tuple(coef.shape[1:]), dtype=X.dtype, device=_device(xp, X))
    return parts[0] if len(parts) == 1 else xp.concat(parts, axis=0)


def rff_predict_add(X, omega, phase, coef, f, *, xp, form, shrink):
    """``f * shrink + rff_predict(X, omega, phase, coef)``: a cached prediction updated."""
    return f * shrink + rff_predict(X, omega, phase, coef, xp=xp, form=form)


def rff_weighted_sum(X, omega, phase, g, *, xp, form):
    n = X.shape[0]
    n_out = omega.shape[0] * (1 if form == "cos" else 2)
    step = _chunk_rows(n_out)
    total = xp.zeros(tuple(g.shape[:-1]) + (n_out,), dtype=X.dtype, device=_device(xp, X))
    for start in range(0, n, step):
        stop = min(n, start + step)
        features = rff_features(X[start:stop, :], omega, phase, xp=xp, form=form)
        total = total + g[..., start:stop] @ features
    return total


def _device(xp, x):
    return getattr(x, "device", None)
