"""Shared launch helpers for the Numba-CUDA kernels: stream and device context,
launch geometry and row chunks.

The geometry functions are pure (integers in, integers out) so the hardware
limits can be checked on any machine: the CUDA simulator has no grid limits,
a real GPU rejects a launch past them.
"""

from contextlib import contextmanager

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


def launch_stream(xp):
    """The stream to launch on: CuPy's current stream for CuPy arrays, so our
    kernels order correctly with the user's CuPy work; the default stream
    otherwise (NumPy arrays under the CUDA simulator).

    Launch inside :func:`launch_context` where the device matters (it does on a
    machine with more than one GPU)."""
    if is_cupy_namespace(xp):
        import cupy
        from numba import cuda

        return cuda.external_stream(cupy.cuda.get_current_stream().ptr)
    return 0


@contextmanager
def launch_context(xp):
    """Context to launch in, yielding the stream.

    For CuPy arrays: Numba's context of CuPy's current device (Numba would
    otherwise launch on device 0 whatever device the arrays live on) and CuPy's
    current stream. For NumPy arrays (the simulator): stream 0, no context.
    """
    if is_cupy_namespace(xp):
        import cupy
        from numba import cuda

        with cuda.gpus[cupy.cuda.Device().id]:
            yield cuda.external_stream(cupy.cuda.get_current_stream().ptr)
    else:
        yield 0


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
