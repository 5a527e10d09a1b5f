"""scipy.sparse rows in the anchor ops and the prox-SGD loop (cpu): the dense results,
never a dense copy of X."""

import numpy as np
import pytest
import scipy.sparse as sp

from kbackends import get_kernel, ops
from kbackends.testing import prox_sgd_problem


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


@pytest.mark.parametrize("method", ["s3gd", "svrg", "sgd"])
@pytest.mark.parametrize("l1", [0.0, 0.02])  # without l1: the lazy O(nnz) steps; with: the O(d) loop on CSR rows
def test_prox_sgd_loop_on_csr_rows_matches_dense(method, l1):
    X, cls, cw, Z, G, idx, gw = prox_sgd_problem(n=60, d=8, m=7, k=3, seed=0)
    X = np.where(np.abs(X) > 0.8, X, 0.0)
    batches = np.random.default_rng(1).integers(0, X.shape[0], size=(3 * 4, 5))
    w0 = np.full(X.shape[1] + 1, 0.1)
    run = get_kernel("prox_sgd_run", "cpu")
    kw = dict(xp=np, method=method, loss="logistic", beta=5.0, eta=0.3, l1=l1, l2=0.01, k_in=4, n_outer=3,
              record_step=6)
    dense = run(X, cls, w0, batches, cw, Z, G, idx, gw, **kw)
    for lazy in (True, False):
        got = run(sp.csr_matrix(X), cls, w0, batches, cw, Z, G, idx, gw, lazy=lazy, **kw)
        for a, b in zip(got, dense):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    assert np.any(dense[0] != w0)
