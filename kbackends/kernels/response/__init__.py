"""Kernel-response update of the SBP: registrations only.

- ``kernel_response_update``: ``c + y * (K(X, X[idx]) @ w)``, fused;
- ``csr_rows_dense``: rows of a CSR ``X`` as a dense block (on the GPU without a
  host synchronisation: SBP's sampled rows inside an iteration).
"""

from ..._registry import register_kernel

for _impl, _module in (("xp", "_xp"), ("numba", "_numba"), ("cuda", "_cuda")):
    register_kernel("kernel_response_update", _impl, f"{__name__}.{_module}:kernel_response_update")

for _impl, _module in (("xp", "_xp"), ("numba", "_numba"), ("cuda", "_cuda")):
    register_kernel("csr_rows_dense", _impl, f"{__name__}.{_module}:csr_rows_dense")
