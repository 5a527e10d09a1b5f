"""Random-Fourier-feature kernels (cos/sin blocks): registrations only."""

from ..._registry import register_kernel

for _op in ("rff_features", "rff_predict", "rff_weighted_sum"):
    for _impl, _module in (("xp", "_xp"), ("numba", "_numba"), ("cuda", "_cuda")):
        register_kernel(_op, _impl, f"{__name__}.{_module}:{_op}")
