"""Array-API reference of TSGSU's per-point coefficients: the risk object's own code."""


def su_derivatives(f_s, f_u, *, xp, risk, state, smoothing, margin):
    """``risk.derivative_terms(f_s, f_u, ...)``: ``(g_s, g_u)``, arrays like ``f_s`` and
    ``f_u``; ``state`` (a dict, or None) keeps the parts' running averages between calls."""
    return risk.derivative_terms(f_s, f_u, xp=xp, state=state, smoothing=smoothing, margin=margin)
