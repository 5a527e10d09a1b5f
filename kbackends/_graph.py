"""Work captured once as a CUDA graph and replayed (CuPy), or run as it is elsewhere.

A graph replays its launches with the arguments and the memory they were captured
with: the captured work must read and write buffers that stay put between replays and
make no host round trip, and CuPy refuses cuBLAS and cuSOLVER calls under capture.
What the work allocates while it is captured comes from a memory pool of the graph's
own, kept with it, so no other work is handed that memory between replays.
"""

from __future__ import annotations

import warnings

from ._xp_utils import is_cupy_namespace


class CapturedGraph:
    """``body()`` run through a CUDA graph on CuPy, or called on other namespaces.

    The first :attr:`eager_runs` runs call ``body`` as it is (kernels compile and load
    outside the capture), the next captures it on a non-blocking stream and launches the
    graph, each later one launches it again, ordered after the caller's current
    stream's work and before what the caller queues next. Where the capture is
    refused (a cuBLAS call, a host transfer), a warning names why and every run
    calls ``body`` as it is.

    Parameters
    ----------
    body : callable
        No arguments; updates its buffers in place.
    xp : array namespace
    """

    eager_runs = 1  # runs called as they are before the capture (0: where the kernels are loaded already)

    def __init__(self, body, xp):
        self.body, self.on_device = body, is_cupy_namespace(xp)
        self.runs = 0
        self.graph = self.stream = self.pool = None
        self.refused = None  # why the capture failed, if it did

    def run(self):
        self.runs += 1
        if not self.on_device or self.runs <= self.eager_runs or self.refused is not None:
            self.body()
            return
        import cupy as cp  # only where the work is on CuPy (kbackends imports without it)

        caller = cp.cuda.get_current_stream()
        if self.graph is None:
            self.stream = cp.cuda.Stream(non_blocking=True)
            self.pool = cp.cuda.MemoryPool()
            self.stream.wait_event(caller.record())
            try:
                with cp.cuda.using_allocator(self.pool.malloc), self.stream:
                    self.stream.begin_capture(mode=cp.cuda.runtime.streamCaptureModeRelaxed)
                    try:
                        self.body()
                    finally:
                        graph = self.stream.end_capture()
            except Exception as exc:  # noqa: BLE001 - the work runs as it is; the warning says why
                self.refused = f"{type(exc).__name__}: {exc}"
                warnings.warn(f"the work could not be captured as a CUDA graph ({self.refused}); it runs uncaptured",
                              RuntimeWarning, stacklevel=2)
                self.body()
                return
            self.graph = graph
        self.stream.wait_event(caller.record())
        self.graph.launch(self.stream)
        caller.wait_event(self.stream.record())
