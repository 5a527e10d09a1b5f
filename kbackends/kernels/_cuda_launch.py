"""Shared launch helpers for the Numba-CUDA kernels."""

from .._xp_utils import is_cupy_namespace


def launch_stream(xp):
    """The stream to launch on: CuPy's current stream for CuPy arrays, so our
    kernels order correctly with the user's CuPy work; the default stream
    otherwise (NumPy arrays under the CUDA simulator)."""
    if is_cupy_namespace(xp):
        import cupy
        from numba import cuda

        return cuda.external_stream(cupy.cuda.get_current_stream().ptr)
    return 0


def blocks_for(n, threads):
    """Number of blocks so that ``blocks * threads >= n`` (at least one)."""
    return max(1, (n + threads - 1) // threads)


def contiguous(xp, *arrays):
    """C-contiguous versions of ``arrays`` (copies only where needed): the
    simulator cannot transfer strided views, and coalesced loads want them."""
    return tuple(xp.ascontiguousarray(a) for a in arrays)
