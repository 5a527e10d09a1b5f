"""Counter-based random features: known answers, cross-backend identity, distributions, cache."""

import numpy as np
import pytest
from scipy import stats

from kbackends.random import cache_info, clear_cache, omega_block, omega_blocks, set_cache_budget
from kbackends.testing import host, kernel_module, make_backend


@pytest.mark.parametrize(
    "counter_key, expected",
    [
        # Known-answer vectors of Philox-4x32-10 (Random123's kat_vectors).
        ((0,) * 6, (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 6, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ],
)
def test_philox_known_answers(counter_key, expected):
    core = kernel_module("omega", "core")
    words = core.philox4x32_10(*(np.uint64(v) for v in counter_key), core.numba_constants())
    assert tuple(int(w) for w in words) == expected


SHAPES = [(0, 3), (1, 1), (5, 7), (33, 4), (70, 9)]


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("n_features, n_dims", SHAPES)
def test_blocks_match_the_xp_reference_on_every_backend(backend, dtype_name, kernel, n_features, n_dims):
    clear_cache()
    reference = make_backend("array_api_strict")
    blocks = [7, 0, 2**40 + 1, 3]  # asked in no particular order
    for block in blocks:
        omega, phase = omega_block(
            12345, block, n_features, n_dims, kernel=kernel, gamma=0.7, dtype=dtype_name, backend=backend
        )
        ref_omega, ref_phase = omega_block(
            12345, block, n_features, n_dims, kernel=kernel, gamma=0.7, dtype=dtype_name, backend=reference
        )
        assert omega.shape == (n_features, n_dims) and phase.shape == (n_features,)
        assert str(host(omega).dtype) == dtype_name
        ref_omega = np.asarray(host(ref_omega), dtype=np.float64)
        # Same words, float64 transforms that differ by at most an ulp, one cast.
        tol = 1e-6 if dtype_name == "float32" else 1e-13
        scale = np.maximum(1.0, np.abs(ref_omega))  # Cauchy draws can be huge: relative there
        assert np.all(np.abs(host(omega) - ref_omega) <= tol * scale)
        np.testing.assert_allclose(host(phase), host(ref_phase), rtol=0, atol=tol * 7)


def test_a_block_depends_only_on_seed_and_block():
    clear_cache()
    a, pa = omega_block(1, 5, 16, 3)
    omega_block(1, 4, 16, 3)
    clear_cache()
    b, pb = omega_block(1, 5, 16, 3)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(pa, pb)
    c, _ = omega_block(1, 6, 16, 3)
    d, _ = omega_block(2, 5, 16, 3)
    assert not np.allclose(a, c) and not np.allclose(a, d)


def test_rows_of_a_smaller_block_are_a_prefix():
    """Row r of a block is the same whatever n_features is asked (counter = row)."""
    big, pbig = omega_block(3, 1, 40, 6)
    small, psmall = omega_block(3, 1, 10, 6)
    np.testing.assert_array_equal(big[:10], small)
    np.testing.assert_array_equal(pbig[:10], psmall)


def test_rbf_draws_are_normal_with_variance_two_gamma():
    gamma = 0.3
    omega, phase = omega_block(0, 0, 4000, 5, gamma=gamma)
    z = omega.ravel() / np.sqrt(2 * gamma)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert stats.kstest(phase / (2 * np.pi), "uniform").pvalue > 1e-3
    # Columns are not correlated (each quad's 4 words are independent).
    corr = np.corrcoef(omega.T)
    assert np.abs(corr - np.eye(5)).max() < 0.06


def test_laplacian_draws_are_cauchy_with_scale_gamma():
    gamma = 2.0
    omega, _ = omega_block(0, 0, 4000, 3, kernel="laplacian", gamma=gamma)
    assert stats.kstest(omega.ravel() / gamma, "cauchy").pvalue > 1e-3


def test_cache_keeps_to_its_byte_budget():
    clear_cache()
    set_cache_budget(3 * 100 * 9 * 8)  # room for three 100 x (8 + 1) float64 blocks
    try:
        first = omega_block(9, 0, 100, 8)
        again = omega_block(9, 0, 100, 8)
        assert again[0] is first[0]  # served from the cache
        for block in range(1, 6):
            omega_block(9, block, 100, 8)
        info = cache_info()["cpu"]
        assert info["blocks"] == 3
        assert info["nbytes"] <= info["budget"]
        refreshed = omega_block(9, 0, 100, 8)  # evicted: regenerated, identical
        assert refreshed[0] is not first[0]
        np.testing.assert_array_equal(refreshed[0], first[0])
        set_cache_budget(0)
        assert cache_info()["cpu"]["blocks"] == 0
    finally:
        set_cache_budget(256 * 2**20)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"seed": -1}, ValueError, "`seed` must be in"),
        ({"seed": 2**64}, ValueError, "`seed` must be in"),
        ({"seed": 1.5}, TypeError, "`seed` must be an integer"),
        ({"block": -2}, ValueError, "`block` must be in"),
        ({"n_features": -1}, ValueError, "`n_features` must be in"),
        ({"kernel": "poly"}, ValueError, "`kernel` must be one of"),
        ({"gamma": 0.0}, ValueError, "`gamma` must be a positive"),
        ({"gamma": float("nan")}, ValueError, "`gamma` must be a positive"),
        ({"dtype": "int32"}, TypeError, "`dtype` must be float32 or float64"),
    ],
)
def test_bad_arguments_are_rejected(kwargs, error, match):
    args = {"seed": 0, "block": 0, "n_features": 4, "n_dims": 2}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        omega_block(**args)


