"""Shape helper shared by the compiled RFF wrappers."""


def as_matrix_shape(a, *, rows_last):
    """2-D shape of a vector-or-matrix argument, explicit so empty arrays reshape.

    ``rows_last=False``: ``coef`` (n_out,) -> (n_out, 1), (n_out, k) unchanged.
    ``rows_last=True``: ``g`` (n,) -> (1, n), (k, n) unchanged.
    """
    if a.ndim == 2:
        return tuple(a.shape)
    return (1, a.shape[0]) if rows_last else (a.shape[0], 1)
