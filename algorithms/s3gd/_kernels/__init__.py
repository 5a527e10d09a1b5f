"""Inner loops of S3GD / prox-SVRG / prox-SGD for linear models: registrations
only, made with kbackends' public :func:`kbackends.register_kernel` when
:mod:`algorithms.s3gd` is imported.

``xp`` is the reference (any namespace, one array op per step: array-api-strict and
CuPy run it); ``numba`` is the cpu engine (a whole run of outer loops in one
compiled call, so Python costs nothing per step); ``cuda`` runs the snapshot
products through ``xp.matmul`` and all inner steps of an outer loop in one
single-block launch.
"""

from kbackends import register_kernel

for _impl, _module in (("xp", "_xp"), ("numba", "_numba"), ("cuda", "_cuda")):
    register_kernel("prox_sgd_run", _impl, f"{__name__}.{_module}:prox_sgd_run")
