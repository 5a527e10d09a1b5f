"""The model's blocks of random features evaluated on rows, in groups, and the
coefficient buffer that grows with them."""

from __future__ import annotations

import numpy as np

from kbackends import ops
from kbackends.random import omega_blocks


def evaluate_blocks(bk, X, coef, *, seed, block_size, n_blocks, n_dims, kernel, gamma, features="monte_carlo"):
    """``sum over blocks b < n_blocks of cos(X omega_b^T + phase_b) @ coef_b``, shape (n, k).

    Blocks are evaluated in groups of up to :func:`group_features` features per
    ``rff_predict`` call: wider calls read ``X`` fewer times and amortise the
    per-call work. A group's omega is also held under ``GROUP_BYTES``: with many
    input dimensions (sparse text data, d = 50,000) 4096 features of omega would
    be 800 MB. A finished group's stacked omega is one cache entry (``omega_blocks``);
    only the last, growing group is stacked from its blocks, so an iteration's host
    work grows by a lookup per group, not per block (byte-budgeted caches).
    ``features`` is how the blocks were drawn (:data:`kbackends.random.FEATURES`).
    """
    xp = bk.xp
    F = block_size
    out = xp.zeros((X.shape[0], coef.shape[1]), dtype=X.dtype)
    group = min(group_features(bk), GROUP_BYTES // max(1, n_dims * np.dtype(_dtype_name(X)).itemsize))
    per_group = max(1, group // F)
    same = {"kernel": kernel, "gamma": gamma, "dtype": X.dtype, "backend": bk, "features": features}
    for start in range(0, n_blocks, per_group):
        stop = min(n_blocks, start + per_group)
        omega, phase = omega_blocks(seed, start, stop, F, n_dims, keep=stop - start == per_group, **same)
        # a loop op: X was validated once (fit, predict), the blocks are made here
        out = out + ops.rff_predict(X, omega, phase, coef[start * F : stop * F, :], backend=bk, check_input=False)
    return out


GROUP_FEATURES = 4096
# On a GPU an rff_predict call costs ~1 ms of host time (launches) against ~0.1 ms of
# device time for 4096 features x 4096 rows (H100, docs/benchmarks.md "GPU").
GROUP_FEATURES_DEVICE = 16384
GROUP_BYTES = 64 * 2**20


def group_features(bk):
    """Features per ``rff_predict`` call in :func:`evaluate_blocks` on ``bk``."""
    return GROUP_FEATURES_DEVICE if bk.name in ("cuda", "cudasim") else GROUP_FEATURES


def _dtype_name(X):
    return "float32" if "float32" in str(X.dtype) else "float64"



def grow(xp, a, new_rows: int, cap: int):
    new_rows = min(new_rows, max(cap, a.shape[0]))
    out = xp.zeros((new_rows, a.shape[1]), dtype=a.dtype)
    if a.shape[0]:
        out[: a.shape[0], :] = a
    return out
