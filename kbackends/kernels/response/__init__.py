"""Kernel-response update of the SBP: registrations only."""

from ..._registry import register_kernel

for _impl, _module in (("xp", "_xp"), ("numba", "_numba"), ("cuda", "_cuda")):
    register_kernel("kernel_response_update", _impl, f"{__name__}.{_module}:kernel_response_update")
