"""Non-finite numbers are errors where they arise, never a silent default.

A fit whose coefficients end NaN or inf raises at the end of ``fit`` (saying
what to change), and ``predict`` raises on a non-finite decision value instead
of mapping it to ``classes[0]`` (``NaN > 0`` is False).
"""

from __future__ import annotations

import array_api_compat


def _finite(a) -> bool:
    xp = array_api_compat.array_namespace(a)
    return bool(xp.all(xp.isfinite(a)))


def _max_abs(X, xp) -> float:
    if hasattr(X, "tocsr"):  # scipy.sparse: the stored values
        X = xp.asarray(X.data)
        return float(xp.max(xp.where(xp.isfinite(X), xp.abs(X), xp.zeros_like(X)))) if X.shape[0] else 0.0
    finite = xp.where(xp.isfinite(X), xp.abs(X), xp.zeros_like(X))
    return float(xp.max(finite)) if X.shape[0] * X.shape[1] else 0.0


def check_finite_fit(arrays: dict, X, xp, *, algorithm: str, hint: str) -> None:
    """Raise ValueError if any array of ``arrays`` ({name: array}) holds NaN or inf.

    Parameters
    ----------
    arrays : dict of str to array
        The fitted model's arrays (coefficients, intercept).
    X : array of shape (n_samples, n_features)
        The training rows, for the scale the message reports.
    xp : namespace of ``X`` (the arrays may be on the host)
    algorithm : str
        Named in the message.
    hint : str
        Which hyper-parameter to change, e.g. "lower `step`".
    """
    bad = [name for name, a in arrays.items() if not _finite(a)]
    if bad:
        msg = (f"{algorithm} ended with non-finite {' and '.join(bad)} (NaN or inf): {hint}, or standardise "
               f"`X` (largest |value| {_max_abs(X, xp):.3g}; e.g. sklearn.preprocessing.StandardScaler)")
        raise ValueError(msg)


def check_finite_decision(f, xp) -> None:
    """Raise ValueError if decision values ``f`` (n,) or (n, k) hold NaN or inf."""
    ok = xp.isfinite(f) if f.ndim == 1 else xp.all(xp.isfinite(f), axis=1)
    if not bool(xp.all(ok)):
        n_bad = int(xp.sum(xp.astype(~ok, xp.int64)))
        msg = (f"the decision values of {n_bad} row(s) of `X` are NaN or inf: their values are out of the "
               "scale the model can evaluate; scale `X` as the training data were")
        raise ValueError(msg)
