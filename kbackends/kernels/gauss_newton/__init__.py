"""The engine's preconditioned block step (a Gauss-Newton step on one block of
random features): registrations only.

- ``gn_system``: one source's share of the step's linear system, the float64
  covariance ``[phi, 1]^T [phi, 1] * weight / B`` and right-hand side
  ``[phi, 1]^T g / B`` (accumulated over the sources in place);
- ``gn_solve``: the ridge relative to the mean feature variance (the intercept
  unpenalised), the solve, and the coefficient changes ``-eta * step``;
- ``gn_inverses``: the inverses of a stack of regularised systems (the systems built
  ahead, ``algorithms._engine.ahead``; on cuda by their Cholesky factors).

``xp`` is the reference (the engine's code for the step; the cpu engine runs it on
NumPy: a few calls on small matrices); ``cuda`` is cuBLAS for the Gram matrix,
one Numba-CUDA launch for the rest of the system, cuSOLVER for the solve (through
CuPy) and a launch on each side of it, where the reference makes about 30 array
calls, each a launch whose host time bounds a device iteration (docs/benchmarks.md,
"GPU").
"""

from ..._registry import register_kernel

for _op in ("gn_system", "gn_solve", "gn_inverses"):
    for _impl, _module in (("xp", "_xp"), ("cuda", "_cuda")):
        register_kernel(_op, _impl, f"{__name__}.{_module}:{_op}")
