"""Orthogonal and quasi-Monte-Carlo random features: against plain references (Gram-Schmidt,
the digit-by-digit scrambled radical inverse), their distributions, the stratification a
scrambled Halton coordinate keeps, the same block on every backend, a lower kernel
approximation error than Monte-Carlo features, and the Laplacian refused."""

import math

import numpy as np
import pytest
from scipy import stats

from kbackends.random import FEATURES, clear_cache, omega_block, omega_blocks
from kbackends.testing import host, kernel_module

_structured = kernel_module("omega", "structured")


def _gram_schmidt(rows):
    """Classical Gram-Schmidt of the rows, in a loop (the reference)."""
    out = []
    for r in rows:
        v = r.copy()
        for q in out:
            v -= (v @ q) * q
        out.append(v / np.linalg.norm(v))
    return np.array(out)


@pytest.mark.parametrize("n_features, n_dims", [(1, 1), (7, 3), (10, 5), (12, 4), (5, 9)])
def test_orthogonal_rows_are_the_gram_schmidt_of_the_monte_carlo_rows_with_their_norms(n_features, n_dims):
    clear_cache()
    mc, mc_phase = omega_block(3, 11, n_features, n_dims, gamma=0.4)
    orf, orf_phase = omega_block(3, 11, n_features, n_dims, gamma=0.4, features="orthogonal")
    for start in range(0, n_features, n_dims):
        group = mc[start:start + n_dims]
        want = _gram_schmidt(group) * np.linalg.norm(group, axis=1)[:, None]
        np.testing.assert_allclose(orf[start:start + n_dims], want, rtol=1e-10, atol=1e-10)
        gram = orf[start:start + n_dims] @ orf[start:start + n_dims].T
        np.testing.assert_allclose(gram - np.diag(np.diag(gram)), 0.0, atol=1e-10)
    np.testing.assert_array_equal(orf_phase, mc_phase)


def _radical_inverse_reference(n, base, a, b, n_digits):
    """Digit by digit on Python integers: sum_k ((a_k d_k + b_k) mod p) p^-(k+1) + p^-K / 2."""
    value, weight = 0.0, 1.0
    for k in range(n_digits):
        weight /= base
        value += ((a[k] * (n % base) + b[k]) % base) * weight
        n //= base
    return value + 0.5 * weight


def test_scrambled_halton_equals_the_digit_by_digit_reference():
    seed, n_coords = 2**40 + 9, 6
    index = np.array([0, 1, 2, 17, 255, 2**33 + 5, 2**64 - 1], dtype=np.uint64)
    got = _structured.scrambled_halton(index, seed, n_coords)
    for j, p in enumerate((2, 3, 5, 7, 11, 13)):
        n_digits = math.ceil(53 * math.log(2) / math.log(p))
        a = [int(_structured._scrambles(seed, k, n_coords)[0][j]) for k in range(n_digits)]
        b = [int(_structured._scrambles(seed, k, n_coords)[1][j]) for k in range(n_digits)]
        assert all(1 <= a_k < p for a_k in a) and all(0 <= b_k < p for b_k in b)
        want = [_radical_inverse_reference(int(n), p, a, b, n_digits) for n in index]
        np.testing.assert_allclose(got[:, j], want, rtol=0, atol=1e-15)


@pytest.mark.parametrize("seed", [0, 5])
def test_a_scrambled_halton_coordinate_puts_one_point_in_each_cell(seed):
    """The first p^k points of coordinate p fall one in each interval of length p^-k
    (the radical inverse's stratification, which digit scrambling keeps)."""
    for j, (p, k) in enumerate(((2, 8), (3, 5), (5, 3), (7, 2))):
        points = _structured.scrambled_halton(np.arange(p**k, dtype=np.uint64), seed, 4)[:, j]
        assert np.all((points > 0) & (points < 1))
        cells = np.floor(points * p**k).astype(int)
        assert np.array_equal(np.sort(cells), np.arange(p**k))


