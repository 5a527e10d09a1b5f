"""Shared launch helpers for the Numba-CUDA kernels: stream and device context,
the launch itself (:func:`run_kernel`), launch geometry and row chunks.

The geometry functions are pure (integers in, integers out) so the hardware
limits can be checked on any machine: the CUDA simulator has no grid limits,
a real GPU rejects a launch past them.
"""

import importlib
import os
import warnings
from contextlib import contextmanager

import numpy as np

from .._xp_utils import is_cupy_namespace

# Hardware limits of every CUDA device from compute capability 3.0 on
# (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability").
MAX_THREADS_PER_BLOCK = 1024
MAX_GRID_X = 2**31 - 1
MAX_GRID_YZ = 65535

THREADS_1D = 128  # one thread per row: 4 warps a block
BLOCK_2D = (32, 8)  # x over columns (one warp reads 32 consecutive elements), y over rows

# Bytes of scratch one chunked op may hold at once (its (rows, m) product and
# what is derived from it): large enough that a chunk keeps an H100 busy for
# well over the host's launch overhead (16,384 rows of 4,096 float32 features),
# small enough to leave the device's memory to the data. Read at call time, so
# a test can shrink it to cover several chunks on small data.
CHUNK_BYTES = 1 << 28

# Dense rows of at most 32 values: the random-feature products fused with their
# cos / sin and sums (rff._cuda_fused), no (rows, m) product in device memory;
# False: cuBLAS's product, then the epilogue kernels. Read at call time.
FUSED_PRODUCTS = True


class DeviceStream:
    """Where a CuPy launch goes: CuPy's current device and stream (the stream's
    handle). :func:`launch_context` yields one for CuPy arrays, 0 for NumPy
    arrays under the simulator."""

    __slots__ = ("device", "ptr")

    def __init__(self, device, ptr):
        self.device = device
        self.ptr = ptr


@contextmanager
def launch_context(xp):
    """Context to launch in, yielding the stream for :func:`run_kernel`.

    For CuPy arrays: a :class:`DeviceStream` of CuPy's current device and stream,
    so our kernels order correctly with the user's CuPy work and run on the
    device the arrays live on (Numba alone would launch on device 0 on a machine
    with several GPUs). For NumPy arrays (the simulator): stream 0.
    """
    if is_cupy_namespace(xp):
        import cupy

        yield DeviceStream(cupy.cuda.Device().id, cupy.cuda.get_current_stream().ptr)
    else:
        yield 0


# Launches through cuda.core (the fast path) unless KBACKENDS_FAST_LAUNCH=0: the
# switch is there to compare the two paths on a GPU, and as a way around a fault.
FAST_LAUNCH = os.environ.get("KBACKENDS_FAST_LAUNCH", "1") != "0"
launch_counts = {"fast": 0, "numba": 0}  # launches by path, for tests and gpu-report

_SCALARS = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
            np.float32, np.float64)
_compiled = {}  # (kernel, device, argument key) -> cuda.core Kernel, or None: Numba's path
_configs = {}  # (grid, block) -> cuda.core LaunchConfig
_streams = {}  # stream handle -> cuda.core Stream
_cupy_ndarray = None


def run_kernel(kernel, grid, block, stream, *args):
    """``kernel[grid, block, stream](*args)``, with little host time on a GPU.

    Numba-CUDA types every argument anew at each launch (through DLPack for a
    CuPy array): 0.3-0.6 ms of host time a launch on an H100's host, where the
    device work of a step is tens of microseconds (docs/benchmarks.md, "GPU").
    The first launch of a kernel with an argument signature (dtypes, ranks,
    scalar types) on a device goes through Numba, which types and compiles it;
    the compiled kernel is kept, and later launches with the same signature pack
    the arguments as Numba's calling convention lays them out (an array: its
    meminfo and parent, both null, size, itemsize, data pointer, shape and
    strides; a scalar: its own type) and launch through ``cuda.core.launch``.
    Anything else (a non-contiguous array, an argument type the packing does not
    know, the simulator, ``KBACKENDS_FAST_LAUNCH=0``) launches through Numba.
    """
    if not isinstance(stream, DeviceStream):  # NumPy arrays: the simulator
        kernel[grid, block, stream](*args)
        launch_counts["numba"] += 1
        return
    if FAST_LAUNCH and core_api() is not None:
        params, key = pack_arguments(args, _array_type())
        if key is not None:
            handle = _compiled.get((kernel, stream.device, key), False)
            if handle is False:
                handle = _compile(kernel, stream.device, key, args)
            if handle is not None:
                _launch_core(handle, grid, block, stream.ptr, params)
                launch_counts["fast"] += 1
                return
    _launch_numba(kernel, grid, block, stream, args)
    launch_counts["numba"] += 1


