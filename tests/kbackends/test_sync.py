"""``kbackends.to_host_async``: the CuPy branch (pinned buffer, a copy queued on the
current stream, an event that ``.get()`` waits on) against a stand-in CuPy that
records what is called and lands the copy only when its event is waited on, so no
GPU is needed; the NumPy branch returns at once."""

import sys
import types

import numpy as np
import pytest

import kbackends


class _Log(list):
    def names(self):
        return [call[0] for call in self]


def _fake_cupy(log):
    """A ``cupy`` + ``cupyx`` pair with just what ``to_host_async`` uses; ``x.get``
    queues the copy, ``event.synchronize`` runs what its stream queued before it."""

    class Event:
        def __init__(self, stream, upto):
            self.stream, self.upto = stream, upto

        def synchronize(self):
            log.append(("event.synchronize", self.stream))
            for copy in self.stream.queue[: self.upto]:
                copy()
            del self.stream.queue[: self.upto]

    class Stream:
        def __init__(self, name):
            self.name, self.queue = name, []

        def record(self):
            log.append(("stream.record", self))
            return Event(self, len(self.queue))

    current = Stream("current")

    class ndarray:  # noqa: N801  (CuPy's name)
        def __init__(self, data):
            self.data = np.asarray(data)
            self.shape, self.dtype = self.data.shape, self.data.dtype

        def get(self, stream=None, out=None, blocking=True):
            log.append(("get", stream, out, blocking))
            stream.queue.append(lambda: np.copyto(out, self.data))
            return out

    ndarray.__module__ = "cupy._core.core"  # what to_host_async recognises

    def empty_pinned(shape, dtype):
        out = np.full(shape, -1, dtype=dtype)
        log.append(("empty_pinned", out))
        return out

    cupy = types.ModuleType("cupy")
    cupy.ndarray = ndarray
    cupy.cuda = types.SimpleNamespace(get_current_stream=lambda: log.append(("get_current_stream",)) or current,
                                      Stream=Stream)
    cupyx = types.ModuleType("cupyx")
    cupyx.empty_pinned = empty_pinned
    return cupy, cupyx, current


def test_cupy_branch_copies_into_pinned_memory_on_the_current_stream(monkeypatch):
    log = _Log()
    cupy, cupyx, current = _fake_cupy(log)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    x = cupy.ndarray(np.array([1.5, -2.0, 3.25], dtype=np.float32))

    pending = kbackends.to_host_async(x)

    # a pinned buffer of x's shape and dtype, an async copy into it on the current
    # stream, then an event recorded behind the copy; nothing waited on yet
    assert log.names() == ["empty_pinned", "get_current_stream", "get", "stream.record"]
    pinned = log[0][1]
    assert pinned.shape == (3,) and pinned.dtype == np.float32
    _, stream, out, blocking = log[2]
    assert stream is current and out is pinned and blocking is False
    assert log[3][1] is current
    assert np.all(pinned == -1) and len(current.queue) == 1  # still in flight

    got = pending.get()  # waits for the event (which lands the copy), returns the pinned buffer
    assert log.names()[-1] == "event.synchronize" and log[-1][1] is current
    assert got is pinned
    np.testing.assert_array_equal(got, [1.5, -2.0, 3.25])
    n_calls = len(log)
    np.testing.assert_array_equal(pending.get(), got)
    assert len(log) == n_calls  # waited once only


def test_cupy_branch_event_does_not_wait_for_later_work(monkeypatch):
    """The event stands behind this copy only: work queued after it is not waited on."""
    log = _Log()
    cupy, cupyx, current = _fake_cupy(log)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    pending = kbackends.to_host_async(cupy.ndarray(np.float64(7.0)))
    later = []
    current.queue.append(lambda: later.append(1))  # the next iteration's work
    assert float(pending.get()) == 7.0
    assert later == [] and len(current.queue) == 1


def test_numpy_and_other_arrays_are_copied_at_once():
    a = np.arange(4.0)
    pending = kbackends.to_host_async(a)
    np.testing.assert_array_equal(pending.get(), a)
    xs = pytest.importorskip("array_api_strict")
    got = kbackends.to_host_async(xs.asarray([1.0, 2.0])).get()
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, [1.0, 2.0])
