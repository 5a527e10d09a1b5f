"""kbackends: one array-API code path, dispatched to cpu (NumPy + Numba) or cuda
(CuPy + Numba-CUDA) kernels through a pluggable registry.

Public API
----------
resolve, Backend, available_backends, register_backend, register_kernel,
get_kernel, BackendUnavailableError; the array helpers the array API standard
lacks: to_numpy (any array to a host NumPy array), synchronize (wait for a
namespace's queued device work), float_dtype (a namespace's float32 / float64
for a dtype name); sync_free (marks an iteration loop free of device -> host
transfers, checked by :func:`kbackends.testing.transfer_guard`), to_host_async
(a deferred, non-stalling read of a small array); launch_counts and
launch_settings (the Numba-CUDA kernels' launches by path, and a block run with
another launch path or row-chunk budget); CapturedGraph (work captured once as a
CUDA graph and replayed on CuPy, called as it is elsewhere). The ops live in
:mod:`kbackends.ops`, the matching random features in :mod:`kbackends.random`,
the oracle-test helpers for any backend in :mod:`kbackends.testing`, and the kit for
kernels registered outside kbackends (launch, geometry, device math) in
:mod:`kbackends.kernel_tools`.
"""

from ._backend import Backend, available_backends, register_backend, registered_backends, resolve
from ._errors import BackendUnavailableError
from ._registry import get_kernel, register_kernel, registered_kernels
from ._xp_utils import array_namespace, float_dtype, is_array, synchronize, to_numpy
from ._sync import HostValue, in_sync_free_region, sync_free, to_host_async
from ._launch import launch_counts, launch_path, launch_settings
from ._graph import CapturedGraph
from . import kernels as _kernels  # noqa: F401  (registers the built-in kernels)

__all__ = [
    "Backend",
    "BackendUnavailableError",
    "CapturedGraph",
    "available_backends",
    "float_dtype",
    "get_kernel",
    "HostValue",
    "in_sync_free_region",
    "launch_counts",
    "launch_path",
    "launch_settings",
    "register_backend",
    "register_kernel",
    "registered_backends",
    "registered_kernels",
    "resolve",
    "sync_free",
    "synchronize",
    "to_host_async",
    "to_numpy",
    "is_array",
    "array_namespace",
]

from importlib.metadata import PackageNotFoundError, version as _version

try:  # the one place of the version is pyproject.toml
    __version__ = _version("kbackends")
except PackageNotFoundError:  # a checkout on sys.path that was never installed
    __version__ = "0+unknown"
