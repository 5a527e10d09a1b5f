"""Philox-4x32-10 and the maps from random words to random-feature draws.

Written once in plain Python on scalars and marked ``register_jitable``, so the
Numba CPU kernels (``_numba.py``) and the Numba-CUDA kernels (``_cuda.py``)
compile the very same functions, and ``_xp.py`` calls :func:`philox4x32_10`
on whole uint64 arrays. Words are carried in
``uint64`` and masked to 32 bits, because the 32x32->64 multiply is what
Philox needs and every target has 64-bit unsigned integers.

Reference: Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as
1, 2, 3" (SC 2011), the Philox-4x32 round with 10 rounds.
"""

import math

import numpy as np
from numba.extending import register_jitable

# Round multipliers and Weyl key increments of Philox-4x32 (Salmon et al. 2011).
PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9
PHILOX_W1 = 0xBB67AE85
MASK32 = 0xFFFFFFFF

# Counter word 1 value reserved for the phase draw of a row (omega uses the
# column-quad index there, which is always smaller).
PHASE_COUNTER = 0xFFFFFFFF

# The kernels the generator knows, with the integer codes the compiled targets take;
# published read-only as kbackends.random.KERNELS (the one table of kernel names).
KERNEL_CODES = {"rbf": 0, "laplacian": 1}

TWO_PI = 2.0 * math.pi
INV_2_32 = 1.0 / 4294967296.0


def numba_constants():
    """Philox constants typed ``uint64`` for the Numba targets (a plain int
    would make Numba promote unsigned arithmetic to float)."""
    return tuple(
        np.uint64(c) for c in (PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1, MASK32, 32)
    )


@register_jitable
def philox4x32_10(c0, c1, c2, c3, k0, k1, consts):
    """Ten Philox-4x32 rounds on counter ``(c0, c1, c2, c3)`` with key ``(k0, k1)``.

    ``consts = (M0, M1, W0, W1, MASK32, 32)`` in the caller's integer type, so the
    same body runs on Numba scalars and on uint64 arrays of any namespace.
    Returns the four 32-bit output words.
    """
    m0, m1, w0, w1, mask, shift = consts
    for _ in range(10):
        p0 = m0 * c0
        p1 = m1 * c2
        n0 = ((p1 >> shift) ^ c1 ^ k0) & mask
        n2 = ((p0 >> shift) ^ c3 ^ k1) & mask
        c1 = p1 & mask
        c3 = p0 & mask
        c0 = n0
        c2 = n2
        k0 = (k0 + w0) & mask
        k1 = (k1 + w1) & mask
    return c0, c1, c2, c3


@register_jitable
def word_to_open_unit(w):
    """Map a 32-bit word to a float64 in the open interval (0, 1)."""
    return (float(w) + 0.5) * INV_2_32


@register_jitable
def gaussian_pair(w0, w1):
    """Two independent N(0, 1) draws from two words (Box-Muller)."""
    radius = math.sqrt(-2.0 * math.log(word_to_open_unit(w0)))
    angle = TWO_PI * word_to_open_unit(w1)
    return radius * math.cos(angle), radius * math.sin(angle)


@register_jitable
def standard_cauchy(w):
    """A standard Cauchy draw from one word (inverse CDF)."""
    return math.tan(math.pi * (word_to_open_unit(w) - 0.5))


@register_jitable
def omega_quad(row, quad, key0, key1, block0, block1, kernel_code, consts):
    """Unscaled spectral draws for columns ``4*quad .. 4*quad+3`` of one row."""
    w0, w1, w2, w3 = philox4x32_10(row, quad, block0, block1, key0, key1, consts)
    if kernel_code == 0:
        a, b = gaussian_pair(w0, w1)
        c, d = gaussian_pair(w2, w3)
        return a, b, c, d
    return standard_cauchy(w0), standard_cauchy(w1), standard_cauchy(w2), standard_cauchy(w3)


@register_jitable
def store_quad(omega, row, quad, draws, scale):
    """Write a quad's draws, times ``scale``, into columns 4*quad.. of ``omega[row]``."""
    for t in range(4):
        col = 4 * quad + t
        if col < omega.shape[1]:
            omega[row, col] = scale * draws[t]


@register_jitable
def phase_of_row(row, key0, key1, block0, block1, phase_counter, consts):
    """The row's phase, uniform on [0, 2*pi)."""
    w0, _, _, _ = philox4x32_10(row, phase_counter, block0, block1, key0, key1, consts)
    return TWO_PI * word_to_open_unit(w0)


def fill_arguments(seed, block, kernel, scale, constants):
    """The scalar arguments of a ``_fill_omega`` kernel after ``(omega, phase)``: the
    64-bit seed and block split into uint32 halves (Philox's key and counter words),
    the kernel's code, the frequency scale and the constants; the Numba and CUDA
    launchers pass the same ones."""
    return (np.uint64(seed & 0xFFFFFFFF), np.uint64(seed >> 32), np.uint64(block & 0xFFFFFFFF),
            np.uint64(block >> 32), KERNEL_CODES[kernel], float(scale), constants)
