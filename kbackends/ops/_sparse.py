"""Sparse inputs at the ops' public boundary: scipy.sparse (NumPy) and
cupyx.scipy.sparse (CuPy), converted once to canonical CSR (sorted indices,
duplicates summed) on the backend's device, never densified.

The two libraries share scipy.sparse's API (``tocsr``, row indexing, ``@`` a
dense array, ``multiply``, ``vstack``), so one code path serves both; under the
CUDA simulator a scipy.sparse matrix stands in for a cupyx one, as NumPy arrays
stand in for CuPy's.
"""

from __future__ import annotations
from .._backend import resolve
from ._checks import check_float_array

_CUPYX = "cupyx.scipy.sparse"

# The backends whose kernels take CSR rows, for every op (cupyx.scipy.sparse on cuda;
# scipy.sparse standing in for it under the simulator).
SPARSE_BACKENDS = ("cpu", "cudasim", "cuda")


def _is_cupyx(X) -> bool:
    return type(X).__module__.startswith(_CUPYX)


def is_sparse(X) -> bool:
    """Whether ``X`` is a scipy.sparse or cupyx.scipy.sparse matrix or array
    (without importing either library for dense inputs)."""
    if not hasattr(X, "tocsr") or not hasattr(X, "nnz"):
        return False
    if _is_cupyx(X):
        return True
    import scipy.sparse

    return scipy.sparse.issparse(X)


def sparse_module(X):
    """The sparse library of ``X``: ``scipy.sparse`` or ``cupyx.scipy.sparse``."""
    if _is_cupyx(X):
        import cupyx.scipy.sparse

        return cupyx.scipy.sparse
    import scipy.sparse

    return scipy.sparse


def resolve_hint(X):
    """What :func:`kbackends.resolve` should see for ``X``: a cupyx matrix its
    data (a CuPy array: the cuda backend), a scipy.sparse one nothing (``None``:
    the other arguments' backend, else cpu), a dense array itself."""
    if not is_sparse(X):
        return X
    return X.data if _is_cupyx(X) else None


def as_csr(X, name: str = "X"):
    """``X`` (any sparse format, matrix or array) as a canonical 2-D float CSR.

    Raises
    ------
    TypeError
        Unless ``X`` is float32 or float64.
    ValueError
        Unless ``X`` is 2-D.
    """
    if X.ndim != 2:
        msg = f"`{name}` must be 2-D, got ndim={X.ndim} (shape {tuple(X.shape)})"
        raise ValueError(msg)
    if X.dtype.name not in ("float32", "float64"):
        msg = f"`{name}` must have a float32 or float64 dtype, got {X.dtype}"
        raise TypeError(msg)
    X = X.tocsr()
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # also sorts the indices
    return X


def to_backend(X, bk):
    """Sparse ``X`` on ``bk``'s device, moved once if needed: a scipy.sparse
    matrix becomes a cupyx one on cuda, a cupyx one comes to the host on cpu
    (and the simulator), which run scipy.sparse."""
    on_device = bk.name == "cuda"
    if on_device and not _is_cupyx(X):
        import cupyx.scipy.sparse

        return cupyx.scipy.sparse.csr_matrix(X.tocsr())
    if not on_device and _is_cupyx(X):
        return X.get()
    return X


def check_sparse_backend(bk, name: str = "X", kinds=SPARSE_BACKENDS) -> None:
    """TypeError unless ``bk`` is one of ``kinds`` (default: every backend with
    sparse kernels; a registered backend without them, such as array_api_strict,
    is refused)."""
    if bk.name not in kinds:
        msg = (f"`{name}` is a sparse matrix, which is taken on backend={' / '.join(map(repr, kinds))} only; "
               f"the resolved backend is {bk.name!r}: pass a dense array for it")
        raise TypeError(msg)


def resolve_rows(backend, X, *others, name="X"):
    """(backend, X, others on it): a sparse ``X`` becomes canonical CSR on the
    backend's device (a scipy.sparse one picks no backend of its own, a cupyx one
    cuda); a backend outside :data:`SPARSE_BACKENDS` is a TypeError."""
    if is_sparse(X):
        bk = resolve(backend, *others, resolve_hint(X))
        check_sparse_backend(bk, name)
        return bk, as_csr(to_backend(X, bk), name), tuple(bk.asarray(a) for a in others)
    bk = resolve(backend, X, *others)
    return bk, bk.asarray(X), tuple(bk.asarray(a) for a in others)


def check_rows(xp, X, name):
    """The float / 2-D checks of a dense ``X`` (a CSR one was checked by ``as_csr``)."""
    if not is_sparse(X):
        check_float_array(xp, X, name, 2)


def finite_view(xp, X):
    """What a finiteness scan reads: a sparse ``X``'s stored values, a dense ``X`` itself."""
    return xp.asarray(X.data) if is_sparse(X) else X
