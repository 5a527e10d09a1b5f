"""SBP's general loop on the cpu engine: the warm-started water levels (``sbp_levels``,
``sbp_biased_levels``: plain, segmented, with widths, two-basin) against the sort-based
reference on the responses of every iteration of a fit, exactly where every sum is
exact (dyadic heights and widths), and the fits against the cold kernels' fits."""

import numpy as np
import pytest
from numba import njit

from algorithms import sbp
from algorithms.sbp import _loop
from kbackends.kernel_tools import WARM_STATE, biased_level_weighted_warm, level_warm
from kbackends.testing import oracle

VOLUME_NU = 0.1


def _data(n, dtype, seed, classes):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(dtype)
    if classes == 2:
        y = np.where(X[:, 1] + 0.5 * rng.normal(size=n) > 0, 1, 0)
    else:
        y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=n), [-0.5, 0.5])
    return X, y, rng.random(n) + 0.2


def _recording(calls):
    """``_loop._warm_kernels`` whose level kernels record (inputs, outputs, answered by the band)."""
    make = _loop._warm_kernels

    def warm_kernels(bk):
        kernels = make(bk)

        def levels(C, volumes, warm, *, xp, weights=None):
            out = kernels.levels(C, volumes, warm, xp=xp, weights=weights)
            calls.append(("levels", C.copy(), None, volumes.copy(), weights, out.copy(), warm[:, 5].copy()))
            return out

        def biased(C, Y, volumes, warm, *, xp, weights=None):
            gammas, biases = kernels.biased(C, Y, volumes, warm, xp=xp, weights=weights)
            calls.append(("biased", C.copy(), Y, volumes.copy(), weights, (gammas.copy(), biases.copy()),
                          warm[:, 5].copy()))
            return gammas, biases
        return _loop._WarmKernels(levels, biased, kernels.follow)
    return warm_kernels


def _check_against_reference(call):
    """One call's levels (and biases) against the sort-based reference, to a few ulps
    of the water's scale (the band's sums run in another order)."""
    kind, C, Y, volumes, weights, got, _ = call
    K, n = C.shape
    C64 = C.astype(np.float64)
    for k in range(K):
        scale = volumes[k] + 8 * np.abs(C64[k]).max()
        atol = 16 * np.finfo(np.float64).eps * scale
        if kind == "biased":
            if weights is None:
                want = oracle("water_level_biased")(C64[k], Y[k].astype(np.float64), volumes[k], xp=np)
            else:
                want = oracle("water_level_biased_weighted")(C64[k], Y[k].astype(np.float64), weights, volumes[k],
                                                            xp=np)
            np.testing.assert_allclose(got[0][k], float(want[0]), rtol=0, atol=atol)
            np.testing.assert_allclose(got[1][k], float(want[1]), rtol=0, atol=atol)
        else:
            offsets = np.array([0, n])
            if weights is None:
                want = oracle("water_level")(C64[k], volumes[k:k + 1], offsets, xp=np)
            else:
                want = oracle("water_level_weighted")(C64[k], weights, volumes[k:k + 1], offsets, xp=np)
            # without widths the cold kernel's dtype: C's (a float32 level rounds once more)
            atol += 2 * np.finfo(got.dtype).eps * abs(float(want[0]))
            np.testing.assert_allclose(got[k], float(want[0]), rtol=0, atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_every_level_of_a_fit_matches_the_sort_based_reference(monkeypatch, dtype, classes, weighted, bias):
    X, y, w = _data(400, dtype, 0, classes)
    calls = []
    monkeypatch.setattr(_loop, "_warm_kernels", _recording(calls))
    kwargs = {"sample_weight": w} if weighted else {}
    if classes == 2 and bias and not weighted:
        kwargs["batch_size"] = 2  # the binary default runs sbp_run; a batch takes the general loop
    sbp.fit(X, y, nu=VOLUME_NU, kernel="rbf", n_iter=300, bias=bias, random_state=0, **kwargs)
    assert len(calls) == 300
    assert {call[0] for call in calls} == {"biased" if bias else "levels"}
    for call in calls:
        _check_against_reference(call)
    answered = np.mean([call[6].mean() for call in calls])
    assert answered > 0.8  # most levels came from the band


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_fits_equal_the_cold_kernels_fits(monkeypatch, classes, weighted, bias):
    """The warm levels are the cold kernels' here (to rounding that flips no draw): the
    same models to the bit."""
    X, y, w = _data(300, np.float64, 1, classes)
    kwargs = {"sample_weight": w} if weighted else {}
    if classes == 2 and bias and not weighted:
        kwargs["batch_size"] = 2
    warm = sbp.fit(X, y, nu=VOLUME_NU, n_iter=250, bias=bias, random_state=2, **kwargs)
    monkeypatch.setattr(_loop, "_warm_kernels", lambda bk: None)
    cold = sbp.fit(X, y, nu=VOLUME_NU, n_iter=250, bias=bias, random_state=2, **kwargs)
    np.testing.assert_array_equal(warm.coef, cold.coef)
    np.testing.assert_array_equal(warm.intercept, cold.intercept)


@njit
def _plain(c, w, volume, state, band, band_w):
    return level_warm(c, w, volume, state, band, band_w, 1)


@njit
def _biased_weighted(c, y, w, volume, state, scratch):
    return biased_level_weighted_warm(c, y, w, volume, state, scratch[0], scratch[1], scratch[2], scratch[3])


@pytest.mark.parametrize("weighted", [False, True])
def test_plain_levels_equal_the_reference_exactly_where_it_is_exact(weighted):
    """Heights on a grid of 1/1024 and widths in eighths (every sum exact in float64):
    the warm level is the reference's to the bit while the heights move."""
    rng = np.random.default_rng(5)
    n = 3000
    c = rng.integers(-4096, 4096, n) / 1024.0
    w = rng.integers(1, 17, n) / 8.0 if weighted else None
    state, band, band_w = np.zeros(WARM_STATE), np.empty(n), np.empty(n)
    offsets = np.array([0, n])
    answered = 0
    for _ in range(200):
        c = c + rng.integers(-8, 9, n) / 1024.0
        got = _plain(c, w, 37.5, state, band, band_w)
        if weighted:
            want = oracle("water_level_weighted")(c, w, np.array([37.5]), offsets, xp=np)
        else:
            want = oracle("water_level")(c, np.array([37.5]), offsets, xp=np)
        assert got == float(want[0])
        answered += state[5] == 1.0
    assert answered > 180


def test_biased_weighted_levels_equal_the_reference_exactly_where_it_is_exact():
    """The two-basin level with widths on dyadic heights and widths, to the bit."""
    rng = np.random.default_rng(6)
    n = 3000
    y = np.where(rng.random(n) < 0.35, 1.0, -1.0)
    c = rng.integers(-4096, 4096, n) / 1024.0
    w = rng.integers(1, 17, n) / 8.0
    state, scratch = np.zeros(WARM_STATE), np.empty((4, n))
    reference = oracle("water_level_biased_weighted")
    answered = 0
    for _ in range(200):
        c = c + rng.integers(-8, 9, n) / 1024.0
        got = _biased_weighted(c, y, w, 52.0, state, scratch)
        want = reference(c, y, w, 52.0, xp=np)
        assert got == (float(want[0]), float(want[1]))
        answered += state[5] == 1.0
    assert answered > 180
