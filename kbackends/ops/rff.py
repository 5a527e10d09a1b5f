"""Random Fourier feature ops (DSG, TSGS3VM, TSGSU): features, the prediction
product and the gradient-step product, without the (n, m) feature matrix where
the kernel can avoid it. Kernels: :mod:`kbackends.kernels.rff`."""

from __future__ import annotations

from .._backend import resolve
from .._registry import get_kernel
from ._checks import check_all_finite, check_float_array
from ._sparse import as_csr, check_sparse_backend, is_sparse, resolve_hint, to_backend

__all__ = ["FORMS", "rff_features", "rff_predict", "rff_predict_add", "rff_weighted_sum"]

FORMS = ("cos", "cossin")


def rff_features(X, omega, phase, *, form="cos", backend="auto", check_finite=True, check_input=True):
    """Random Fourier features of the rows of ``X``.

    Parameters
    ----------
    X : array or scipy.sparse matrix / array of shape (n_samples, n_dims)
        float32 or float64. Sparse input (scipy.sparse or cupyx.scipy.sparse,
        any format, converted once to CSR on the backend's device) runs on the
        cpu and cuda backends: each row's products come from its non-zeros only,
        and no dense copy of ``X`` is made.
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
    check_input : bool, default True
        False: a loop op that trusts its inputs (as :mod:`kbackends.ops.steps`):
        ``backend`` a resolved :class:`~kbackends.Backend`, the arrays already its
        arrays (``X`` dense, canonical CSR or :class:`~kbackends.ops.CSRRows`), of one
        float dtype and matching shapes; nothing is checked, moved or converted, and
        ``check_finite`` is ignored. For a loop whose data were validated once.

    Returns
    -------
    array of shape (n_samples, n_features) or (n_samples, 2 * n_features)

    Notes
    -----
    The features are unscaled: with ``omega``, ``phase`` drawn for kernel k,
    ``2/m * features(x) @ features(x')`` (cos) or ``1/m * ...`` (cossin)
    estimates k(x, x').
    """
    if not check_input:
        return get_kernel("rff_features", backend)(X, omega, phase, xp=backend.xp, form=form)
    bk, (X, omega, phase) = _prepare(backend, form, check_finite, X, omega, phase)
    return get_kernel("rff_features", bk)(X, omega, phase, xp=bk.xp, form=form)


def rff_predict(X, omega, phase, coef, *, form="cos", backend="auto", check_finite=True, check_input=True):
    """``rff_features(X, omega, phase, form=form) @ coef`` without the (n, m) matrix.

    Parameters
    ----------
    X, omega, phase, form, backend, check_finite, check_input
        As in :func:`rff_features`.
    coef : array of shape (n_out,) or (n_out, n_targets)
        ``n_out`` is ``n_features`` for ``"cos"``, ``2 * n_features`` for ``"cossin"``.

    Returns
    -------
    array of shape (n_samples,) or (n_samples, n_targets)
    """
    if not check_input:
        return get_kernel("rff_predict", backend)(X, omega, phase, coef, xp=backend.xp, form=form)
    bk, (X, omega, phase, coef) = _prepare(backend, form, check_finite, X, omega, phase, coef, "coef")
    n_out = _n_out(omega, form)
    if coef.ndim not in (1, 2) or coef.shape[0] != n_out:
        msg = (
            f"`coef` must have shape ({n_out},) or ({n_out}, n_targets) for form={form!r} "
            f"and {omega.shape[0]} features, got {tuple(coef.shape)}"
        )
        raise ValueError(msg)
    return get_kernel("rff_predict", bk)(X, omega, phase, coef, xp=bk.xp, form=form)


