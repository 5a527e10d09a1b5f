"""water_level: every implementation against a sort-based oracle written here,
on random, tied, constant and adversarial heights, volumes 0, tiny and huge."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from kbackends.ops import water_level
from kbackends.testing import host, kernel_module, make_backend
from kbackends.testing import oracle as xp_kernel


def oracle(c, v):
    """Float64 level by the definition: sorted prefix sums, first k that fits."""
    c = np.sort(np.asarray(c, dtype=np.float64))
    if v <= 0:
        return c[0]
    if len(c) > 500:  # the same rule, vectorised
        k = np.arange(1, len(c) + 1)
        level = (v + np.cumsum(c)) / k
        fits = np.r_[level[:-1] <= c[1:], True]
        return level[np.argmax(fits)]
    for k in range(1, len(c) + 1):
        level = (v + c[:k].sum()) / k
        if k == len(c) or level <= c[k]:
            return level
    raise AssertionError("unreachable")


def _check(backend, dtype_name, c, volumes, offsets):
    c = np.asarray(c, dtype=dtype_name)
    got = host(water_level(backend.asarray(c), backend.asarray(np.asarray(volumes, dtype=np.float64)),
                           segments=backend.asarray(np.asarray(offsets, dtype=np.int64))))
    expected = [oracle(c[offsets[s]:offsets[s + 1]], volumes[s]) for s in range(len(offsets) - 1)]
    scale = 1 + np.abs(c).max() + max(volumes)
    tol = (1e-5 if dtype_name == "float32" else 1e-12) * scale
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), expected, rtol=0, atol=tol)
    # the defining equation, on the returned levels
    for s, level in enumerate(np.asarray(got, dtype=np.float64)):
        seg = c[offsets[s]:offsets[s + 1]].astype(np.float64)
        np.testing.assert_allclose(np.maximum(level - seg, 0).sum(), volumes[s], rtol=1e-4, atol=tol * len(seg))


CASES = {
    "random": lambda rng, n: rng.standard_normal(n),
    "ties": lambda rng, n: rng.integers(0, 4, n).astype(float),
    "constant": lambda rng, n: np.full(n, 2.5),
    "sorted": lambda rng, n: np.arange(n, dtype=float),
    "reversed": lambda rng, n: np.arange(n, dtype=float)[::-1].copy(),
    "one outlier": lambda rng, n: np.r_[np.zeros(n - 1), 1e6],
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("volume", [0.0, 1e-9, 1.0, 1e9])
def test_matches_the_oracle(backend, dtype_name, case, volume):
    rng = np.random.default_rng(0)
    sizes = [1, 2, 7, 64]
    c = np.concatenate([CASES[case](rng, n) for n in sizes])
    offsets = np.r_[0, np.cumsum(sizes)]
    volumes = [volume * (s + 1) for s in range(len(sizes))]
    _check(backend, dtype_name, c, volumes, offsets)


def test_single_segment_returns_a_scalar():
    assert float(water_level(np.array([0.0, 1.0, 3.0]), 2.0)) == 1.5
    assert water_level(np.array([0.0, 1.0, 3.0]), 2.0).shape == ()


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(
        st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=64), min_size=1, max_size=40), min_size=1, max_size=5
    ),
    volume=st.one_of(st.just(0.0), st.floats(1e-12, 1e6)),
)
def test_property_cpu_and_reference(parts, volume):
    c = np.concatenate([np.asarray(p) for p in parts])
    offsets = np.r_[0, np.cumsum([len(p) for p in parts])]
    volumes = [volume] * len(parts)
    for name in ("cpu", "array_api_strict"):
        _check(make_backend(name), "float64", c, volumes, offsets)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"c": np.ones((2, 2))}, ValueError, "`c` must be 1-D"),
        ({"c": np.ones(3, dtype=np.int64)}, TypeError, "`c` must have a float32 or float64 dtype"),
        ({"volume": -1.0}, ValueError, "`volume` must be >= 0"),
        ({"c": np.array([1.0, np.nan])}, ValueError, "contains NaN"),
        ({"segments": np.array([0, 2, 1, 3])}, ValueError, "must rise strictly"),
        ({"segments": np.array([0, 3]), "volume": np.ones(2)}, ValueError, "one entry per segment"),
    ],
)
def test_bad_input(kwargs, error, match):
    args = {"c": np.array([0.0, 1.0, 2.0]), "volume": 1.0}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        water_level(**args)


# --- the two-basin problem (unregularised bias) --------------------------------------------


def _level_at(c, y, b, v):
    return oracle(c + y * b, v)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("volume", [0.0, 1e-9, 1.0, 50.0])
def test_biased_level_is_the_best_over_b_and_consistent(backend, case, volume):
    from kbackends.ops import water_level_biased

    rng = np.random.default_rng(1)
    c = CASES[case](rng, 23)
    y = np.where(rng.random(23) < 0.4, 1, -1)
    y[:2] = [1, -1]
    gamma, b = (float(v) for v in map(host, water_level_biased(backend.asarray(c), backend.asarray(y), volume)))
    scale = 1 + np.abs(c).max() + volume
    # (gamma, b) solve the defining equation at that b ...
    assert _level_at(c, y, b, volume) == pytest.approx(gamma, abs=1e-9 * scale)
    # ... and no other bias raises the level (the paper's optimality of b).
    span = np.abs(c).max() + volume + 1
    grid = np.linspace(-span, span, 2001)
    assert max(_level_at(c, y, g, volume) for g in grid) <= gamma + 1e-9 * scale


def test_biased_bad_input():
    from kbackends.ops import water_level_biased

    with pytest.raises(ValueError, match="both classes"):
        water_level_biased(np.array([1.0, 2.0]), np.array([1, 1]), 1.0)
    with pytest.raises(ValueError, match="only \\+1 and -1"):
        water_level_biased(np.array([1.0, 2.0]), np.array([1, 0]), 1.0)
    with pytest.raises(ValueError, match="same length"):
        water_level_biased(np.array([1.0, 2.0]), np.array([1, -1, 1]), 1.0)


def _biased_oracle(c, y, v):
    """(gamma, b) from the xp reference on NumPy: sort-based pair sums."""
    gamma, b = xp_kernel("water_level_biased")(np.asarray(c, dtype=np.float64), np.asarray(y), v, xp=np)
    return float(gamma), float(b)


def _check_biased(bk, dtype_name, c, y, volume):
    from kbackends.ops import water_level_biased

    c = np.asarray(c, dtype=dtype_name)
    gamma, b = (float(host(v)) for v in water_level_biased(bk.asarray(c), bk.asarray(y), volume))
    want_gamma, want_b = _biased_oracle(c, y, volume)
    scale = 1.0 + float(np.abs(c).max()) + volume  # a Python float: pytest >= 9.2 rejects NumPy tolerances
    tol = (1e-5 if dtype_name == "float32" else 1e-12) * scale
    assert gamma == pytest.approx(want_gamma, abs=tol)
    assert b == pytest.approx(want_b, abs=tol)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("volume", [0.0, 1e-9, 1.0, 1e9])
@pytest.mark.parametrize("sizes", [(1, 1), (1, 9), (37, 5), (64, 64)])
def test_biased_matches_the_sort_reference(backend, dtype_name, case, volume, sizes):
    rng = np.random.default_rng(2)
    n_pos, n_neg = sizes
    c = CASES[case](rng, n_pos + n_neg)
    y = rng.permutation(np.r_[np.ones(n_pos, dtype=np.int64), -np.ones(n_neg, dtype=np.int64)])
    _check_biased(backend, dtype_name, c, y, volume)


@settings(max_examples=80, deadline=None)
@given(
    c=st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=64), min_size=2, max_size=60),
    ties=st.booleans(),
    data=st.data(),
    volume=st.one_of(st.just(0.0), st.floats(1e-12, 1e6)),
)
def test_biased_property_cpu_and_reference(c, ties, data, volume):
    c = np.round(np.asarray(c) / 100.0) if ties else np.asarray(c)
    y = np.asarray(data.draw(st.lists(st.sampled_from([1, -1]), min_size=len(c), max_size=len(c))))
    y[0], y[1] = 1, -1
    for name in ("cpu", "array_api_strict"):
        _check_biased(make_backend(name), "float64", c, y, volume)


@pytest.mark.parametrize("case", list(CASES) + ["two clusters"])
@pytest.mark.parametrize("volume", [1e-9, 1.0, 300.0, 1e9])
@pytest.mark.parametrize("n", [4096, 50_001])
def test_large_segments_sampled_bracket(case, volume, n):
    """cpu, from 4096 values on: the level from a sampled bracket and one pass
    (and the full selection when the bracket misses, e.g. constant heights)."""
    rng = np.random.default_rng(5)
    if case == "two clusters":
        c = np.r_[np.zeros(n // 2), np.full(n - n // 2, 1e-3)] + 1e-12 * rng.standard_normal(n)
    else:
        c = CASES[case](rng, n)
    _check(make_backend("cpu"), "float64", np.r_[c, c[:7]], [volume, volume], [0, n, n + 7])


def test_threaded_segments(monkeypatch):
    """cpu: several large segments run in parallel (prange); same levels."""
    _numba = kernel_module("waterfill", "numba")
    monkeypatch.setattr(_numba, "_PARALLEL_FROM", 1000)
    rng = np.random.default_rng(6)
    sizes = [5000, 1, 4097, 300]
    c = rng.standard_normal(sum(sizes))
    _check(make_backend("cpu"), "float64", c, [1.0, 0.5, 50.0, 0.0], np.r_[0, np.cumsum(sizes)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_warm_band_pass_collects_each_basins_band_in_order(dtype):
    """The warm level's band pass: each basin's values inside its band, in row order,
    and the counts and sums below the bands, as a plain selection gives them, the band
    edges included."""
    warm = kernel_module("waterfill", "warm")
    band_pass = njit(warm._band_pass)
    rng = np.random.default_rng(5)
    n = 523
    c = rng.normal(size=n).astype(dtype)
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0).astype(dtype)
    t_pos, t_neg, d_pos, d_neg = 0.2, -0.3, 0.01, 0.03  # a few values in each band
    c[7], c[n - 1] = dtype(t_pos - d_pos), dtype(t_pos + d_pos)  # on the edges (as float32 rounds them)
    y[7] = y[n - 1] = 1.0
    band_p, band_n, sums = np.empty(n), np.empty(n), np.empty(4)
    m_p, m_n = band_pass(c, y, t_pos, t_neg, d_pos, d_neg, band_p, band_n, sums)
    v = c.astype(np.float64)
    for basin, band, m, t, d, below in [(y > 0, band_p, m_p, t_pos, d_pos, sums[:2]),
                                        (y <= 0, band_n, m_n, t_neg, d_neg, sums[2:])]:
        inside = basin & (v >= t - d) & (v <= t + d)
        np.testing.assert_array_equal(band[:m], v[inside])
        under = basin & (v < t - d)
        assert below[0] == under.sum()
        np.testing.assert_allclose(below[1], v[under].sum(), rtol=1e-12)
    assert 0 < m_p < n // 4 and 0 < m_n < n // 4
