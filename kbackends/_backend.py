"""Backends: an array namespace, a device and the kernel implementations to use.

A backend is chosen once per call (usually at the start of ``fit``) by
:func:`resolve`; algorithms then do all array maths through ``backend.xp`` and
call kernels through :func:`kbackends.get_kernel`.
"""

from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import array_api_compat
import array_api_compat.numpy  # the namespace of lists and other non-array inputs: a submodule, not imported by the package
import numpy as np

from ._errors import BackendUnavailableError
from ._xp_utils import array_namespace, is_array, namespace_name, synchronize, to_numpy


@dataclass(frozen=True)
class Backend:
    """A resolved backend.

    Attributes
    ----------
    name : str
        Registered name (``"cpu"``, ``"cuda"``, ...) or, for an unregistered
        array-API namespace, that namespace's name (e.g. ``"array_api_strict"``).
    xp : module
        The array namespace all array maths goes through.
    device : object
        The device arrays live on (``xp``'s own device object), or None for the
        namespace's default.
    impls : tuple of str
        Kernel implementations in order of preference, e.g. ``("numba", "xp")``.
    """

    name: str
    xp: Any = field(repr=False)
    device: Any = None
    impls: tuple = ("xp",)

    def asarray(self, x, dtype=None):
        """Return ``x`` as an array of this backend (moved once if it lives elsewhere)."""
        if x is None:
            return None
        xp = self.xp
        if is_array(x) and namespace_name(array_namespace(x)) == namespace_name(xp) and _same_device(
            x, self.device
        ):
            return x if dtype is None or x.dtype == dtype else xp.astype(x, dtype)
        host = to_numpy(x) if is_array(x) else np.asarray(x)
        if self.device is None or namespace_name(xp) in ("numpy", "cupy"):
            if namespace_name(xp) == "cupy" and self.device is not None:
                import cupy

                with cupy.cuda.Device(self.device.id if hasattr(self.device, "id") else self.device):
                    out = xp.asarray(host)
            else:
                out = xp.asarray(host)
        else:
            out = xp.asarray(host, device=self.device)
        return out if dtype is None else xp.astype(out, dtype)

    def to_numpy(self, x) -> np.ndarray:
        """Copy an array of this backend to the host as a NumPy array."""
        return to_numpy(x)

    def synchronize(self) -> None:
        """Wait for queued device work (no-op on the CPU); use before reading clocks."""
        synchronize(self.xp)


@dataclass(frozen=True)
class _BackendSpec:
    name: str
    load_namespace: Callable[[], Any]
    impls: tuple
    unavailable_reason: Callable[[], str | None]
    owns_namespace: Callable[[Any], bool]


_BACKENDS: dict[str, _BackendSpec] = {}
_LOCK = threading.Lock()


def register_backend(
    name: str,
    *,
    namespace: Callable[[], Any] | str,
    impls: tuple = ("xp",),
    unavailable_reason: Callable[[], str | None] | None = None,
    owns_namespace: Callable[[Any], bool] | None = None,
) -> None:
    """Register a named backend.

    Parameters
    ----------
    name : str
        Name users pass as ``backend=``.
    namespace : callable or str
        Zero-argument function returning the array namespace, or the import
        path of a module (imported lazily, on first use).
    impls : tuple of str, default ("xp",)
        Kernel implementations to try, in order. ``"xp"`` (the pure array-API
        reference) should come last so every op has an implementation.
    unavailable_reason : callable, optional
        Returns None when the backend can run here, otherwise a sentence
        saying why not (raised as :class:`BackendUnavailableError`).
    owns_namespace : callable, optional
        ``owns_namespace(xp) -> bool``: whether ``backend="auto"`` should pick
        this backend for arrays of namespace ``xp``.

    Raises
    ------
    ValueError
        If ``name`` is already registered.
    """
    if isinstance(namespace, str):
        module_name = namespace
        namespace = lambda: importlib.import_module(module_name)  # noqa: E731
    spec = _BackendSpec(
        name=name,
        load_namespace=namespace,
        impls=tuple(impls),
        unavailable_reason=unavailable_reason or (lambda: None),
        owns_namespace=owns_namespace or (lambda xp: False),
    )
    with _LOCK:
        if name in _BACKENDS:
            msg = f"backend {name!r} is already registered"
            raise ValueError(msg)
        _BACKENDS[name] = spec


def available_backends() -> list[str]:
    """Names of the registered backends that can run on this machine."""
    return [name for name, spec in _BACKENDS.items() if spec.unavailable_reason() is None]


def registered_backends() -> list[str]:
    """Names of all registered backends, available here or not."""
    return list(_BACKENDS)


