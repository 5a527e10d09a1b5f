"""Segmented water-fill (the SBP's find_gamma): registrations only."""

from ..._registry import register_kernel

for _impl, _module in (("xp", "_xp"), ("numba", "_numba"), ("cuda", "_cuda")):
    register_kernel("water_level", _impl, f"{__name__}.{_module}:water_level")
for _impl, _module in (("xp", "_xp"), ("numba", "_numba"), ("cuda", "_cuda")):
    register_kernel("water_level_biased", _impl, f"{__name__}.{_module}:water_level_biased")
