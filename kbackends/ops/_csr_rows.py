"""Rows of a CSR matrix taken without gathering them: what the cuda rff kernels
read for a mini-batch of sparse rows.

Gathering rows of a cupyx.scipy.sparse matrix (``X[rows]``, even ``X[a:b]``)
reads the result's number of stored entries on the host to allocate it
(``cupyx/scipy/sparse/_index.py``: ``_csr_row_index``, ``int(Bp[-1])``;
``_get_csr_submatrix_major_axis``, ``int(Ap[0])``), a synchronisation per
mini-batch. A :class:`CSRRows` keeps the matrix and the row numbers (a device
array) instead; the cuda kernels index the matrix's ``indptr`` with them
(:mod:`kbackends.kernels.rff`), so an iteration stays free of host reads.
"""

from __future__ import annotations

__all__ = ["CSRRows"]


class CSRRows:
    """Rows ``rows`` of the canonical CSR matrix ``csr``, in that order (repeats allowed).

    Only the cuda backend's rff kernels (and the simulator's) read it; it has the
    ``shape`` and ``dtype`` of ``csr[rows]``.

    Parameters
    ----------
    csr : scipy.sparse or cupyx.scipy.sparse CSR matrix or array, canonical
    rows : integer array of shape (k,), on ``csr``'s device
    """

    __slots__ = ("csr", "rows")

    def __init__(self, csr, rows):
        self.csr = csr
        self.rows = rows

    @property
    def shape(self):
        return (int(self.rows.shape[0]), self.csr.shape[1])

    @property
    def dtype(self):
        return self.csr.dtype

    def __repr__(self):
        return f"CSRRows({self.shape[0]} of {self.csr.shape[0]} rows, {self.csr.shape[1]} columns, {self.dtype})"
