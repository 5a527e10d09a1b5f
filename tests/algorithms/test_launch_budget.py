"""Array calls per iteration of each loop on the device code path (issue 13): counted on
array_api_strict by kbackends.testing.count_array_ops, each at least one launch on a GPU,
where the host's cost per launch bounds most fits (docs/benchmarks.md, "GPU"). The budgets
are today's counts with a little room: a change that adds launches to an iteration fails
here, and one that removes them lowers the budget. Each loop's kernels are counted exactly."""

import numpy as np
import pytest

from kbackends.testing import count_array_ops, make_backend, two_blobs

pytestmark = pytest.mark.transfer_guard

pytest.importorskip("array_api_strict")

T = 20  # iterations


@pytest.fixture(scope="module")
def strict():
    return make_backend("array_api_strict")


def _fit(name, bk):
    from algorithms import dsg, sbp, tsgs3vm, tsgsu

    X, y = two_blobs(200, 5, 0)
    common = {"n_iter": T, "random_state": 0, "backend": bk}
    rff = {"batch_size": 32, "block_size": 16, **common}
    if name == "dsg":
        return dsg.fit(X, y, **rff)
    if name == "dsg-early-stopping":  # the defaults' path: the held-out loss every iteration, read a round late
        return dsg.fit(X, y, early_stopping=True, n_iter_no_change=T, **rff)
    if name == "tsgs3vm":
        return tsgs3vm.fit(X, np.where(np.arange(y.size) % 4 == 0, y, -1), **rff)
    if name == "tsgsu":
        return tsgsu.fit(X[:60][y[:60] == 1], X[60:], prior=0.7, **rff)
    return sbp.fit(X, y, nu=0.05, **common)


# name: (most array calls an iteration, {kernel: calls an iteration})
# a call per source each (omega_block is not held to a count: a block an earlier fit with the same
# seed generated is a cache hit, no launch)
_ENGINE = {"cache_batch": 1, "rff_features": 1, "gn_system": 1, "rff_predict_add": 1}
BUDGETS = {
    "dsg": (12, {**_ENGINE, "loss_derivative": 1, "gn_solve": 1, "block_update": 1}),
    "dsg-early-stopping": (16, {**_ENGINE, "rff_predict_add": 2, "loss_derivative": 1,
                                "gn_solve": 1, "block_update": 1, "mean_loss": 1}),
    "tsgs3vm": (24, {**{op: 2 for op in _ENGINE}, "loss_derivative": 2, "gn_solve": 1, "block_update": 1}),
    "tsgsu": (19, {**{op: 2 for op in _ENGINE}, "su_derivatives": 1, "gn_solve": 1, "block_update": 1}),
    "sbp": (23, {"water_level_biased": 1, "sbp_draw_step": 1, "kernel_response_update": 1, "sbp_average": 1}),
}


@pytest.mark.parametrize("name", sorted(BUDGETS))
def test_array_calls_per_iteration_within_budget(strict, name):
    with count_array_ops() as count:
        _fit(name, strict)
    budget, kernels = BUDGETS[name]
    per_iteration = count.total / T
    assert 0 < per_iteration <= budget, dict(count.calls)
    for kernel, calls in kernels.items():
        assert count.calls[f"kernel {kernel}"] == calls * T, dict(count.calls)
