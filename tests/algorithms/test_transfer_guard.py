"""No host synchronisation inside an iteration (issue 13, deliverable 3).

Every algorithm is fitted on the array_api_strict backend (the stand-in for a
device namespace) under :func:`kbackends.testing.transfer_guard`: any device ->
host conversion inside its ``kbackends.sync_free`` loop raises. The guard itself
is checked first: a planted conversion inside a guarded loop trips it, the same
code outside a loop does not.
"""

import numpy as np
import pytest

import kbackends
from kbackends.testing import (
    TransferGuardError,
    make_backend,
    transfer_guard,
    two_blobs,
)

pytestmark = pytest.mark.transfer_guard

xp = pytest.importorskip("array_api_strict")


@pytest.fixture(scope="module")
def strict():
    return make_backend("array_api_strict")


def _blobs(n=120, d=4, seed=0):
    return two_blobs(n, d, seed)


# --- the guard ---------------------------------------------------------------------------

PLANTED = {
    "float": lambda a: float(xp.sum(a)),
    "int": lambda a: int(xp.astype(xp.sum(a), xp.int64)),
    "bool": lambda a: bool(xp.sum(a) > 0),
    "if": lambda a: 1 if xp.sum(a) > 0 else 0,
    "index": lambda a: list(range(5))[xp.astype(xp.sum(a), xp.int64)],
    "to_numpy": kbackends.to_numpy,
    "np.asarray": np.asarray,
    "mask": lambda a: a[a > 0],
    "nonzero": lambda a: xp.nonzero(a > 0),
}


@pytest.mark.parametrize("what", sorted(PLANTED))
def test_planted_conversion_in_a_loop_trips_the_guard(what):
    a = xp.asarray([1.0, -2.0, 3.0])
    done = []
    with pytest.raises(TransferGuardError, match=r"sync-free loop"):
        with transfer_guard():
            with kbackends.sync_free():
                for _ in range(3):
                    a = a * 1.0
                    PLANTED[what](a)
                    done.append(1)
    assert done == []  # raised at the conversion
    a = xp.asarray([1.0, -2.0, 3.0])
    with transfer_guard() as log:  # the same code outside a region converts
        PLANTED[what](a)
    assert log.blocked == [] and log.regions == 0


def test_guard_allows_device_work_host_to_device_and_holes():
    a = xp.asarray([1.0, 2.0, 3.0])
    rng = np.random.default_rng(0)
    with transfer_guard() as log:
        with kbackends.sync_free():
            idx = xp.asarray(rng.integers(0, 3, 4))  # host -> device: allowed
            s = xp.sum(xp.take(a, idx)) * 2.0  # 0-d device scalar: allowed
            pending = kbackends.to_host_async(s)  # deferred read: counted, allowed
            with kbackends.sync_free(False):  # a documented hole (a callback)
                assert float(s) > 0
        assert float(pending.get()) == float(s)
    assert log.blocked == [] and log.deferred == 1 and log.regions == 1


def test_guard_counts_host_to_device_copies_around_the_kernels(strict):
    level = kbackends.get_kernel("water_level_biased", strict)
    c, labels = xp.asarray([0.5, -1.0, 2.0, 0.1]), xp.asarray([1.0, -1.0, 1.0, -1.0])
    with transfer_guard() as log:
        xp.asarray(np.ones(2))  # outside a region: not counted
        with kbackends.sync_free():
            for _ in range(3):
                xp.asarray(np.ones(4)) + xp.asarray(c)  # one host copy; c is already on the "device"
                level(c, labels, 0.5, xp=xp)  # its array-API reference copies a constant: not counted
    assert log.uploads == 3 and log.blocked == []


def test_guard_fails_on_exit_when_the_error_was_swallowed():
    a = xp.asarray([1.0, 2.0])
    with pytest.raises(TransferGuardError, match="swallowed"):
        with transfer_guard():
            with kbackends.sync_free():
                try:
                    float(a[0])
                except Exception:  # noqa: BLE001  (what careless code under test might do)
                    pass


