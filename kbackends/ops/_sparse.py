"""scipy.sparse inputs at the ops' public boundary: converted once to canonical
CSR (sorted indices, duplicates summed), never densified."""

from __future__ import annotations


def is_sparse(X) -> bool:
    """Whether ``X`` is a scipy.sparse matrix or array (without importing scipy
    for dense inputs)."""
    if not hasattr(X, "tocsr") or not hasattr(X, "nnz"):
        return False
    import scipy.sparse

    return scipy.sparse.issparse(X)


def as_csr(X, name: str = "X"):
    """``X`` (any scipy.sparse format, matrix or array) as a canonical 2-D float CSR.

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


def check_sparse_backend(bk, name: str = "X") -> None:
    """TypeError unless ``bk`` runs scipy.sparse inputs (the numba cpu kernels)."""
    if bk.name != "cpu":
        msg = (f"`{name}` is a scipy.sparse matrix, which only backend='cpu' takes; "
               f"the resolved backend is {bk.name!r}: pass a dense array for it")
        raise TypeError(msg)
