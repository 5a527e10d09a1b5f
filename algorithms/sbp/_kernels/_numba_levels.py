"""Numba (cpu) water levels of SBP's general loop, warm-started from the previous iteration's.

The loop (``algorithms/sbp/_loop.py``: several classes, sample weights, a batch or no
bias) keeps one warm state per class, ``(K, WARM_STATE)`` float64 (zeros: the next
level is cold), and calls these every iteration in place of the cold kernels:

- ``sbp_levels``: the segmented level of the K classes' responses (no bias), plain or
  with widths (:func:`kbackends.kernel_tools.level_warm`);
- ``sbp_biased_levels``: each class's two-basin level and bias, plain
  (:func:`~kbackends.kernel_tools.biased_level_warm`) or with widths
  (:func:`~kbackends.kernel_tools.biased_level_weighted_warm`);
- ``sbp_levels_follow``: the bands moved with the responses after their update.

Each level is the sort-based reference's to rounding; a level the band cannot prove
comes from the cold selection with the cold kernel's seed (its value to the bit).
"""

import numpy as np
from numba import njit

from kbackends.kernel_tools import (
    biased_level_warm,
    biased_level_weighted_warm,
    level_warm,
    segment_follow,
    warm_bands,
    warm_follow,
)

from ._numba import band_move


@njit(cache=True)
def _levels(C, W, volumes, warm, band, band_w, out):
    for k in range(C.shape[0]):
        out[k] = level_warm(C[k], W, volumes[k], warm[k], band, band_w, k + 1)  # seed k + 1: the cold kernel's


def sbp_levels(C, volumes, warm, *, xp, weights=None):
    """The water levels of the rows of ``C`` (K, n), volumes ``volumes`` (K,) float64,
    widths ``weights`` (n,) float64 or None; ``warm`` (K, WARM_STATE) updated in place.
    In the dtype the cold kernels return: C's without widths, float64 with them."""
    n = C.shape[1]
    out = np.empty(C.shape[0], dtype=C.dtype if weights is None else np.float64)
    _levels(C, weights, volumes, warm, np.empty(n), np.empty(n), out)
    return out


@njit(cache=True)
def _biased(C, Y, volumes, warm, band_p, band_n, gammas, biases):
    for k in range(C.shape[0]):
        n_pos = 0
        for i in range(Y.shape[1]):
            n_pos += Y[k, i] > 0
        gammas[k], biases[k] = biased_level_warm(C[k], Y[k], n_pos, volumes[k], warm[k], band_p, band_n)


@njit(cache=True)
def _biased_weighted(C, Y, W, volumes, warm, band_p, band_n, cum_p, cum_n, gammas, biases):
    for k in range(C.shape[0]):
        gammas[k], biases[k] = biased_level_weighted_warm(C[k], Y[k], W, volumes[k], warm[k], band_p, band_n,
                                                          cum_p, cum_n)


def sbp_biased_levels(C, Y, volumes, warm, *, xp, weights=None):
    """Each class's two-basin level and bias, ``(gammas, biases)`` (K,) float64, of the
    responses ``C`` and labels ``Y`` (K, n), as :func:`sbp_levels`."""
    K, n = C.shape
    gammas, biases = np.empty(K), np.empty(K)
    if weights is None:
        _biased(C, Y, volumes, warm, np.empty(n), np.empty(n), gammas, biases)
    else:
        _biased_weighted(C, Y, weights, volumes, warm, np.empty(n), np.empty(n), np.empty(n), np.empty(n), gammas,
                         biases)
    return gammas, biases


@njit(cache=True)
def _follow_basins(c_old, c_new, y, state):
    """``warm_follow`` with the moves of the heights inside each basin's band."""
    t_pos, d_pos, t_neg, d_neg = warm_bands(state)
    n_p = s_p = n_n = s_n = 0.0
    for i in range(c_old.shape[0]):
        m_p, m_n, move = band_move(c_old[i], c_new[i], y[i] > 0, t_pos, d_pos, t_neg, d_neg)
        n_p += m_p
        s_p += m_p * move
        n_n += m_n
        s_n += m_n * move
    warm_follow(state, n_p, s_p, n_n, s_n)


@njit(cache=True)
def _follow(C_old, C_new, Y, warm, bias):
    for k in range(C_old.shape[0]):
        if bias:
            if warm[k, 4] != 0.0:  # a valid state (WARM_STATE's layout)
                _follow_basins(C_old[k], C_new[k], Y[k], warm[k])
        else:
            segment_follow(warm[k], C_old[k], C_new[k])


def sbp_levels_follow(C_old, C_new, Y, warm, *, xp, bias):
    """The warm states' bands moved with the responses from ``C_old`` to ``C_new``
    (K, n): per class (per basin with the bias), by the mean move of the heights
    inside the band."""
    _follow(C_old, C_new, Y, warm, bool(bias))
