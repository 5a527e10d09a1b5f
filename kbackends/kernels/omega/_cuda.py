"""Numba-CUDA generation of omega blocks: one thread per (row, column quad)."""

import numpy as np
from numba import cuda

from ._core import KERNEL_CODES, PHASE_COUNTER, numba_constants, omega_quad, phase_of_row, store_quad
from .._cuda_launch import launch_stream

_CONSTS = numba_constants()
_THREADS = 128


@cuda.jit
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
        grid = (n_threads + _THREADS - 1) // _THREADS
        _fill_omega[grid, _THREADS, launch_stream(xp)](
            omega,
            phase,
            np.uint64(seed & 0xFFFFFFFF),
            np.uint64(seed >> 32),
            np.uint64(block & 0xFFFFFFFF),
            np.uint64(block >> 32),
            KERNEL_CODES[kernel],
            float(scale),
            _CONSTS,
        )
    return omega, phase
