"""Random-Fourier-feature kernels (cos/sin blocks): registrations only.

``rff_predict_add`` is ``f * shrink + rff_predict(...)``: the engine's update of a
cached prediction, one kernel call (on cuda, the launches of one prediction)."""

from ..._registry import register_kernel

for _op in ("rff_features", "rff_predict", "rff_predict_add", "rff_weighted_sum"):
    for _impl, _module in (("xp", "_xp"), ("numba", "_numba"), ("cuda", "_cuda")):
        register_kernel(_op, _impl, f"{__name__}.{_module}:{_op}")
