"""The functional-gradient engine's bookkeeping around its kernels: registrations only.

- ``cache_batch``: a mini-batch's cached predictions plus the intercept, and its targets;
- ``block_update``: a block's coefficient change added to the stored coefficients (in
  the units of the global scale factor), the intercept's change, and with the Polyak
  average its correction term and intercept sum.

``xp`` is the reference (the engine's own lines; the cpu engine runs it on NumPy); ``cuda``
runs each as one launch where the reference is three or four (gathers, sums, a division,
a slice assignment), each a launch whose host time bounds a device iteration
(docs/benchmarks.md, "GPU").
"""

from ..._registry import register_kernel

for _op in ("cache_batch", "block_update"):
    for _impl, _module in (("xp", "_xp"), ("cuda", "_cuda")):
        register_kernel(_op, _impl, f"{__name__}.{_module}:{_op}")
