"""Anchor ops (S3GD's sparse anchor propagation) on every backend against brute force."""

import numpy as np
import pytest

from kbackends.ops import anchor_accumulate, anchor_graph, anchor_propagate, kmeans, snap_to_samples
from kbackends.testing import assert_close, host


def _brute(X, A):
    X, A = X.astype(np.float64), A.astype(np.float64)
    return ((X[:, None, :] - A[None, :, :]) ** 2).sum(-1)


def _dense(indices, weights, m):
    M = np.zeros((indices.shape[0], m))
    for i in range(indices.shape[0]):
        for j, w in zip(indices[i], weights[i]):
            M[i, j] += w
    return M


@pytest.mark.parametrize("n, m, k, d", [(0, 3, 2, 4), (1, 1, 1, 1), (37, 5, 3, 2), (130, 17, 5, 7), (9, 4, 4, 3)])
def test_anchor_graph_is_the_k_nearest_with_rows_summing_to_one(backend, dtype_name, n, m, k, d):
    rng = np.random.default_rng(n + m)
    X = rng.standard_normal((n, d)).astype(dtype_name)
    A = rng.standard_normal((m, d)).astype(dtype_name)
    idx, w = anchor_graph(backend.asarray(X), backend.asarray(A), k)
    idx, w = host(idx), host(w)
    assert idx.shape == (n, k) and w.shape == (n, k)
    D = _brute(X, A)
    order = np.argsort(D, axis=1, kind="stable")[:, :k]
    # The chosen anchors are the k nearest: their distances are the k smallest ...
    assert_close(np.take_along_axis(D, idx, axis=1), np.take_along_axis(D, order, axis=1), dtype_name, scale=10 * d)
    # ... and, where no two distances are closer than rounding, the very same anchors in the same order.
    sorted_d = np.sort(D, axis=1)
    gaps = np.diff(sorted_d[:, : k + 1], axis=1).min(axis=1) if m > 1 else np.full(n, np.inf)
    clear = gaps > (1e-3 if dtype_name == "float32" else 1e-9)
    np.testing.assert_array_equal(idx[clear], order[clear])
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=0, atol=1e-6 if dtype_name == "float32" else 1e-12)
    assert np.all(w >= 0)
    # Eq. (14): gamma_ij = exp(-D_ij / sigma_i^2), sigma_i^2 = max(eps, D_i1^(1/4))^2.
    Dk = np.take_along_axis(D, idx, axis=1)
    sigma2 = np.maximum(np.sqrt(Dk[:, :1]), 1e-8)
    g = np.exp(-(Dk - Dk[:, :1]) / sigma2)
    assert_close(w, g / g.sum(axis=1, keepdims=True), dtype_name, scale=100)


def test_ties_and_a_sample_on_an_anchor(backend):
    A = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 3.0]])
    X = np.array([[1.0, 0.0], [0.5, 0.0], [100.0, 100.0]])
    idx, w = anchor_graph(backend.asarray(X), backend.asarray(A), 3)
    idx, w = host(idx), host(w)
    # duplicates (anchors 1, 2) keep index order; a sample on an anchor: sigma = eps, weight 1 on
    # the duplicates' pair (equal distance 0) and 0 elsewhere.
    np.testing.assert_array_equal(idx[0], [1, 2, 0])
    np.testing.assert_allclose(w[0], [0.5, 0.5, 0.0], atol=1e-12)
    np.testing.assert_array_equal(idx[1], [0, 1, 2])
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert np.all(np.isfinite(w))  # far away sample: no 0 / 0


@pytest.mark.parametrize("n, m, k, q", [(0, 2, 1, None), (1, 1, 1, None), (41, 7, 3, None), (41, 7, 3, 5), (300, 33, 5, 2)])
def test_propagate_and_accumulate_are_M_and_M_transpose(backend, dtype_name, n, m, k, q):
    rng = np.random.default_rng(n * 7 + m)
    idx = np.stack([rng.choice(m, size=k, replace=False) for _ in range(n)]) if n else np.zeros((0, k), np.int64)
    w = rng.random((n, k)).astype(dtype_name)
    vals = rng.standard_normal(m if q is None else (m, q)).astype(dtype_name) * 1e3
    rows = rng.standard_normal(n if q is None else (n, q)).astype(dtype_name)
    M = _dense(idx, w.astype(np.float64), m)
    got = anchor_propagate(backend.asarray(idx), backend.asarray(w), backend.asarray(vals))
    assert_close(got, M @ vals.astype(np.float64), dtype_name, scale=1e3 * k)
    got = anchor_accumulate(backend.asarray(idx), backend.asarray(w), backend.asarray(rows), m)
    assert_close(got, M.T @ rows.astype(np.float64), dtype_name, scale=max(1, n))


def test_kmeans_finds_separated_blobs_and_snaps_to_samples(backend):
    rng = np.random.default_rng(0)
    centers = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    X = np.concatenate([c + 0.1 * rng.standard_normal((50, 2)) for c in centers])
    C = host(kmeans(backend.asarray(X), 3, n_iter=5, random_state=0))
    C = C[np.argsort(C[:, 0] + 2 * C[:, 1])]
    np.testing.assert_allclose(C, centers, atol=0.05)
    # Repeats bit for bit on one backend (no float atomics); matches the cpu engine up to
    # summation order (cuBLAS sums in its own order on a GPU).
    again = host(kmeans(backend.asarray(X), 3, n_iter=5, random_state=0))
    np.testing.assert_array_equal(again[np.argsort(again[:, 0] + 2 * again[:, 1])], C)
    cpu = host(kmeans(X, 3, n_iter=5, random_state=0))
    np.testing.assert_allclose(np.sort(again, axis=0), np.sort(cpu, axis=0), rtol=0, atol=1e-12)
    rows = host(snap_to_samples(backend.asarray(C), backend.asarray(X)))
    np.testing.assert_array_equal(rows, _brute(C, X).argmin(axis=1))


def test_kmeans_with_duplicate_rows_and_errors():
    X = np.zeros((5, 2))
    C = kmeans(X, 3, n_iter=2, random_state=0)
    assert C.shape == (3, 2) and np.all(C == 0)
    with pytest.raises(ValueError, match="`n_clusters` must be an integer in"):
        kmeans(X, 6)
    with pytest.raises(ValueError, match="`k` must be an integer in"):
        anchor_graph(X, X[:2], 3)
    with pytest.raises(ValueError, match="`indices` must index anchors"):
        anchor_propagate(np.array([[2]]), np.array([[1.0]]), np.zeros(2))
    with pytest.raises(TypeError, match="`rows`"):
        anchor_accumulate(np.array([[0]]), np.array([[1.0]]), np.array([1], dtype=np.float32), 2)
    with pytest.raises(ValueError, match="`X` contains NaN"):
        anchor_graph(np.array([[np.nan, 0.0]]), X[:2], 1)
