"""A process fit to run Numba-CUDA kernels under the simulator (``NUMBA_ENABLE_CUDASIM=1``)."""

from __future__ import annotations

import sys
import threading

import numpy as np

from ._oracle import SIMULATOR_SWITCH_INTERVAL

_SHARED_LOCK = threading.Lock()


def prepare_simulator():
    """Set this process up to run kernels under the simulator; call it once, early (the
    test suite's conftest, the GPU tools' dry runs). Idempotent.

    - ``sys.setswitchinterval(SIMULATOR_SWITCH_INTERVAL)``: the simulator's block manager
      polls the block's threads holding the GIL; a short interval runs launches faster.
    - The simulator's shared arrays looked up under a lock. numba-cuda's simulator
      (``numba.cuda.simulator.kernelapi.FakeCUDAShared.array``) keeps a block's shared
      arrays in a dict keyed by the line that declares them, read and then filled with
      no lock: two threads of a block that switch between the read and the insert get
      two different arrays, and a reduction then reads entries no thread wrote. Seen as
      a water level that changed between calls on the same values, one call in three at
      a 10 us switch interval, and as rare failures of simulator tests on a loaded
      machine. Here the lookup and the insert run under one lock (keyed, as before, by
      the declaring line: the caller's frame, one level up).
    """
    sys.setswitchinterval(SIMULATOR_SWITCH_INTERVAL)
    from numba.cuda.simulator import kernelapi  # the simulator's own module: only where it runs

    shared = kernelapi.FakeCUDAShared
    if getattr(shared.array, "locked_lookup", False):
        return
    unlocked = shared.array

    def array(self, shape, dtype, alignment=None):
        if alignment is not None or shape == 0:  # refused, or the one dynamic buffer: no lookup
            return unlocked(self, shape, dtype, alignment)
        if isinstance(dtype, kernelapi.types.Type):
            dtype = kernelapi.numpy_support.as_dtype(dtype)
        frame = sys._getframe(1)  # the kernel's line that declares the array
        key = (frame.f_code.co_filename, frame.f_lineno)
        with _SHARED_LOCK:
            found = self._allocations.get(key)
            if found is None:
                found = self._allocations[key] = np.empty(shape, dtype)
        return found

    array.locked_lookup = True
    shared.array = array
