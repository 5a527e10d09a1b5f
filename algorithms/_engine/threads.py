"""One BLAS thread where many small products run: the single-threaded-BLAS guard
shared by the engine and SBP."""

from __future__ import annotations

import contextlib


def single_threaded_blas(bk, when=True):
    """A context that limits BLAS to one thread on the cpu backend when ``when`` holds
    (elsewhere, and when it does not, it changes nothing).

    Waking BLAS threads for each of many small products costs more than it saves: the
    engine's Numba kernels use every core and spin-waiting BLAS threads between its
    small GEMMs steal them (measured: a DSG fit on ijcnn1 took 6.1 s with threaded
    OpenBLAS, 3.8 s with one BLAS thread); on a loaded machine a descheduled thread
    stalls every join (SBP: 26 ms vs 9 ms per letter iteration).
    """
    if bk.name != "cpu" or not when:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")
