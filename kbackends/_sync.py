"""Sync-free regions: where an algorithm promises no device -> host transfer.

An iteration loop on a GPU runs at the device's pace only while the host keeps
queueing work; a ``float(x)``, ``bool(x)``, ``int(x)`` or ``to_numpy(x)`` of a
device array (and a boolean-mask index or ``nonzero``, whose output shape the
host must learn) waits for the queue to drain. The algorithms mark their loops
with :func:`sync_free`; it costs one context-variable write and checks nothing by
itself. :func:`kbackends.testing.transfer_guard` makes every device -> host
conversion of an ``array_api_strict`` array raise inside such a region, so the
promise is tested on the CPU.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from ._xp_utils import to_numpy
from . import _xp_utils

_REGION: ContextVar[bool] = ContextVar("kbackends_sync_free", default=False)
# Set by kbackends.testing.transfer_guard while it runs: counts the regions entered.
_on_enter = None


@contextmanager
def sync_free(active: bool = True):
    """Mark the enclosed code as free of device -> host transfers.

    Parameters
    ----------
    active : bool, default True
        ``sync_free(False)`` opens a documented hole inside a region (e.g. a user
        callback, which may read what it likes); regions nest.

    Notes
    -----
    Host -> device copies (``bk.asarray(rng.integers(...))``) are allowed: they
    queue behind the device's work without waiting for it. So are deferred
    reads started with :func:`to_host_async`.

    Examples
    --------
    >>> import kbackends
    >>> with kbackends.sync_free():
    ...     kbackends.in_sync_free_region()
    True
    >>> kbackends.in_sync_free_region()
    False
    """
    if active and _on_enter is not None:
        _on_enter()
    token = _REGION.set(bool(active))
    try:
        yield
    finally:
        _REGION.reset(token)


def in_sync_free_region() -> bool:
    """Whether the caller runs inside :func:`sync_free` (and not in a hole of it)."""
    return _REGION.get()


class HostValue:
    """A device array on its way to the host (see :func:`to_host_async`)."""

    __slots__ = ("_event", "_host")

    def __init__(self, host, event=None):
        self._host, self._event = host, event

    def get(self):
        """The host NumPy copy; waits for the copy (only) if it is still in flight."""
        if self._event is not None:
            self._event.synchronize()
            self._event = None
        return self._host


def to_host_async(x) -> HostValue:
    """Start copying a (small) array to the host without waiting for the device.

    On CuPy the copy is queued on the current stream into pinned host memory
    and :meth:`HostValue.get` waits for that copy's event only: read it an
    iteration later and the device is not stalled (the queue keeps the work
    enqueued since). Elsewhere (NumPy, array_api_strict) the copy is made at
    once, inside a ``sync_free(False)`` hole, so the transfer guard counts it
    as a deferred read rather than a blocking conversion.

    Parameters
    ----------
    x : array
        Of any backend; a NumPy array is returned as is.

    Returns
    -------
    HostValue
    """
    if type(x).__module__.startswith("cupy"):
        import cupy
        import cupyx

        out = cupyx.empty_pinned(x.shape, dtype=x.dtype)
        stream = cupy.cuda.get_current_stream()
        x.get(stream=stream, out=out, blocking=False)
        event = stream.record()
        return HostValue(out, event)

    hook = _xp_utils._deferred_hook
    if hook is not None:
        hook(x)
    with sync_free(False):
        return HostValue(to_numpy(x))
