"""``kernel_tools.binary_rows`` and ``popcount``: binary rows (dense or CSR) packed as bits give
every dot product of the rows exactly (popcounts of ``bits[:, i] & bits[:, j]``), and
the packing refuses what is not a matrix of ones or would not pay."""

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit

from kbackends.kernel_tools import binary_rows, popcount


@njit
def _popcounts(words, out):
    for i in range(words.shape[0]):
        out[i] = popcount(words[i])


@njit
def _gram(bits):
    n = bits.shape[1]
    G = np.zeros((n, n), dtype=np.int64)
    for i in range(n):
        for j in range(n):
            for k in range(bits.shape[0]):
                G[i, j] += popcount(bits[k, i] & bits[k, j])
    return G


def test_popcount_counts_every_bit():
    rng = np.random.default_rng(0)
    words = np.concatenate([rng.integers(0, 2 ** 63, 500, dtype=np.uint64) * np.uint64(2) + np.uint64(1),
                            np.array([0, 1, 2 ** 63, 2 ** 64 - 1], dtype=np.uint64)])
    out = np.empty(words.size, dtype=np.int64)
    _popcounts(words, out)
    assert out.tolist() == [bin(int(w)).count("1") for w in words]
    assert out[-4:].tolist() == [0, 1, 1, 64]


@pytest.mark.parametrize("d", [5, 64, 65, 130])  # one word, exactly one, a second, three
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_packed_rows_give_every_dot_product(d, dtype):
    rng = np.random.default_rng(d)
    dense = (rng.random((60, d)) < 0.2).astype(dtype)
    dense[7] = 0  # an empty row
    dense[8, -1] = 1  # the last column
    for X in (sp.csr_matrix(dense), dense, np.asfortranarray(dense)):
        bits, ones = binary_rows(X, max_words=8)
        assert bits.shape == (-(-d // 64), 60) and bits.dtype == np.uint64
        np.testing.assert_array_equal(ones, dense.sum(axis=1))
        np.testing.assert_array_equal(_gram(bits), (dense @ dense.T).astype(np.int64))


def test_only_matrices_of_ones_that_pay_are_packed():
    rng = np.random.default_rng(1)
    dense = (rng.random((40, 100)) < 0.3).astype(np.float64)  # 2 words, ~30 values a row
    X = sp.csr_matrix(dense)
    assert binary_rows(X) is not None
    assert binary_rows(dense) is not None
    halves = dense.copy()
    halves[39, 99] = 0.5
    assert binary_rows(halves) is None  # a dense value other than 0 or 1 (the last one read)
    assert binary_rows(X.tocsc()) is None
    twos = X.copy()
    twos.data[3] = 2.0
    assert binary_rows(twos) is None  # a value other than 1
    zeros = X.copy()
    zeros.data[3] = 0.0
    assert binary_rows(zeros) is None  # an explicit zero: a value other than 1 too
    unsorted = sp.csr_matrix((X.data, X.indices, X.indptr), shape=X.shape)
    unsorted.has_sorted_indices = False
    assert binary_rows(unsorted) is None
    sparse_rows = sp.csr_matrix((rng.random((40, 1000)) < 0.002).astype(np.float64))  # 16 words, ~2 values
    assert binary_rows(sparse_rows) is None  # popcounts would cost more than the gathers
    assert binary_rows(sparse_rows, max_words=16) is not None
    assert binary_rows(sp.csr_matrix((0, 5))) is None
