"""Public ops: validate the arguments once, then dispatch to the registered kernel.

Each op resolves its backend from its array arguments (or ``backend=``), moves
inputs there if needed, checks shapes, dtypes and finiteness, and calls the
implementation the backend prefers (``numba`` on cpu, ``cuda`` on cuda, the
pure ``xp`` reference elsewhere). Algorithms that already validated their
data pass ``check_finite=False`` to skip the O(n d) scan (and, on a GPU, the
synchronisation it implies).

One module per op family, mirroring :mod:`kbackends.kernels`:

- :mod:`~kbackends.ops.rff`: ``rff_features``, ``rff_predict``, ``rff_weighted_sum``
  (DSG, TSGS3VM, TSGSU);
- :mod:`~kbackends.ops.waterfill`: ``water_level``, ``water_level_biased`` (SBP);
- :mod:`~kbackends.ops.response`: ``kernel_response_update`` (SBP);
- :mod:`~kbackends.ops.anchors`: ``kmeans``, ``snap_to_samples``, ``anchor_graph``,
  ``anchor_propagate``, ``anchor_accumulate`` (S3GD);
- :mod:`~kbackends.ops.rows`: ``squared_sums`` (squared row norms and column scales,
  dense or CSR, for all of them), ``csr_rows_dense`` (a few CSR rows as a dense block);
- :mod:`~kbackends.ops.steps`: ``cache_batch``, ``loss_derivative``, ``block_update``,
  ``gn_system``, ``gn_solve``, ``gn_inverses``, ``mean_loss``: the steps of a functional-gradient
  iteration over random-feature blocks (with :func:`~kbackends.ops.rff_predict_add`, a
  cached prediction updated).

Loop ops: ``steps``' ops, ``rff_predict_add``, ``csr_rows_dense``, and the rff ops
called with ``check_input=False`` trust their inputs: ``backend=`` a resolved Backend,
the arrays already its own, nothing checked, moved or converted. They serve iteration
loops whose data were validated once at the fit's entry, where per-call checks would
cost as much host time as a GPU step (and a finiteness scan would wait for the device).

The argument checks they share (dtypes, shapes, finiteness, integers) are written
once, in ``_checks``; sparse inputs (scipy.sparse; cupyx.scipy.sparse on cuda) become canonical CSR on the
backend's device once, by ``to_backend`` and ``as_csr`` (``is_sparse`` tells one,
``resolve_hint`` what decides the backend; ``check_sparse_backend`` refuses a
backend without sparse kernels for the op); ``CSRRows`` names rows of a CSR
matrix without gathering them (a mini-batch on cuda: no host read).
"""

from .anchors import (
    anchor_accumulate,
    anchor_graph,
    anchor_propagate,
    kmeans,
    snap_to_samples,
)
from .response import RESPONSE_KERNELS, kernel_response_update
from ._csr_rows import CSRRows
from ._sparse import SPARSE_BACKENDS, as_csr, check_sparse_backend, is_sparse, resolve_hint, sparse_module, to_backend
from .rff import FORMS, rff_features, rff_predict, rff_predict_add, rff_weighted_sum
from .rows import csr_rows_dense, squared_sums
from .steps import block_update, cache_batch, gn_inverses, gn_solve, gn_system, loss_derivative, mean_loss
from .waterfill import water_level, water_level_biased

__all__ = [
    "rff_features", "rff_predict", "rff_weighted_sum", "water_level", "water_level_biased", "kernel_response_update",
    "kmeans", "snap_to_samples", "anchor_graph", "anchor_propagate", "anchor_accumulate", "squared_sums",
    "FORMS", "RESPONSE_KERNELS", "as_csr", "check_sparse_backend", "is_sparse", "resolve_hint", "sparse_module",
    "to_backend", "CSRRows", "SPARSE_BACKENDS",
    # loop ops (trusting their inputs)
    "cache_batch", "loss_derivative", "block_update", "gn_system", "gn_solve", "gn_inverses", "mean_loss",
    "rff_predict_add",
    "csr_rows_dense",
]
