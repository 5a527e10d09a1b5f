"""Numba-CUDA generation of omega blocks: one thread per (row, column quad).

The draws are computed in float64 whatever the output dtype and rounded once
at the store, so a float32 block is the float64 block rounded, on every
backend (Box-Muller and the Cauchy tangent in float32 would give other
bits). This kernel therefore keeps float64 instructions in its float32
instantiation by design (``PTX_FLOAT64_BY_DESIGN``); it runs once per omega
block, not per iteration.
"""

import numpy as np
from numba import cuda

from ._core import PHASE_COUNTER, fill_arguments, numba_constants, omega_quad, phase_of_row, store_quad
from .. import _cuda_launch as launch

_CONSTS = numba_constants()

_FILL_SIG = "void({t}[:, ::1], {t}[::1], uint64, uint64, uint64, uint64, int64, float64, UniTuple(uint64, 6))"
PTX_SIGNATURES = {"_fill_omega": [_FILL_SIG.format(t=t) for t in ("float32", "float64")]}
PTX_FLOAT64_BY_DESIGN = {"_fill_omega": "draws in float64, rounded once at the store (module docstring)"}


@cuda.jit(cache=True)
def _fill_omega(omega, phase, key0, key1, block0, block1, kernel_code, scale, consts):
    n_features, n_dims = omega.shape
    n_quads = (n_dims + 3) // 4
    tid = cuda.grid(1)
    if tid >= n_features * (n_quads + 1):
        return
    row = tid // (n_quads + 1)
    quad = tid - row * (n_quads + 1)
    r = np.uint64(row)
    if quad == n_quads:  # the last thread of a row draws its phase
        phase[row] = phase_of_row(r, key0, key1, block0, block1, np.uint64(PHASE_COUNTER), consts)
        return
    draws = omega_quad(r, np.uint64(quad), key0, key1, block0, block1, kernel_code, consts)
    store_quad(omega, row, quad, draws, scale)


def omega_block(*, xp, seed, block, n_features, n_dims, kernel, scale, dtype, device=None):
    omega = xp.empty((n_features, n_dims), dtype=dtype)
    phase = xp.empty((n_features,), dtype=dtype)
    n_threads = n_features * ((n_dims + 3) // 4 + 1)
    if n_threads:
        blocks, threads = launch.grid_1d(n_threads)
        with launch.launch_context(xp) as stream:
            launch.run_kernel(_fill_omega, blocks, threads, stream,
                              omega, phase, *fill_arguments(seed, block, kernel, scale, _CONSTS))
    return omega, phase