def test_guard_restores_the_namespace():
    a = xp.asarray([1.5])
    cls = type(a)
    before = {name: cls.__dict__.get(name) for name in ("__float__", "__getitem__", "__bool__")}
    with transfer_guard():
        pass
    assert {name: cls.__dict__.get(name) for name in before} == before
    assert xp.nonzero.__module__.startswith("array_api_strict")
    with kbackends.sync_free():  # no guard: no check
        assert float(a[0]) == 1.5


def test_region_is_off_by_default_and_nests():
    assert not kbackends.in_sync_free_region()
    with kbackends.sync_free():
        assert kbackends.in_sync_free_region()
        with kbackends.sync_free(False):
            assert not kbackends.in_sync_free_region()
        assert kbackends.in_sync_free_region()
    assert not kbackends.in_sync_free_region()


# --- the algorithms ----------------------------------------------------------------------


def _accuracy(model, X, y):
    return float(np.mean(kbackends.to_numpy(model.predict(X)) == y))


@pytest.mark.parametrize("variant", ["dsg", "udsg", "cdsg"])
@pytest.mark.parametrize("precondition", [0.1, None])
def test_dsg_loop_is_sync_free(strict, variant, precondition):
    from algorithms import dsg

    X, y = _blobs()
    with transfer_guard() as log:
        model = dsg.fit(X, y, variant=variant, n_iter=12, batch_size=32, block_size=16, precondition=precondition,
                        random_state=0, backend=strict)
    assert log.blocked == [] and log.regions > 0
    assert log.deferred == (12 if variant == "cdsg" else 0)  # CDSG's one lagged scalar per iteration
    # the host-drawn batches' row indices: one copy for the run's 12 iterations (algorithms._engine.draws:
    # UDSG's block choices are drawn with them)
    assert log.uploads == 1
    assert _accuracy(model, X, y) > 0.8


@pytest.mark.parametrize("variant", ["dsg", "udsg", "cdsg"])
def test_past_the_feature_budget_rows_cross_once_per_block_of_iterations(strict, variant):
    """DSG's and UDSG's old blocks past the budget are drawn ahead with the rows (one copy
    for 70 iterations: 64, then 6); CDSG's rule reads the device, so its rows cross once an
    iteration once its budget can be reached."""
    from algorithms import dsg

    X, y = _blobs()
    with transfer_guard() as log:
        model = dsg.fit(X, y, variant=variant, n_iter=70, batch_size=32, block_size=16, feature_budget=64,
                        random_state=0, backend=strict)
    assert log.blocked == [] and model.n_blocks == 4
    assert log.uploads == (70 if variant == "cdsg" else 2)


def test_dsg_cache_and_average_paths_are_sync_free(strict):
    from algorithms import dsg

    X, y = _blobs()
    with transfer_guard() as log:
        dsg.fit(X, y, n_iter=10, batch_size=32, block_size=16, cache_predictions=True, average=True,
                random_state=0, backend=strict)
        dsg.fit(X, y, loss="squared", n_iter=10, batch_size=32, block_size=16, cache_predictions=False,
                random_state=0, backend=strict)
    assert log.blocked == [] and log.regions > 0


@pytest.mark.parametrize("loss", ["hinge", "logistic", "squared"])
def test_dsg_early_stopping_is_sync_free(strict, loss):
    """The held-out loss goes to the host by to_host_async (a deferred read per iteration)
    and is read an iteration late: no blocking conversion, with weighted rows too."""
    from algorithms import dsg

    X, y = _blobs(200)
    y3 = np.where(X[:, 0] > 1.0, 2, y) if loss == "logistic" else y  # softmax: three classes
    weights = np.where(np.arange(y.size) % 3 == 0, 2.0, 1.0)
    with transfer_guard() as log:
        model = dsg.fit(X, y3, sample_weight=weights, loss=loss, n_iter=30, batch_size=32, block_size=16,
                        early_stopping=True, n_iter_no_change=2, tol=0.5, random_state=0, backend=strict)
    done = model.params["n_iter_done"]
    assert log.blocked == [] and log.regions > 0
    assert log.deferred == done  # one lagged scalar per iteration
    assert done < 30  # tol=0.5: it stopped early


