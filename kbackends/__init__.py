"""kbackends: one array-API code path, dispatched to cpu (NumPy + Numba) or cuda
(CuPy + Numba-CUDA) kernels through a pluggable registry.

Public API
----------
resolve, Backend, available_backends, register_backend, register_kernel,
get_kernel, BackendUnavailableError; the ops live in :mod:`kbackends.ops` and
the matching random features in :mod:`kbackends.random`.
"""

from ._backend import Backend, available_backends, register_backend, registered_backends, resolve
from ._errors import BackendUnavailableError
from ._registry import get_kernel, register_kernel, registered_kernels
from . import kernels as _kernels  # noqa: F401  (registers the built-in kernels)

__all__ = [
    "Backend",
    "BackendUnavailableError",
    "available_backends",
    "get_kernel",
    "register_backend",
    "register_kernel",
    "registered_backends",
    "registered_kernels",
    "resolve",
]

__version__ = "0.1.0"
