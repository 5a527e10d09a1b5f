"""Row and column sums of squares of dense or CSR rows: registrations only.

- ``squared_sums``: ``sum_j X_ij^2`` per row (``axis=1``) or per column (``axis=0``),
  accumulated in a given dtype: the squared norms the anchor graph, k-means, the SBP
  response and S3GD's step use, and the overflow check of sparse input.
"""

from ..._registry import register_kernel

for _impl, _module in (("xp", "_xp"), ("numba", "_numba")):
    register_kernel("squared_sums", _impl, f"{__name__}.{_module}:squared_sums")
