"""Small helpers over an array namespace (``xp``).

They exist because a few operations (moving to the host, synchronising a GPU
stream, naming a namespace) are not part of the array API standard.
"""

from __future__ import annotations

import numpy as np


def namespace_name(xp) -> str:
    """Return the short name of a namespace (``"numpy"``, ``"cupy"``, ...)."""
    name = getattr(xp, "__name__", type(xp).__name__)
    return name.rsplit(".", 1)[-1] if name.startswith("array_api_compat.") else name



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

