"""The transfer guard of :mod:`kbackends.testing`: every device -> host conversion of an
``array_api_strict`` array inside a :func:`kbackends.sync_free` region raises, to prove
a loop never waits for the device."""

from __future__ import annotations

import sys

from .._op_count import kernel_entry
from .. import _sync, _xp_utils
from .._sync import in_sync_free_region


class TransferGuardError(Exception):
    """A device -> host conversion inside a :func:`kbackends.sync_free` region under
    :func:`transfer_guard`. Not a RuntimeError / TypeError, so that no ``except``
    written for those swallows it."""


# Conversions of an array to a host value (the data must be ready to read them).
_CONVERSIONS = ("__float__", "__int__", "__bool__", "__index__", "__complex__", "__array__", "__buffer__",
                "__dlpack__", "__iter__", "item", "tolist")
# Functions whose output shape depends on the data: the host waits to learn it.
_DATA_SHAPED = ("nonzero", "unique_all", "unique_counts", "unique_inverse", "unique_values")


class TransferLog:
    """What a :func:`transfer_guard` saw.

    Attributes
    ----------
    blocked : list of str
        The conversions that raised (what converted), in order.
    deferred : int
        Reads started with :func:`kbackends.to_host_async` inside a region (allowed).
    regions : int
        :func:`kbackends.sync_free` regions entered (a test that expects a guarded
        loop checks it is not 0).
    uploads : int
        Host -> device copies inside a region made by the code around the kernels
        (``asarray`` of host data: allowed, but each is a copy a GPU loop pays per
        iteration; tests bound it). Copies inside a registered kernel's array-API
        reference are not counted: on a device its own kernel runs.
    """

    def __init__(self):
        self.blocked = []
        self.deferred = 0
        self.regions = 0
        self.uploads = 0


_GUARD_ACTIVE = []


def _inside_a_kernel():
    """Whether a frame of the caller's stack runs a kernel (see :func:`kernel_entry`)."""
    return kernel_entry(sys._getframe(2)) is not None


