"""Gaussian random features that approximate the rbf kernel with fewer blocks (host code
that :func:`kbackends.random.omega_block` calls; no registered kernel).

Two ways of placing the standard-normal frequencies of a block, both pure
functions of ``(seed, block)`` like the Monte-Carlo draws of
:mod:`kbackends.random`, and both computed on the host in float64 NumPy (so every
backend gets the same numbers: the result is cast once and copied to the device):

``"orthogonal"`` (orthogonal random features, Yu et al., NeurIPS 2016)
    The block's Monte-Carlo Gaussian rows, in groups of ``n_dims`` rows, are
    orthogonalised (QR with a positive diagonal: the Gram-Schmidt of the rows)
    and each row keeps its own Gaussian norm. Gram-Schmidt depends only on the
    rows' directions, which are independent of their chi(n_dims) norms, so each
    row is still N(0, I) while the rows of a group are exactly orthogonal.
``"qmc"`` (quasi-Monte-Carlo features, Avron et al., JMLR 2016)
    Point ``block * n_features + row`` of a scrambled Halton sequence in
    ``n_dims + 1`` dimensions: the first coordinate is the phase, the others go
    through the normal inverse CDF. Each digit of each coordinate goes through
    its own random affine permutation of ``0..p-1`` (random linear digit
    scrambling), drawn from Philox words keyed by the seed, so the blocks
    ``0..B-1`` together are the first ``B * n_features`` points of one
    low-discrepancy sequence.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import ndtri

from ._core import MASK32, numba_constants, philox4x32_10

# Counter word 3 of the Philox calls that draw QMC digit permutations (the Monte-Carlo
# draws use it for the block's high half, which never reaches this value in practice
# and, where it did, would only share words, not features).
QMC_COUNTER = 0x51AC0DE5
_DIGIT_BITS = 53  # digits per coordinate: p**-K below float64's resolution


def orthogonal_rows(gaussian):
    """Rows of ``gaussian`` (n, d) orthogonalised in groups of ``d``, each keeping its norm.

    Parameters
    ----------
    gaussian : numpy array of shape (n, d), float64
        Independent N(0, 1) entries.

    Returns
    -------
    numpy array of shape (n, d), float64
        Row ``i`` is the Gram-Schmidt direction of rows ``d * (i // d)`` to ``i``
        times ``||gaussian[i]||``: marginally N(0, I), orthogonal within its group.
    """
    n, d = gaussian.shape
    full = n - n % d if d else 0
    out = np.empty_like(gaussian)
    if full:  # the whole groups in one stacked QR
        out[:full] = _orthogonalised(gaussian[:full].reshape(full // d, d, d)).reshape(full, d)
    if full < n:
        out[full:] = _orthogonalised(gaussian[None, full:])[0]
    return out


def _orthogonalised(groups):
    """Each group's (g, k, d) rows: Gram-Schmidt directions times the rows' own norms."""
    q, r = np.linalg.qr(np.swapaxes(groups, 1, 2))  # (g, d, k): each group's orthonormal directions
    signs = np.where(np.diagonal(r, axis1=1, axis2=2) < 0, -1.0, 1.0)  # the positive-diagonal factor
    return np.swapaxes(q * signs[:, None, :], 1, 2) * np.linalg.norm(groups, axis=2)[:, :, None]


def qmc_block(seed, block, n_features, n_dims):
    """Standard-normal frequencies and uniform phases of one QMC block.

    Parameters
    ----------
    seed, block : int in [0, 2**64)
    n_features, n_dims : int >= 0

    Returns
    -------
    omega : numpy array of shape (n_features, n_dims), float64, marginally N(0, I)
    phase : numpy array of shape (n_features,), float64, in (0, 2 pi)
        Points ``block * n_features + row`` (modulo 2**64) of the scrambled Halton
        sequence of ``seed``.
    """
    first = np.uint64((block * n_features) % 2**64)
    with np.errstate(over="ignore"):  # the index wraps modulo 2**64 by design
        index = first + np.arange(n_features, dtype=np.uint64)
    units = scrambled_halton(index, seed, n_dims + 1)
    return ndtri(units[:, 1:]), 2.0 * math.pi * units[:, 0]


def scrambled_halton(index, seed, n_coords):
    """Points ``index`` (uint64 array) of the scrambled Halton sequence of ``seed``, shape
    (len(index), n_coords), in the open cube (0, 1).

    Coordinate ``j`` is the radical inverse of the index in the ``j``-th prime ``p``
    with digit ``k`` mapped to ``(a_jk digit + b_jk) mod p`` (``a_jk`` in ``1..p-1``,
    ``b_jk`` in ``0..p-1``: a permutation, as ``p`` is prime) over the ``K_p`` digits
    that reach float64's resolution, plus half the last digit's weight.
    """
    bases = np.asarray(_primes(n_coords), dtype=np.uint64)
    digits = [_digits(int(p)) for p in bases]
    rest = np.repeat(index[:, None], n_coords, axis=1)
    value = np.zeros(rest.shape)
    weight = np.ones(n_coords)
    for k in range(max(digits, default=0)):
        m = sum(1 for n_k in digits if n_k > k)  # the coordinates still with digits: a prefix (small primes)
        p = bases[:m]
        a, b = _scrambles(seed, k, m)
        weight[:m] /= p
        scrambled = (a[:m] * (rest[:, :m] % p) + b[:m]) % p
        value[:, :m] += scrambled * weight[:m]
        rest[:, :m] //= p
    return value + 0.5 * weight


@functools.lru_cache(maxsize=256)
def _scrambles(seed, digit, n_coords):
    """The multipliers and shifts of digit ``digit`` of the first ``n_coords`` coordinates:
    Philox words keyed by ``seed`` at counter (coordinate, digit, 0, QMC_COUNTER)."""
    bases = np.asarray(_primes(n_coords), dtype=np.uint64)
    coords = np.arange(n_coords, dtype=np.uint64)
    w0, w1, _, _ = philox4x32_10(coords, np.uint64(digit), np.uint64(0), np.uint64(QMC_COUNTER),
                                 np.uint64(seed & MASK32), np.uint64(seed >> 32), numba_constants())
    return np.uint64(1) + w0 % (bases - np.uint64(1)), w1 % bases


def _digits(base):
    return math.ceil(_DIGIT_BITS * math.log(2) / math.log(base))


@functools.lru_cache(maxsize=16)
def _primes(count):
    """The first ``count`` primes, as a tuple."""
    if count <= 0:
        return ()
    limit = max(16, int(count * (math.log(count + 1) + math.log(math.log(count + 3)))) + 16)
    sieve = np.ones(limit, dtype=bool)
    sieve[:2] = False
    for p in range(2, math.isqrt(limit) + 1):
        if sieve[p]:
            sieve[p * p :: p] = False
    return tuple(int(p) for p in np.flatnonzero(sieve)[:count])
