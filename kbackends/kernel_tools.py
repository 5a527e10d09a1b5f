"""The kit for writing kernels outside kbackends: the launch, geometry and device helpers
the built-in kernels use, public for kernels registered with :func:`kbackends.register_kernel`.

A kernel family that serves one algorithm (or a third-party package) lives in its own
package, registers ``"package.module:function"`` strings with
:func:`kbackends.register_kernel` when that package is imported, and builds its
Numba / Numba-CUDA kernels from the names below, never from kbackends' private modules.
The contract of a registered kernel is ``fn(*arrays, xp, **static) -> result``.

Numba-CUDA (``launch_context`` to ``INF``)
    :func:`run_kernel` ``(kernel, grid, block, stream, *args)``
        ``kernel[grid, block, stream](*args)`` with little host time on a GPU (the
        arguments packed for ``cuda.core`` after the first launch of a signature),
        Numba's own launch under the simulator.
    :func:`launch_context` ``(xp)``
        Context yielding the ``stream`` for :func:`run_kernel`: CuPy's current device
        and stream for CuPy arrays, 0 for NumPy arrays (the simulator).
    :func:`contiguous` ``(xp, *arrays)``
        C-contiguous copies where needed (the simulator cannot transfer strided views).
    :func:`grid_1d`, :func:`grid_2d`, :func:`blocks_for`, :func:`row_passes`, :func:`chunk_rows`
        Launch geometry within the hardware limits (``MAX_THREADS_PER_BLOCK``,
        ``MAX_GRID_X``, ``MAX_GRID_YZ``), default blocks ``THREADS_1D`` and ``BLOCK_2D``;
        :func:`chunk_rows` splits rows so one chunk's scratch fits a byte budget.
    :func:`tree_sum` ``(part, tid, width, rows)``
        A device function: a block's sums of shared-memory rows in a fixed order
        (bit-for-bit repeatable), for one-block kernels.
    :func:`cos`, :func:`sincos`, ``ZERO``, ``ONE``, ``TWO``, ``HALF``, ``INF``
        Device math that stays in the argument's precision (float32 stays float32
        in the PTX) and float32 constants that do not promote float32 arithmetic.

Numba (cpu)
    :func:`prefetch` ``(array, index)``
        A software prefetch of ``array[index]`` (a row of a 2-D array) inside an
        ``@njit`` loop that visits rows in an order known in advance.
:func:`biased_level_warm` ``(c, y, n_pos, volume, state, band_p, band_n)``, ``WARM_STATE``
    Inside an ``@njit`` loop: the two-basin water level and bias (the
    ``water_level_biased`` op's answer) warm-started from the previous call's level,
    kept in ``state`` (float64, ``WARM_STATE`` entries, zeros before the first call);
    ``band_p``, ``band_n``: float64 scratch of c's length.
:func:`level_warm` ``(c, w, volume, state, band, band_w, seed)``, :func:`segment_follow` ``(state, c_old, c_new)``
    One segment's water level (the ``water_level`` op's, or ``water_level_weighted``'s
    with widths ``w``; ``w`` None: unit widths) warm-started the same way, the state in
    the same layout (one basin); ``seed``: the cold selection's. ``segment_follow``
    moves its band by the mean move of the heights inside it.
:func:`biased_level_weighted_warm` ``(c, y, w, volume, state, band_p, band_n, cum_p, cum_n)``
    The two-basin level and bias with widths (``water_level_biased_weighted``'s)
    warm-started the same way; four float64 scratch arrays of c's length.
:func:`warm_bands` ``(state)``, :func:`warm_follow` ``(state, n_pos, sum_pos, n_neg, sum_neg)``,
:func:`followed_surfaces` (the same arguments: the moved surfaces, not stored)
    The bands the next warm level starts from (each basin's surface and half-width),
    and their move with the heights: per basin, the count and the sum of the moves of
    the heights that were inside its band since the last level.
:func:`biased_level_warm_block` ``(c, y, n_pos, volume, state, band_p, band_n, sort_p, sort_n, red, cnt, share,
tid, width)``,
:func:`refit_warm_block` ``(c, y, n_pos, state, gamma, b, band_p, band_n, sort_p, sort_n, red, cnt, share, tid,
width)``
    CUDA device functions, for a kernel of one block that runs many iterations: the
    warm two-basin level on the block's threads (``(gamma, b, ok)``; ``ok`` False
    where the cold selection is needed, which the caller runs), and the bands refitted
    around a cold level. ``sort_p``, ``sort_n``: the kernel's shared float64 arrays of
    ``SHARED_BAND`` values, where the block sorts the bands.
:func:`band_pass_grid` ``(c, y, t_pos, t_neg, d_pos, d_neg, band_p, band_n, cnt, part, red, tid, width)``,
:func:`biased_level_after_pass` ``(c, y, n_pos, volume, state, band_p, band_n, cnt, part, n_parts, sort_p, sort_n,
red, cnt_block, share, tid, width)``
    The same level in two launches: the band pass spread over a grid (each block's sums
    below the bands into ``part``, the bands' values appended through ``cnt``), then one
    block sorting the bands and applying the rule (the block's own passes where they miss).
:func:`block_sums` ``(part, red, tid, width, a, b, c, d)``, :func:`parts_sum` ``(part, n_parts)``
    Four values of every thread summed over the block into ``part[4 * block:4 * block + 4]``,
    and those of ``n_parts`` blocks summed in block order.
:func:`fast_exp` ``(x)``
    Inside an ``@njit`` loop: float64 ``exp`` to 1 ulp that LLVM vectorises (the C
    library's is a call it cannot), for loops compiled with fast-math.
:func:`binary_rows` ``(X)``, :func:`popcount` ``(word)``
    Rows of zeros and ones (dense, or CSR holding only ones) packed as bits (``(bits,
    ones)``, or None where they are not binary or packing does not pay), and inside an ``@njit`` loop the set bits of a
    uint64: ``x_i . x_j`` of binary rows as popcounts of ``bits[i] & bits[j]``.

Each name is imported on first use, so ``import kbackends.kernel_tools`` imports
neither Numba-CUDA (absent on a cpu-only install) nor Numba: a cpu kernel module that
takes :func:`prefetch` does not pull in Numba-CUDA. Conventions the test suite checks
for every module registered with a ``cuda`` implementation (tests/kbackends/test_ptx.py):
``PTX_SIGNATURES = {kernel name: [Numba signature, ...]}`` naming each ``@cuda.jit``
kernel with a float32 and a float64 signature, ``PTX_FLOAT64_BY_DESIGN`` /
``PTX_FLOAT64_ONLY`` with a reason for a kernel that computes (or only exists) in float64.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for readers, IDEs and type checkers; at run time each name is imported on first use
    from .kernels._cuda_block import tree_sum
    from .kernels._cuda_launch import (
        BLOCK_2D,
        MAX_GRID_X,
        MAX_GRID_YZ,
        MAX_THREADS_PER_BLOCK,
        THREADS_1D,
        blocks_for,
        chunk_rows,
        contiguous,
        grid_1d,
        grid_2d,
        launch_context,
        row_passes,
        run_kernel,
    )
    from .kernels._cuda_math import HALF, INF, ONE, TWO, ZERO, cos, sincos
    from .kernels._numba_prefetch import prefetch
    from .kernels._numba_exp import fast_exp
    from .kernels._numba_bits import binary_rows, popcount
    from .kernels.waterfill._warm import WARM_STATE, biased_level_warm, followed_surfaces, warm_bands, warm_follow
    from .kernels.waterfill._warm_plain import level_warm, segment_follow
    from .kernels.waterfill._cuda_warm import (
        SHARED_BAND,
        band_pass_grid,
        biased_level_after_pass,
        block_sums,
        parts_sum,
        biased_level_warm_block,
        refit_warm_block,
    )
    from .kernels.waterfill._warm_widths import biased_level_weighted_warm

# name -> the private module that defines it (one object: Numba's overloads of cos /
# sincos are keyed on the function, so the re-exported name must be the same object).
_HOME = {
    **dict.fromkeys(
        ("run_kernel", "launch_context", "contiguous", "grid_1d", "grid_2d", "blocks_for", "row_passes",
         "chunk_rows", "THREADS_1D", "BLOCK_2D", "MAX_THREADS_PER_BLOCK", "MAX_GRID_X", "MAX_GRID_YZ"),
        "kbackends.kernels._cuda_launch"),
    "tree_sum": "kbackends.kernels._cuda_block",
    **dict.fromkeys(("cos", "sincos", "ZERO", "ONE", "TWO", "HALF", "INF"), "kbackends.kernels._cuda_math"),
    "prefetch": "kbackends.kernels._numba_prefetch",
    "fast_exp": "kbackends.kernels._numba_exp",
    **dict.fromkeys(("binary_rows", "popcount"), "kbackends.kernels._numba_bits"),
    **dict.fromkeys(("biased_level_warm", "followed_surfaces", "warm_bands", "warm_follow", "WARM_STATE"),
                    "kbackends.kernels.waterfill._warm"),
    **dict.fromkeys(("level_warm", "segment_follow"), "kbackends.kernels.waterfill._warm_plain"),
    "biased_level_weighted_warm": "kbackends.kernels.waterfill._warm_widths",
    **dict.fromkeys(("biased_level_warm_block", "refit_warm_block", "SHARED_BAND", "band_pass_grid",
                     "biased_level_after_pass", "block_sums", "parts_sum"),
                    "kbackends.kernels.waterfill._cuda_warm"),
}

__all__ = [
    "BLOCK_2D", "HALF", "INF", "SHARED_BAND", "WARM_STATE", "MAX_GRID_X", "MAX_GRID_YZ", "MAX_THREADS_PER_BLOCK",
    "ONE", "THREADS_1D", "TWO", "ZERO", "band_pass_grid", "binary_rows", "biased_level_after_pass",
    "biased_level_warm", "biased_level_warm_block", "biased_level_weighted_warm", "block_sums", "blocks_for",
    "chunk_rows", "contiguous", "cos", "fast_exp", "followed_surfaces", "grid_1d", "grid_2d", "launch_context",
    "level_warm", "parts_sum", "popcount", "prefetch", "row_passes", "run_kernel", "refit_warm_block",
    "segment_follow", "sincos", "tree_sum", "warm_bands", "warm_follow",
]


def __getattr__(name):
    home = _HOME.get(name)
    if home is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
