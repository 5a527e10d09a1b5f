"""Sparse anchor propagation (S3GD, Algorithm 2): registrations only.

- ``anchor_knn``: the k nearest anchors of every row and their squared distances;
- ``anchor_propagate``: per-sample values ``sum_k w_ik v[idx_ik]``;
- ``anchor_accumulate``: its transpose, rows accumulated onto anchors;
- ``kmeans_seeds``: k-means++ seeding with its random draws given (``kbackends.ops.kmeans``).
"""

from ..._registry import register_kernel

for _op in ("anchor_knn", "anchor_propagate", "anchor_accumulate", "kmeans_seeds"):
    for _impl, _module in (("xp", "_xp"), ("numba", "_numba"), ("cuda", "_cuda")):
        register_kernel(_op, _impl, f"{__name__}.{_module}:{_op}")
