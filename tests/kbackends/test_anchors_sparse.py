"""scipy.sparse rows in the anchor ops (cpu): the dense results, never a dense copy of X
(the prox-SGD loop's are in tests/algorithms/test_s3gd_kernels.py)."""

import numpy as np
import pytest
import scipy.sparse as sp

from kbackends import ops


def _rows(density, n=300, d=40, seed=0):
    X = sp.random(n, d, density=density, format="csr", random_state=np.random.default_rng(seed))
    X.data = np.random.default_rng(seed).standard_normal(X.nnz)
    return X


@pytest.mark.parametrize("density", [0.03, 0.5])  # the fused CSR pass; BLAS on densified row chunks
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_anchor_ops_on_sparse_rows_match_dense(density, fmt):
    X = _rows(density)
    Xd, S = X.toarray(), X.asformat(fmt)
    C = ops.kmeans(Xd, 6, n_iter=3, random_state=0)
    np.testing.assert_allclose(ops.kmeans(S, 6, n_iter=3, random_state=0), C, rtol=1e-10, atol=1e-12)
    idx, w = ops.anchor_graph(S, C, 3)
    idx_d, w_d = ops.anchor_graph(Xd, C, 3)
    np.testing.assert_array_equal(idx, idx_d)
    np.testing.assert_allclose(w, w_d, rtol=1e-10)
    snap = ops.snap_to_samples(C, S)  # a tie may pick another row: compare the distances
    dist = ((Xd[:, None, :] - C[None]) ** 2).sum(-1)
    np.testing.assert_allclose(dist[snap, np.arange(6)], dist.min(axis=0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ops.anchor_accumulate(idx, w, S, 6), ops.anchor_accumulate(idx, w, Xd, 6),
                               rtol=1e-10, atol=1e-12)


def test_sparse_rows_are_refused_off_the_cpu_and_checked():
    from kbackends.testing import make_backend

    X = _rows(0.1)
    with pytest.raises(TypeError, match="backend='cpu'"):
        ops.kmeans(X, 3, backend=make_backend("array_api_strict"))
    bad = X.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN|finite"):
        ops.anchor_graph(bad, np.zeros((2, X.shape[1])), 1)
    with pytest.raises(ValueError):
        ops.anchor_graph(X, np.zeros((2, X.shape[1] + 1)), 1)