class transfer_guard:
    """Context manager: raise :class:`TransferGuardError` on every device -> host
    conversion of an ``array_api_strict`` array made inside a
    :func:`kbackends.sync_free` region while it is active.

    Guarded, for arrays of ``array_api_strict`` (the namespace that stands in for a
    device one on the CPU): ``float()``, ``int()``, ``bool()`` (an ``if`` on an
    array), ``operator.index()`` (an array as a slice bound or a range), ``complex()``,
    ``np.asarray`` / ``__array__``, the buffer protocol, ``__dlpack__``, iteration,
    ``.item()`` / ``.tolist()`` (which the namespace lacks anyway), and
    :func:`kbackends.to_numpy` of any non-NumPy array; and what makes the host
    wait for a data-dependent shape: boolean-mask indexing, ``nonzero`` and the
    ``unique_*`` functions. Outside a region everything converts as usual, so
    setup before the loop and the returned model may cross. Host -> device copies
    are never guarded, but counted in ``log.uploads``. :func:`kbackends.to_host_async`
    is counted in ``log.deferred``, not refused.

    The methods are patched on ``array_api_strict``'s array class for the
    duration of the ``with`` block (not thread-safe: one guard at a time). A
    conversion whose error the code under test swallowed still fails the guard
    on exit.

    Yields
    ------
    TransferLog

    Raises
    ------
    TransferGuardError
        At the conversion, naming it (and on exit for a swallowed one).
    RuntimeError
        When a guard is already active.

    Examples
    --------
    >>> import array_api_strict as xp
    >>> import kbackends
    >>> from kbackends.testing import transfer_guard, TransferGuardError
    >>> a = xp.asarray([1.0, 2.0])
    >>> with transfer_guard() as log:
    ...     total = float(xp.sum(a))  # outside a region: converts
    ...     with kbackends.sync_free():
    ...         s = xp.sum(a) * 2.0   # stays a 0-d device array
    >>> total, log.blocked
    (3.0, [])
    >>> with transfer_guard():
    ...     with kbackends.sync_free():
    ...         float(xp.sum(a))
    Traceback (most recent call last):
    ...
    kbackends.testing.TransferGuardError: device -> host transfer inside a sync-free loop: __float__ ...
    """

    def __init__(self):
        self.log = TransferLog()
        self._saved = []

    def _trip(self, what):
        self.log.blocked.append(what)
        msg = (f"device -> host transfer inside a sync-free loop: {what} (kbackends.sync_free region; "
               "keep the value on the device as a 0-d array, or move the read out of the loop)")
        raise TransferGuardError(msg)

    def __enter__(self):
        import array_api_strict


        if _GUARD_ACTIVE:
            msg = "a transfer_guard is already active"
            raise RuntimeError(msg)
        Array = type(array_api_strict.asarray(0.0))
        guard = self

        def patch(owner, name, wrapper):
            self._saved.append((owner, name, owner.__dict__.get(name, _MISSING)))
            setattr(owner, name, wrapper)

        for name in _CONVERSIONS:
            original = getattr(Array, name, None)

            def wrapper(x, *args, _name=name, _original=original, **kwargs):
                if in_sync_free_region():
                    guard._trip(f"{_name} of an array of shape {tuple(x.shape)} and dtype {x.dtype}")
                if _original is None:
                    msg = f"{type(x).__name__!r} object has no attribute {_name!r}"
                    raise AttributeError(msg)
                return _original(x, *args, **kwargs)

            patch(Array, name, wrapper)

        getitem = Array.__getitem__

        def guarded_getitem(x, key):
            if in_sync_free_region():
                keys = key if isinstance(key, tuple) else (key,)
                if any(isinstance(k, Array) and k.dtype == array_api_strict.bool for k in keys):
                    guard._trip("boolean-mask indexing (its shape is data-dependent)")
            return getitem(x, key)

        patch(Array, "__getitem__", guarded_getitem)
        for name in _DATA_SHAPED:
            original = getattr(array_api_strict, name)

            def shaped(*args, _name=name, _original=original, **kwargs):
                if in_sync_free_region():
                    guard._trip(f"array_api_strict.{_name} (its shape is data-dependent)")
                return _original(*args, **kwargs)

            patch(array_api_strict, name, shaped)

        original_asarray = array_api_strict.asarray

        def counted_asarray(obj, *args, **kwargs):
            if in_sync_free_region() and not isinstance(obj, Array) and not _inside_a_kernel():
                guard.log.uploads += 1
            return original_asarray(obj, *args, **kwargs)

        patch(array_api_strict, "asarray", counted_asarray)

        def to_numpy_hook(x, what):
            if in_sync_free_region():
                guard._trip(f"{what} of an array of shape {tuple(getattr(x, 'shape', ()))}")

        def deferred_hook(x):
            if in_sync_free_region():
                guard.log.deferred += 1

        def enter_hook():
            guard.log.regions += 1

        self._saved.append((_sync, "_on_enter", _sync._on_enter))
        _sync._on_enter = enter_hook
        self._saved.append((_xp_utils, "_transfer_hook", _xp_utils._transfer_hook))
        self._saved.append((_xp_utils, "_deferred_hook", _xp_utils._deferred_hook))
        _xp_utils._transfer_hook = to_numpy_hook
        _xp_utils._deferred_hook = deferred_hook
        _GUARD_ACTIVE.append(self)
        return self.log

    def __exit__(self, exc_type, exc, tb):
        for owner, name, value in reversed(self._saved):
            if value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
        self._saved.clear()
        _GUARD_ACTIVE.clear()
        if exc_type is None and self.log.blocked:
            msg = f"device -> host transfers inside a sync-free loop were swallowed: {self.log.blocked}"
            raise TransferGuardError(msg)
        return False


_MISSING = object()
