"""Numba CPU generation of omega blocks (one Philox call per row and column quad)."""

import numpy as np
from numba import njit

from ._core import PHASE_COUNTER, fill_arguments, numba_constants, omega_quad, phase_of_row, store_quad

_CONSTS = numba_constants()


# Serial: a block is small (4096 x 28 takes about a millisecond) and a parallel
# launch here would wake threads that BLAS may still be spinning on.
@njit(cache=True)
def _fill_omega(omega, phase, key0, key1, block0, block1, kernel_code, scale, consts):
    n_features, n_dims = omega.shape
    n_quads = (n_dims + 3) // 4
    phase_counter = np.uint64(PHASE_COUNTER)
    for row in range(n_features):
        r = np.uint64(row)
        for quad in range(n_quads):
            draws = omega_quad(r, np.uint64(quad), key0, key1, block0, block1, kernel_code, consts)
            store_quad(omega, row, quad, draws, scale)
        phase[row] = phase_of_row(r, key0, key1, block0, block1, phase_counter, consts)


def omega_block(*, xp, seed, block, n_features, n_dims, kernel, scale, dtype, device=None):
    omega = np.empty((n_features, n_dims), dtype=dtype)
    phase = np.empty((n_features,), dtype=dtype)
    _fill_omega(omega, phase, *fill_arguments(seed, block, kernel, scale, _CONSTS))
    return omega, phase