def test_qmc_blocks_are_consecutive_points_of_one_sequence():
    clear_cache()
    F, d = 16, 3
    omega, phase = omega_blocks(4, 0, 5, F, d, gamma=0.5, features="qmc")
    units = _structured.scrambled_halton(np.arange(5 * F, dtype=np.uint64), 4, d + 1)
    np.testing.assert_allclose(omega, math.sqrt(2 * 0.5) * stats.norm.ppf(units[:, 1:]), rtol=1e-12)
    np.testing.assert_allclose(phase, 2 * math.pi * units[:, 0], rtol=1e-15)
    again, _ = omega_block(4, 3, F, d, gamma=0.5, features="qmc")
    np.testing.assert_array_equal(again, omega[3 * F:4 * F])


@pytest.mark.parametrize("features", ["orthogonal", "qmc"])
def test_rows_are_normal_with_variance_two_gamma_and_phases_uniform(features):
    clear_cache()
    gamma = 0.3
    omega, phase = omega_blocks(1, 0, 8, 256, 5, gamma=gamma, features=features)
    draws = np.asarray(omega).ravel() / math.sqrt(2 * gamma)
    assert stats.kstest(draws, "norm").pvalue > 1e-3
    assert stats.kstest(np.asarray(phase) / (2 * math.pi), "uniform").pvalue > 1e-3


@pytest.mark.parametrize("features", ["orthogonal", "qmc"])
def test_a_block_is_the_same_on_every_backend(backend, dtype_name, features):
    """Made on the host in float64 and cast once: equal to the cpu float64 block, cast."""
    clear_cache()
    for block in (2, 0, 2**40 + 1):
        omega, phase = omega_block(77, block, 9, 4, gamma=0.7, dtype=dtype_name, backend=backend, features=features)
        ref_omega, ref_phase = omega_block(77, block, 9, 4, gamma=0.7, dtype="float64", features=features)
        assert str(host(omega).dtype) == dtype_name
        np.testing.assert_array_equal(host(omega), ref_omega.astype(dtype_name))
        np.testing.assert_array_equal(host(phase), ref_phase.astype(dtype_name))


def _relative_gram_error(X, gamma, seed, n_blocks, F, features):
    omega, phase = omega_blocks(seed, 0, n_blocks, F, X.shape[1], gamma=gamma, features=features)
    Z = np.sqrt(2.0 / (n_blocks * F)) * np.cos(X @ omega.T + phase)
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = np.exp(-gamma * sq)
    return np.linalg.norm(K - Z @ Z.T) / np.linalg.norm(K)


def test_orthogonal_and_qmc_features_approximate_the_kernel_better_than_monte_carlo():
    """At equal features (4 blocks of 64 on 200 rows in 8 dimensions), mean over 5 seeds."""
    X = np.random.default_rng(0).standard_normal((200, 8))
    gamma = 1.0 / 16  # about 1 / median squared distance
    errors = {f: np.mean([_relative_gram_error(X, gamma, s, 4, 64, f) for s in range(5)]) for f in FEATURES}
    assert errors["orthogonal"] < 0.9 * errors["monte_carlo"]
    assert errors["qmc"] < 0.9 * errors["monte_carlo"]


@pytest.mark.parametrize("features", ["orthogonal", "qmc"])
def test_the_laplacian_kernel_keeps_monte_carlo_features(features):
    with pytest.raises(ValueError, match="not rotation invariant"):
        omega_block(0, 0, 4, 2, kernel="laplacian", features=features)
    with pytest.raises(ValueError, match="not rotation invariant"):
        omega_blocks(0, 0, 3, 4, 2, kernel="laplacian", features=features)


def test_an_unknown_features_name_is_refused():
    with pytest.raises(ValueError, match="`features` must be one of"):
        omega_block(0, 0, 4, 2, features="sobol")
