"""Small host problems of :mod:`kbackends.testing` for the tests of kernels and of what
is built on them."""

from __future__ import annotations

import numpy as np
from ..ops import anchor_accumulate, anchor_graph


def two_blobs(n=120, d=4, seed=0):
    """A small, well separated binary problem on the host: ``X`` (n, d) float64 around
    -1.5 / +1.5 in every feature and labels ``y`` in {0, 1}."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.standard_normal((n, d)) + 1.5 * (2 * y[:, None] - 1)
    return X, y


def prox_sgd_problem(n=40, d=6, m=5, k=3, seed=0):
    """A small S3GD problem for the ``prox_sgd_run`` kernel tests: rows ``X`` (n, d),
    classes ``cls`` (0 / 1), per-row weights ``cw`` (mean 1), anchors ``Z`` (m, d), the
    class-split anchor products ``G`` (2, m, d + 1) of Eq. (22) and the graph ``idx``,
    ``gw`` (k nearest anchors per row), all NumPy on the host."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    cls = (rng.random(n) < 0.4).astype(np.int64)
    Z = X[rng.choice(n, m, replace=False)]
    idx, gw = anchor_graph(X, Z, k)
    cw = np.where(cls == 1, 1.3, 0.8)
    cw = cw * n / cw.sum()
    Xa = np.hstack([X, np.ones((n, 1))])
    G = anchor_accumulate(idx + cls[:, None] * m, gw, Xa * (cw / n)[:, None], 2 * m).reshape(2, m, d + 1)
    return X, cls, cw, Z, G, idx, gw