def resolve(backend="auto", *arrays) -> Backend:
    """Choose the backend for a computation on ``arrays``.

    Parameters
    ----------
    backend : str, Backend or array namespace, default "auto"
        ``"auto"`` follows the namespace (and device) of the input arrays,
        ``"cpu"`` when there are none. A registered name (``"cpu"``, ``"cuda"``)
        selects that backend; inputs from elsewhere are moved to it once with
        :meth:`Backend.asarray`. A namespace module (e.g. ``array_api_strict``)
        selects the pure array-API path on it.
    *arrays : arrays or None
        Inputs that decide ``"auto"``; None entries are ignored.

    Returns
    -------
    Backend

    Raises
    ------
    ValueError
        For an unknown name, or when ``"auto"`` sees arrays from different
        namespaces or devices.
    BackendUnavailableError
        When the named backend cannot run here (says why).
    """
    if isinstance(backend, Backend):
        return backend
    if not isinstance(backend, str):
        if not hasattr(backend, "asarray"):  # not an array namespace either (e.g. -1, None, True)
            msg = f"`backend` must be 'auto', a backend name, a Backend or an array namespace, got {backend!r}"
            raise TypeError(msg)
        return _from_namespace(backend)
    if backend == "auto":
        return _resolve_auto(arrays)
    spec = _BACKENDS.get(backend)
    if spec is None:
        msg = f"`backend` must be 'auto' or one of {sorted(_BACKENDS)}, got {backend!r}"
        raise ValueError(msg)
    reason = spec.unavailable_reason()
    if reason is not None:
        msg = f"backend {backend!r} is not available: {reason}"
        raise BackendUnavailableError(msg)
    xp = spec.load_namespace()
    device = _common_device(arrays, xp)
    return Backend(name=spec.name, xp=xp, device=device, impls=spec.impls)


def _same_device(x, device) -> bool:
    return device is None or array_api_compat.device(x) == device


def _describe(x) -> str:
    ns = namespace_name(array_namespace(x))
    dev = array_api_compat.device(x) if is_array(x) else "cpu"
    return f"{ns} on {dev}"


def _resolve_auto(arrays) -> Backend:
    present = [a for a in arrays if a is not None]
    if not present:
        return resolve("cpu")
    kinds = {}
    for a in present:
        kinds.setdefault(_describe(a), a)
    if len(kinds) > 1:
        msg = (
            f"Input arrays use different devices: {sorted(kinds)}; move them to one "
            "namespace and device, or pass an explicit `backend=` to move them there"
        )
        raise ValueError(msg)
    first = present[0]
    xp = array_namespace(first)
    for spec in _BACKENDS.values():
        if spec.owns_namespace(xp):
            reason = spec.unavailable_reason()
            if reason is not None:
                msg = f"backend {spec.name!r} is not available: {reason}"
                raise BackendUnavailableError(msg)
            device = array_api_compat.device(first) if is_array(first) else None
            return Backend(spec.name, spec.load_namespace(), _normalise_device(device, xp), spec.impls)
    device = array_api_compat.device(first)
    return Backend(namespace_name(xp), xp, device, ("xp",))


def _from_namespace(xp) -> Backend:
    for spec in _BACKENDS.values():
        if spec.owns_namespace(xp) and spec.unavailable_reason() is None:
            return Backend(spec.name, spec.load_namespace(), None, spec.impls)
    return Backend(namespace_name(xp), xp, None, ("xp",))


def _normalise_device(device, xp):
    # NumPy has one device; keep None so Backend equality does not depend on it.
    return None if namespace_name(xp) == "numpy" else device


def _common_device(arrays, xp):
    """Device of the first input already in ``xp``, else the namespace default."""
    for a in arrays:
        if a is not None and is_array(a) and namespace_name(array_namespace(a)) == namespace_name(xp):
            return _normalise_device(array_api_compat.device(a), xp)
    return None


# --- built-in backends ------------------------------------------------------------------


def _cuda_unavailable_reason() -> str | None:
    try:
        import cupy
    except ImportError as exc:
        return f"CuPy is not installed ({exc}); install the `cuda12` or `cuda13` extra"
    try:
        n_devices = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDA driver missing or broken
        return f"CuPy cannot reach a GPU ({type(exc).__name__}: {exc})"
    if n_devices == 0:
        return "no CUDA GPU is visible"
    try:
        from numba import cuda

        if not cuda.is_available():
            return "numba-cuda cannot use the GPU (numba.cuda.is_available() is False)"
    except ImportError as exc:
        return f"numba-cuda is not installed ({exc}); install the `cuda12` or `cuda13` extra"
    return _numba_cuda_numpy_conflict()


def _numba_cuda_numpy_conflict() -> str | None:
    """numba-cuda <= 0.30.4 cannot launch a kernel under NumPy 2.5 (its array module,
    imported at the first launch, names the removed ``np.row_stack``; NVIDIA/numba-cuda#907,
    which its maintainers will not fix). Found by importing that module, as a launch would."""
    try:
        import numba.cuda.np.arrayobj  # noqa: F401
    except AttributeError as exc:
        import numpy

        return (f"numba-cuda cannot launch kernels under NumPy {numpy.__version__} ({exc}); "
                "install numpy<2.5 (the `cuda12` / `cuda13` extras pin it)")
    except ImportError:  # a numba-cuda laid out otherwise: its launches will tell
        return None
    return None


def _cudasim_unavailable_reason() -> str | None:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        return "set NUMBA_ENABLE_CUDASIM=1 before numba is imported to run CUDA kernels on the CPU"
    try:
        import numba.cuda  # noqa: F401
    except ImportError as exc:
        return f"numba-cuda is not installed ({exc})"
    return None


register_backend(
    "cpu",
    namespace="array_api_compat.numpy",
    impls=("numba", "xp"),
    owns_namespace=lambda xp: namespace_name(xp) == "numpy",
)
register_backend(
    "cuda",
    namespace="array_api_compat.cupy",
    impls=("cuda", "xp"),
    unavailable_reason=_cuda_unavailable_reason,
    owns_namespace=lambda xp: namespace_name(xp) == "cupy",
)
# The CUDA kernels run by the Numba simulator on NumPy arrays: for tests and debugging.
register_backend(
    "cudasim",
    namespace="array_api_compat.numpy",
    impls=("cuda", "xp"),
    unavailable_reason=_cudasim_unavailable_reason,
)