def _launch_numba(kernel, grid, block, stream, args):
    from numba import cuda

    with cuda.gpus[stream.device]:
        kernel[grid, block, cuda.external_stream(stream.ptr)](*args)


def _array_type():
    global _cupy_ndarray
    if _cupy_ndarray is None:
        import cupy

        _cupy_ndarray = cupy.ndarray
    return _cupy_ndarray


def pack_arguments(args, array_type):
    """Kernel parameters in Numba's calling convention, and the key of their types.

    Returns ``(params, key)``; ``key`` is None where an argument is not one the
    fast path packs (then Numba launches it). ``array_type`` arrays must be
    C-contiguous and have CuPy's attributes (``data.ptr``, ``shape``,
    ``strides`` in bytes, ``size``, ``itemsize``, ``flags``).
    """
    params, key = [], []
    for a in args:
        t = type(a)
        if isinstance(a, array_type):
            if not a.flags.c_contiguous:
                return None, None
            key.append((a.dtype.char, a.ndim))
            params += (0, 0, a.size, a.itemsize, a.data.ptr, *a.shape, *a.strides)
        elif t is int:
            if not -(1 << 63) <= a < (1 << 63):
                return None, None
            key.append(int)
            params.append(np.int64(a))
        elif t is float:
            key.append(float)
            params.append(a)  # cuda.core passes a Python float as a double
        elif t is bool:
            key.append(bool)
            params.append(np.bool_(a))  # cuda.core would pass a Python bool as an int
        elif t in _SCALARS:
            key.append(t)
            params.append(a)
        elif t is tuple:  # Numba passes a tuple's members one after another
            inner, inner_key = pack_arguments(a, array_type)
            if inner_key is None:
                return None, None
            key.append((tuple, inner_key))
            params += inner
        else:
            return None, None
    return params, tuple(key)


def expected_numba_type(k):
    """The Numba type Numba gives an argument of key ``k`` (see :func:`pack_arguments`)."""
    from numba.cuda import types
    from numba.cuda.np.numpy_support import from_dtype

    if isinstance(k, tuple) and k[0] is tuple:
        return types.BaseTuple.from_types([expected_numba_type(m) for m in k[1]])
    if isinstance(k, tuple):
        return types.Array(from_dtype(np.dtype(k[0])), k[1], "C")
    return {int: types.int64, float: types.float64, bool: types.boolean}.get(k) or from_dtype(np.dtype(k))


def _compile(kernel, device, key, args):
    """The cuda.core kernel of ``kernel`` for the arguments' types on ``device``,
    compiled (or loaded from Numba's cache) as Numba would at a launch; None
    (Numba launches these arguments from now on) where Numba types an argument
    otherwise than :func:`pack_arguments` assumed, or the kernel is not
    reachable through Numba's internals of this version."""
    from numba import cuda

    handle = None
    with cuda.gpus[device]:
        argtypes = tuple(kernel.typeof_pyval(a) for a in args)
        compiled = kernel.compile(argtypes)
        try:
            if all(t == expected_numba_type(k) for t, k in zip(argtypes, key)):
                handle = compiled._codelibrary.get_cufunc().kernel
        except (ImportError, AttributeError):  # another numba-cuda's internals: Numba's own launch
            handle = None
    _compiled[(kernel, device, key)] = handle
    return handle


# cuda.core's (LaunchConfig, Stream, launch), found by core_api(); False: not looked up yet.
_core = False
core_source = None  # the module core_api() found them in, or why it found none
_CORE_MODULES = ("cuda.core", "cuda.core.experimental")  # released cuda-core, then its older home


def core_api():
    """cuda.core's ``(LaunchConfig, Stream, launch)``: from ``cuda.core``, or from
    ``cuda.core.experimental`` where an older cuda-core keeps them; None where neither
    has them, after one RuntimeWarning naming why (every launch then goes through
    Numba, whose host time per launch is several times the fast path's)."""
    global _core, core_source
    if _core is False:
        _core, reasons = None, []
        for name in _CORE_MODULES:
            try:
                module = importlib.import_module(name)
                _core = (module.LaunchConfig, module.Stream, module.launch)
                core_source = name
                break
            except (ImportError, AttributeError) as exc:
                reasons.append(f"{name}: {type(exc).__name__}: {exc}")
        if _core is None:
            core_source = "none: " + "; ".join(reasons)
            warnings.warn("kbackends launches its kernels through Numba: cuda.core's launch is not importable ("
                          + "; ".join(reasons) + ")", RuntimeWarning, stacklevel=3)
    return _core


