"""The kernel registry: ``(op, impl) -> implementation``, imported lazily.

Implementations are registered as ``"module:function"`` strings so that
importing :mod:`kbackends` compiles nothing and imports neither Numba-CUDA nor
CuPy; the module is imported the first time the kernel is asked for.
"""

from __future__ import annotations

import importlib
import threading
from typing import Callable

from ._backend import Backend, resolve

_KERNELS: dict[tuple[str, str], Callable | str] = {}
_LOCK = threading.Lock()
# The code of every registered kernel imported so far: kbackends.testing's op counter and
# transfer guard tell a kernel's frames by it (those under kbackends/kernels by their
# folder), wherever the family lives (an algorithm's package, a third-party one).
KERNEL_CODES: set = set()


def _remember(target: Callable) -> None:
    code = getattr(target, "__code__", None)
    if code is not None:
        KERNEL_CODES.add(code)


def register_kernel(op: str, impl: str, target: Callable | str) -> None:
    """Register an implementation of ``op``.

    Parameters
    ----------
    op : str
        Op name, e.g. ``"rff_predict"``.
    impl : str
        Implementation name: ``"xp"`` (pure array API, the reference), ``"numba"``,
        ``"cuda"``, or one a third-party backend lists in its ``impls``.
    target : callable or str
        The function, or ``"package.module:function"`` to import on first use.
        Every kernel has the signature ``fn(*arrays, xp, **static) -> result``;
        a Numba-CUDA or Numba kernel written outside kbackends builds on
        :mod:`kbackends.kernel_tools`.

    Raises
    ------
    ValueError
        If ``(op, impl)`` is already registered.
    """
    key = (op, impl)
    with _LOCK:
        if key in _KERNELS:
            msg = f"kernel {op!r} already has a {impl!r} implementation"
            raise ValueError(msg)
        _KERNELS[key] = target
        if not isinstance(target, str):
            _remember(target)


def registered_kernels(op: str | None = None) -> list[tuple[str, str]]:
    """The registered ``(op, impl)`` pairs, optionally for one op."""
    return sorted(k for k in _KERNELS if op is None or k[0] == op)


def get_kernel(op: str, backend="auto") -> Callable:
    """Return the implementation of ``op`` that ``backend`` prefers.

    Parameters
    ----------
    op : str
        Op name.
    backend : Backend or str, default "auto"
        The backend whose ``impls`` order is followed.

    Raises
    ------
    NotImplementedError
        If no implementation of ``op`` suits the backend; the message names the
        op, the backend and what is registered.
    """
    bk = backend if isinstance(backend, Backend) else resolve(backend)
    for impl in bk.impls:
        target = _KERNELS.get((op, impl))
        if target is None:
            continue
        if isinstance(target, str):
            target = _import_target(target)
            with _LOCK:
                _KERNELS[(op, impl)] = target
                _remember(target)
        return target
    have = [impl for (name, impl) in _KERNELS if name == op]
    msg = (
        f"op {op!r} has no implementation for backend {bk.name!r} "
        f"(it tries {list(bk.impls)}; registered: {have or 'none'})"
    )
    raise NotImplementedError(msg)


def _import_target(target: str) -> Callable:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)