def test_dsg_callback_may_sync(strict):
    from algorithms import dsg

    X, y = _blobs()
    seen = []
    with transfer_guard() as log:
        dsg.fit(X, y, n_iter=5, batch_size=32, block_size=16, random_state=0, backend=strict,
                callback=lambda info: seen.append(float(info["batch_loss"])))
    assert log.blocked == [] and log.regions > 0 and len(seen) == 5


def test_tsgs3vm_loop_is_sync_free(strict):
    from algorithms import tsgs3vm

    X, y = _blobs(160)
    y_semi = np.where(np.arange(y.size) % 4 == 0, y, -1)
    with transfer_guard() as log:
        model = tsgs3vm.fit(X, y_semi, n_iter=12, batch_size=32, block_size=16, random_state=0, backend=strict)
    assert log.blocked == [] and log.regions > 0
    assert _accuracy(model, X, y) > 0.8


@pytest.mark.parametrize(("correction", "margin"), [("abs", 2.0), ("relu", 0.0), ("none", 0.0)])
def test_tsgsu_loop_is_sync_free(strict, correction, margin):
    from algorithms import tsgsu

    X, y = _blobs(200)
    similar = X[:60][y[:60] == 1]
    with transfer_guard() as log:
        tsgsu.fit(similar, X[60:], prior=0.7, correction=correction, correction_margin=margin, n_iter=12,
                  batch_size=32, block_size=16, random_state=0, backend=strict)
    assert log.blocked == [] and log.regions > 0


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch_size", [1, 3])
def test_sbp_loop_is_sync_free(strict, bias, batch_size):
    from algorithms import sbp

    X, y = _blobs()
    with transfer_guard() as log:
        model = sbp.fit(X, y, nu=0.05, n_iter=40, bias=bias, batch_size=batch_size, random_state=0, backend=strict)
    assert log.blocked == [] and log.regions > 0
    assert log.uploads == 1  # the 40 iterations' uniform draws, in one copy
    assert _accuracy(model, X, y) > 0.8


def test_sbp_draws_cross_to_the_device_a_block_at_a_time(strict, monkeypatch):
    """One host -> device copy per _DRAW_BLOCK iterations, and the same draws (the same
    model, bit for bit) whatever the block."""
    from algorithms import sbp

    X, y = _blobs()
    whole = sbp.fit(X, y, nu=0.05, n_iter=40, random_state=0, backend=strict)
    monkeypatch.setattr(sbp._loop, "_DRAW_BLOCK", 8)
    with transfer_guard() as log:
        blocked = sbp.fit(X, y, nu=0.05, n_iter=40, random_state=0, backend=strict)
    assert log.uploads == 5 and log.blocked == []
    np.testing.assert_array_equal(kbackends.to_numpy(blocked.coef), kbackends.to_numpy(whole.coef))
    assert blocked.params["levels"] == whole.params["levels"]


def test_sbp_multiclass_loop_is_sync_free(strict):
    from algorithms import sbp

    X, y = _blobs()
    y3 = np.where(X[:, 0] > 1.0, 2, y)
    for bias in (True, False):
        with transfer_guard() as log:
            sbp.fit(X, y3, nu=0.05, n_iter=20, bias=bias, batch_size=2, kernel="linear", random_state=0,
                    backend=strict)
        assert log.blocked == [] and log.regions > 0


@pytest.mark.parametrize("method", ["s3gd", "svrg", "sgd"])
def test_s3gd_loop_is_sync_free(strict, method):
    from algorithms import s3gd

    X, y = _blobs()
    with transfer_guard() as log:
        model = s3gd.fit(X, y, method=method, step=0.1, max_epochs=2, n_anchors=10, penalty="elasticnet",
                         random_state=0, backend=strict, callback=lambda info: None)
    assert log.blocked == [] and log.regions > 0
    assert _accuracy(model, X, y) > 0.8