def _launch_core(handle, grid, block, stream_ptr, params):
    LaunchConfig, Stream, core_launch = _core
    config = _configs.get((grid, block))
    if config is None:
        if len(_configs) > 4096:  # grids follow the data's sizes: keep the cache bounded
            _configs.clear()
        config = _configs[(grid, block)] = LaunchConfig(grid=grid, block=block, shmem_size=0)
    stream = _streams.get(stream_ptr)
    if stream is None:
        if len(_streams) > 64:
            _streams.clear()
        stream = _streams[stream_ptr] = Stream.from_handle(stream_ptr)
    core_launch(stream, config, handle, *params)


def _check_count(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        msg = f"`{name}` must be an integer >= 0, got {value!r}"
        raise ValueError(msg)


def _check_block(block):
    threads = 1
    for b in block:
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            msg = f"`block` must hold integers >= 1, got {block!r}"
            raise ValueError(msg)
        threads *= b
    if threads > MAX_THREADS_PER_BLOCK:
        msg = f"`block` {block!r} has {threads} threads, more than the {MAX_THREADS_PER_BLOCK} a block may have"
        raise ValueError(msg)


def blocks_for(n, threads):
    """Number of blocks so that ``blocks * threads >= n`` (at least one)."""
    return max(1, (n + threads - 1) // threads)


def grid_1d(n, threads=THREADS_1D):
    """Launch geometry ``(blocks, threads)`` for one thread per item of ``n``.

    Parameters
    ----------
    n : int >= 0
        Items (rows); ``n = 0`` still gives one block (callers skip empty launches).
    threads : int in [1, 1024]

    Returns
    -------
    (int, int)
        ``blocks * threads >= n`` and ``blocks <= 2**31 - 1``.

    Raises
    ------
    ValueError
        If ``n`` needs more than ``2**31 - 1`` blocks (over 2.7e11 rows at 128 threads).
    """
    _check_count("n", n)
    _check_block((threads,))
    blocks = blocks_for(n, threads)
    if blocks > MAX_GRID_X:
        msg = f"`n` = {n} needs {blocks} blocks of {threads} threads, more than gridDim.x <= {MAX_GRID_X}"
        raise ValueError(msg)
    return blocks, threads


def grid_2d(n_rows, n_cols, block=BLOCK_2D):
    """Launch geometry ``((grid_x, grid_y), block)`` for a (rows, columns) array.

    x runs over columns (consecutive threads of a warp touch consecutive
    elements of a row-major array: coalesced), y over rows. ``grid_y`` is
    capped at 65,535, so the kernel must stride over rows
    (``for i in range(y, n_rows, gridsize_y)``): that is what lets any number
    of rows launch (gridDim.y would overflow from 65,535 x block_y + 1 rows).

    Parameters
    ----------
    n_rows, n_cols : int >= 0
    block : (int, int), at most 1024 threads

    Returns
    -------
    ((int, int), (int, int))
        ``grid_x * block_x >= n_cols``, ``1 <= grid_y <= 65535``.
    """
    _check_count("n_rows", n_rows)
    _check_count("n_cols", n_cols)
    _check_block(block)
    bx, by = block
    gx = blocks_for(n_cols, bx)
    if gx > MAX_GRID_X:
        msg = f"`n_cols` = {n_cols} needs {gx} blocks of {bx}, more than gridDim.x <= {MAX_GRID_X}"
        raise ValueError(msg)
    gy = min(MAX_GRID_YZ, blocks_for(n_rows, by))
    return (gx, gy), (bx, by)


def row_passes(n_rows, grid_y, block_y):
    """Iterations of the row-stride loop of a :func:`grid_2d` kernel: the rows
    one thread handles (at most), ``ceil(n_rows / (grid_y * block_y))``."""
    return blocks_for(n_rows, grid_y * block_y) if n_rows else 0


def chunk_rows(n_rows, bytes_per_row, budget=None):
    """Rows per chunk so that one chunk's scratch fits ``budget`` bytes.

    Parameters
    ----------
    n_rows : int >= 0
    bytes_per_row : int >= 0
        Scratch bytes one row costs (e.g. ``m * itemsize`` for an (rows, m) product).
    budget : int, optional
        Defaults to :data:`CHUNK_BYTES` (read at call time).

    Returns
    -------
    int
        In ``[1, max(n_rows, 1)]``: at least one row even if it exceeds the budget.
    """
    _check_count("n_rows", n_rows)
    _check_count("bytes_per_row", bytes_per_row)
    budget = CHUNK_BYTES if budget is None else budget
    return max(1, min(max(n_rows, 1), budget // max(1, bytes_per_row)))


def contiguous(xp, *arrays):
    """C-contiguous versions of ``arrays`` (copies only where needed): the
    simulator cannot transfer strided views, and coalesced loads want them."""
    return tuple(xp.ascontiguousarray(a) for a in arrays)
