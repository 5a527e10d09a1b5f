"""Segmented water-fill (the SBP's find_gamma): registrations only."""

from ..._registry import register_kernel

for _impl, _module in (("xp", "_xp"), ("numba", "_numba"), ("cuda", "_cuda")):
    register_kernel("water_level", _impl, f"{__name__}.{_module}:water_level")
for _impl, _module in (("xp", "_xp"), ("numba", "_numba"), ("cuda", "_cuda_biased")):
    register_kernel("water_level_biased", _impl, f"{__name__}.{_module}:water_level_biased")
# With widths (sample weights): a Numba kernel and the sort-based reference, which the
# cuda engine runs through the registry's fallback (device sorts and scans, no host trip).
for _name in ("water_level_weighted", "water_level_biased_weighted"):
    for _impl, _module in (("xp", "_xp"), ("numba", "_numba")):
        register_kernel(_name, _impl, f"{__name__}.{_module}:{_name}")
