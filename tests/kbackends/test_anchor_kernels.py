"""The cpu anchor kernels against their plain references, where a fast path could part
from them: the bounded k-nearest selection (ties, k up to m, m not a multiple of k) and
the compiled k-means++ seeding (the same rows as the array-API loop for the same draws)."""

import numpy as np
import pytest
import scipy.sparse as sp

from kbackends.testing import kernel_module

_numba, _xp = kernel_module("anchors", "numba"), kernel_module("anchors", "xp")


def _integer_rows(rng, n, d, high, density=1.0):
    """Small integer values: squared distances by the expansion are exact, and tie often."""
    X = rng.integers(-high, high + 1, size=(n, d)).astype(np.float64)
    return X * (rng.random((n, d)) < density)


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 7, 17, 100])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_k_nearest_by_distance_then_index_for_every_k(m, fmt):
    rng = np.random.default_rng(m)
    A = _integer_rows(rng, m, 6, 1, density=0.6)
    A[m // 2 :] = A[: m - m // 2]  # duplicated anchors: equal distances everywhere
    X = _integer_rows(rng, 50, 6, 1, density=0.6)
    D = ((X[:, None, :] - A[None, :, :]) ** 2).sum(-1)
    order = np.argsort(D, axis=1, kind="stable")  # the oracle's rule: distance, then index
    rows = sp.csr_matrix(X) if fmt == "csr" else X
    for k in range(1, m + 1):
        idx, dist = _numba.anchor_knn(rows, A, xp=np, k=k)
        np.testing.assert_array_equal(idx, order[:, :k], err_msg=f"k={k}")
        np.testing.assert_array_equal(dist, np.take_along_axis(D, order[:, :k], axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_compiled_seeding_picks_the_reference_rows(dtype, fmt):
    rng = np.random.default_rng(7)
    X = (rng.standard_normal((300, 9)) * (rng.random((300, 9)) < 0.4)).astype(dtype)
    rows = sp.csr_matrix(X) if fmt == "csr" else X
    sq = (X.astype(np.float64) ** 2).sum(axis=1).astype(dtype)
    uniforms = rng.random(39)
    got = _numba.kmeans_seeds(rows, sq, uniforms, xp=np, first=11)
    want = _xp.kmeans_seeds(rows, sq, uniforms, xp=np, first=11)
    assert got[0] == 11 and got.shape == (40,) and got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    # k-means++: a chosen row is never drawn again while other rows are away from every centre
    assert np.unique(got).size == got.size


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_seeding_rows_that_duplicate_the_centres(fmt):
    """Every D(x)^2 is 0 once the distinct rows are centres: the floor(u * count)-th row
    not yet chosen, the same in both implementations."""
    X = np.repeat(np.array([[1.0, 0.0], [0.0, 2.0]]), 3, axis=0)  # rows 0-2 equal, 3-5 equal
    rows = sp.csr_matrix(X) if fmt == "csr" else X
    sq = (X**2).sum(axis=1)
    uniforms = np.array([0.5, 0.0, 0.99, 0.4])
    got = _numba.kmeans_seeds(rows, sq, uniforms, xp=np, first=0)
    np.testing.assert_array_equal(got, _xp.kmeans_seeds(rows, sq, uniforms, xp=np, first=0))
    assert got[1] >= 3  # the only row away from centre 0 is of the other group
    assert np.unique(got).size == got.size
