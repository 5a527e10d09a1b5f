"""Counter-based random-feature draws (``omega_block``): registrations only."""

from ..._registry import register_kernel

for _impl, _module in (("xp", "_xp"), ("numba", "_numba"), ("cuda", "_cuda")):
    register_kernel("omega_block", _impl, f"{__name__}.{_module}:omega_block")
