"""Array calls an iteration loop makes, counted on the CPU (exported by :mod:`kbackends.testing`).

On a GPU most fits are bound by the host's cost per launch, not by the kernels
(docs/benchmarks.md, "GPU"): every CuPy operation is at least one launch of
10-20 us of host time. :func:`count_array_ops` counts what a loop asks of its
array namespace, on ``array_api_strict`` (the stand-in for a device namespace),
so that the launches per iteration can be measured and bounded without a GPU.
"""

from __future__ import annotations

import inspect
import sys
from collections import Counter
from pathlib import Path

from ._registry import KERNEL_CODES
from ._sync import in_sync_free_region

KERNELS_DIR = str(Path(__file__).parent / "kernels")

# Namespace functions that describe dtypes or flags: no array work.
_NOT_OPS = frozenset({
    "isdtype", "result_type", "can_cast", "finfo", "iinfo", "get_array_api_strict_flags",
    "set_array_api_strict_flags", "reset_array_api_strict_flags", "__array_namespace_info__",
})
# Array methods that compute (operators, indexing); not properties such as shape or dtype.
_METHODS = tuple(
    f"__{name}__" for name in (
        "abs", "add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv", "rfloordiv",
        "mod", "rmod", "pow", "rpow", "matmul", "rmatmul", "neg", "pos", "invert", "and", "rand", "or", "ror",
        "xor", "rxor", "lshift", "rshift", "lt", "le", "gt", "ge", "eq", "ne", "getitem", "setitem",
        "iadd", "isub", "imul", "itruediv",
    )
)


def kernel_entry(frame):
    """The outermost frame at or above ``frame`` that runs a kernel's implementation
    (code under ``kbackends/kernels``, or a registered kernel of another package), or None."""
    entry = None
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith(KERNELS_DIR) or code in KERNEL_CODES:
            entry = frame
        frame = frame.f_back
    return entry


class OpCount:
    """What a :func:`count_array_ops` saw inside :func:`kbackends.sync_free` regions.

    Attributes
    ----------
    calls : collections.Counter
        Array calls by name (``"sum"``, ``"__mul__"``, ``"__getitem__"``, ...) made
        outside the kernels, and ``"kernel <function>"`` once per call of a
        registered kernel (its array-API reference's own calls are not counted:
        on a device its own launches run instead).
    """

    def __init__(self):
        self.calls = Counter()
        self._last_kernel = None

    @property
    def total(self):
        """All counted calls. An upper bound of the launches a CuPy run makes:
        views (basic indexing, a reshape of contiguous data) launch nothing."""
        return sum(self.calls.values())


class count_array_ops:  # noqa: N801  (used as a function: ``with count_array_ops() as count``)
    """Context manager: count the ``array_api_strict`` calls made inside
    :func:`kbackends.sync_free` regions while it is active (namespace functions,
    ``linalg`` functions as ``"linalg.<name>"``, and the array's operators and
    indexing), each call of a registered kernel as one.

    Yields
    ------
    OpCount

    Examples
    --------
    >>> import array_api_strict as xp
    >>> import kbackends
    >>> from kbackends.testing import count_array_ops
    >>> a = xp.asarray([1.0, 2.0])
    >>> with count_array_ops() as count:
    ...     with kbackends.sync_free():
    ...         for _ in range(3):
    ...             a = xp.sum(a * 2.0) + a
    >>> count.total, count.calls["__mul__"]
    (9, 3)
    """

    def __init__(self):
        self.count = OpCount()
        self._saved = []

    def __enter__(self):
        import array_api_strict


        count = self.count
        Array = type(array_api_strict.asarray(0.0))

        def counted(name, original):
            def wrapper(*args, **kwargs):
                if in_sync_free_region():
                    entry = kernel_entry(sys._getframe(1))
                    if entry is None:
                        count.calls[name] += 1
                    elif entry is not count._last_kernel:  # the first call of a new kernel call
                        count._last_kernel = entry
                        count.calls[f"kernel {entry.f_code.co_name}"] += 1
                return original(*args, **kwargs)

            return wrapper

        for name in array_api_strict.__all__:
            original = getattr(array_api_strict, name)
            if inspect.isfunction(original) and name not in _NOT_OPS:
                self._saved.append((array_api_strict, name, original))
                setattr(array_api_strict, name, counted(name, original))
        for name in getattr(array_api_strict.linalg, "__all__", ()):  # solve, diagonal, ...: launches too
            original = getattr(array_api_strict.linalg, name)
            if inspect.isfunction(original):
                self._saved.append((array_api_strict.linalg, name, original))
                setattr(array_api_strict.linalg, name, counted(f"linalg.{name}", original))
        for name in _METHODS:
            original = Array.__dict__.get(name)
            if original is not None:
                self._saved.append((Array, name, original))
                setattr(Array, name, counted(name, original))
        return count

    def __exit__(self, exc_type, exc, tb):
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()
        self.count._last_kernel = None  # no frame kept alive
        return False
