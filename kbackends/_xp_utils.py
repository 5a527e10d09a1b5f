"""Small helpers over an array namespace (``xp``).

They exist because a few operations (moving to the host, synchronising a GPU
stream, naming a namespace) are not part of the array API standard.
"""

from __future__ import annotations

import array_api_compat
import numpy as np


def namespace_name(xp) -> str:
    """Return the short name of a namespace (``"numpy"``, ``"cupy"``, ...)."""
    name = getattr(xp, "__name__", type(xp).__name__)
    return name.rsplit(".", 1)[-1] if name.startswith("array_api_compat.") else name



def is_array(x) -> bool:
    """Whether ``x`` is an array of an array-API namespace (NumPy, CuPy, torch, ...).

    Not Python scalars, lists, pandas objects or lazy dask arrays (the distributed
    layer takes those). Tested by the namespace's array type, not by
    ``hasattr(x, "__array_namespace__")``: CuPy 14's ndarray has no such method.
    """
    if isinstance(x, (int, float, complex, bool)) or array_api_compat.is_dask_array(x):
        return False
    return array_api_compat.is_array_api_obj(x)


def array_namespace(x):
    """The (array_api_compat-wrapped) namespace of an array; NumPy's for anything else."""
    return array_api_compat.array_namespace(x) if is_array(x) else array_api_compat.numpy


def is_cupy_namespace(xp) -> bool:
    return namespace_name(xp) == "cupy"


# Set by kbackends.testing.transfer_guard while it runs: called as hook(x, what)
# before a conversion (raises inside a sync-free region); and hook(x) for a deferred read.
_transfer_hook = None
_deferred_hook = None


def to_numpy(x) -> np.ndarray:
    """Copy (or view) any array as a NumPy array on the host."""
    if isinstance(x, np.ndarray):
        return x
    if _transfer_hook is not None:
        _transfer_hook(x, "kbackends.to_numpy")
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    try:
        return np.from_dlpack(x)
    except (TypeError, RuntimeError, BufferError, AttributeError):
        return np.asarray(x)


def synchronize(xp) -> None:
    """Block until all queued work of the namespace's current device is done."""
    if is_cupy_namespace(xp):
        import cupy

        cupy.cuda.get_current_stream().synchronize()


def float_dtype(xp, dtype):
    """``xp``'s float32 or float64 for ``dtype`` (a NumPy dtype, a string, or a
    namespace dtype); TypeError for anything else."""
    name = str(np.dtype(dtype)) if isinstance(dtype, (str, type, np.dtype)) else str(dtype)
    if "float32" in name:
        return xp.float32
    if "float64" in name:
        return xp.float64
    msg = f"`dtype` must be float32 or float64, got {dtype!r}"
    raise TypeError(msg)