def test_default_dtype_is_float64_on_cpu():
    omega, phase = omega_block(0, 0, 2, 2)
    assert omega.dtype == np.float64 and phase.dtype == np.float64


def test_a_range_of_blocks_is_the_blocks_stacked(backend, dtype_name):
    clear_cache()
    omega_block(5, 3, 4, 6, gamma=0.3, dtype=dtype_name, backend=backend)  # one block already cached
    omega, phase = omega_blocks(5, 2, 6, 4, 6, gamma=0.3, dtype=dtype_name, backend=backend)
    clear_cache()  # the blocks generated alone, in no particular order
    singles = {b: omega_block(5, b, 4, 6, gamma=0.3, dtype=dtype_name, backend=backend) for b in (4, 2, 5, 3)}
    want_omega = np.concatenate([host(singles[b][0]) for b in range(2, 6)])
    want_phase = np.concatenate([host(singles[b][1]) for b in range(2, 6)])
    np.testing.assert_array_equal(host(omega), want_omega)
    np.testing.assert_array_equal(host(phase), want_phase)


def test_a_range_is_one_cache_entry():
    clear_cache()
    first = omega_blocks(1, 0, 8, 16, 3)
    info = cache_info()["cpu"]
    assert info["blocks"] == 1  # the range alone: its blocks are not also cached one by one
    assert info["nbytes"] == 8 * 8 * 16 * (3 + 1)  # float64
    again = omega_blocks(1, 0, 8, 16, 3)
    assert again[0] is first[0] and cache_info()["cpu"]["hits"] == info["hits"] + 1
    single = omega_blocks(1, 4, 5, 16, 3)  # a range of one block is that block
    np.testing.assert_array_equal(single[0], omega_block(1, 4, 16, 3)[0])


def test_a_range_not_kept_caches_its_blocks_instead():
    """keep=False (the growing last group of a DSG prediction): the stack is not cached,
    its blocks are, so the next, one block longer, stack regenerates only that block."""
    clear_cache()
    short = omega_blocks(1, 0, 3, 16, 3, keep=False)
    info = cache_info()["cpu"]
    assert info["blocks"] == 3 and info["nbytes"] == 3 * 8 * 16 * (3 + 1)
    longer = omega_blocks(1, 0, 4, 16, 3, keep=False)
    assert cache_info()["cpu"]["hits"] == info["hits"] + 3 and cache_info()["cpu"]["blocks"] == 4
    np.testing.assert_array_equal(longer[0][:48], short[0])
    np.testing.assert_array_equal(longer[0], omega_blocks(1, 0, 4, 16, 3)[0])  # kept or not: the same stack


@pytest.mark.parametrize("start, stop", [(3, 3), (4, 2), (-1, 2), (0, 2**64)])
def test_an_empty_or_bad_range_is_refused(start, stop):
    with pytest.raises(ValueError, match="start|stop"):
        omega_blocks(0, start, stop, 4, 2)