def rff_weighted_sum(X, omega, phase, g, *, form="cos", backend="auto", check_finite=True, check_input=True):
    """``g @ rff_features(X, omega, phase, form=form)``: the gradient-step product.

    Parameters
    ----------
    X, omega, phase, form, backend, check_finite, check_input
        As in :func:`rff_features`.
    g : array of shape (n_samples,) or (n_targets, n_samples)
        Per-sample weights (e.g. loss derivatives).

    Returns
    -------
    array of shape (n_out,) or (n_targets, n_out)
        ``n_out`` is ``n_features`` for ``"cos"``, ``2 * n_features`` for ``"cossin"``.
    """
    if not check_input:
        return get_kernel("rff_weighted_sum", backend)(X, omega, phase, g, xp=backend.xp, form=form)
    bk, (X, omega, phase, g) = _prepare(backend, form, check_finite, X, omega, phase, g, "g")
    if g.ndim not in (1, 2) or g.shape[-1] != X.shape[0]:
        msg = (
            f"`g` must have shape ({X.shape[0]},) or (n_targets, {X.shape[0]}) to match "
            f"`X` with {X.shape[0]} rows, got {tuple(g.shape)}"
        )
        raise ValueError(msg)
    return get_kernel("rff_weighted_sum", bk)(X, omega, phase, g, xp=bk.xp, form=form)


def rff_predict_add(X, omega, phase, coef, f, *, shrink, backend, form="cos"):
    """``f * shrink + rff_predict(X, omega, phase, coef)``: a cached prediction updated
    after a block step (its older blocks shrunk, the block's change added), one kernel
    call (on cuda, the launches of one prediction).

    A loop op that trusts its inputs, as :func:`rff_features` with ``check_input=False``.

    Parameters
    ----------
    X, omega, phase, form
        As in :func:`rff_features`.
    coef : array of shape (n_out, n_targets)
        The block's coefficient change.
    f : array of shape (n_samples, n_targets)
        The cached prediction; not modified.
    shrink : float
    backend : Backend

    Returns
    -------
    array of shape (n_samples, n_targets)
    """
    return get_kernel("rff_predict_add", backend)(X, omega, phase, coef, f, xp=backend.xp, form=form, shrink=shrink)


def _n_out(omega, form):
    return omega.shape[0] * (1 if form == "cos" else 2)


def _prepare(backend, form, check_finite, X, omega, phase, extra=None, extra_name=None):
    """Resolve the backend, move the arrays there and validate them."""
    if form not in FORMS:
        msg = f"`form` must be one of {FORMS}, got {form!r}"
        raise ValueError(msg)
    sparse_X = X if is_sparse(X) else None
    if sparse_X is not None:
        X = omega  # stands in for X while the backend is resolved and the others checked
    arrays = (X, omega, phase) if extra is None else (X, omega, phase, extra)
    bk = resolve(backend, *arrays, resolve_hint(sparse_X))
    arrays = tuple(bk.asarray(a) for a in arrays)
    if sparse_X is not None:
        check_sparse_backend(bk, "X")
        sparse_X = as_csr(to_backend(sparse_X, bk))
        arrays = (sparse_X,) + arrays[1:]
    X, omega, phase = arrays[:3]
    xp = bk.xp
    names = ("X", "omega", "phase", extra_name)
    for name, a, ndim in zip(names, arrays, (2, 2, 1, None)):
        if a is sparse_X:
            continue  # checked by as_csr
        check_float_array(xp, a, name, a.ndim if ndim is None else ndim)
        if a.dtype != X.dtype:
            msg = f"`{name}` has dtype {a.dtype} but `X` has {X.dtype}: cast them to one float dtype"
            raise TypeError(msg)
    if omega.shape[1] != X.shape[1]:
        msg = f"`omega` has {omega.shape[1]} columns but `X` has {X.shape[1]}: they must match"
        raise ValueError(msg)
    if phase.shape[0] != omega.shape[0]:
        msg = f"`phase` has {phase.shape[0]} entries but `omega` has {omega.shape[0]} rows"
        raise ValueError(msg)
    finite = dict(zip(names, arrays))
    if sparse_X is not None:
        finite["X"] = xp.asarray(sparse_X.data)
    check_all_finite(xp, check_finite, finite)
    return bk, arrays
