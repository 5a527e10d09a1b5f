"""kbackends.kernels._numba_prefetch: a hint, compiled into Numba CPU kernels, that
changes no result (the prox-SGD loop's results are checked against its oracle)."""

import numpy as np
from numba import njit

from kbackends.testing import kernel_module

prefetch = kernel_module(None, "numba_prefetch").prefetch


@njit
def _gather_ahead(values, table, order):
    total = 0.0
    for t in range(order.shape[0]):
        if t + 1 < order.shape[0]:
            prefetch(values, order[t + 1])
            prefetch(table, order[t + 1])  # 2-D: the start of that row
        total += values[order[t]] + table[order[t], 1]
    return total


def test_prefetch_compiles_for_1d_and_2d_arrays_and_changes_nothing():
    rng = np.random.default_rng(0)
    values, table = rng.standard_normal(1000), rng.standard_normal((1000, 3))
    order = rng.integers(0, 1000, 500)
    assert _gather_ahead(values, table, order) == sum(values[i] + table[i, 1] for i in order.tolist())
    assert "prefetch" in next(iter(_gather_ahead.inspect_llvm().values()))
