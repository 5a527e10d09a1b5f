"""``verbose=``: a progress bar on stderr that reaches its end (1), nothing at all (0),
and no host synchronisation per iteration on a device namespace (issue 17, point 5)."""

import re

import numpy as np
import pytest

from algorithms import (
    DSGClassifier,
    DSGRegressor,
    S3GDClassifier,
    SBPClassifier,
    TSGS3VMClassifier,
    TSGSUClassifier,
    dsg,
    sbp,
)
from algorithms._engine.progress import LOSS_EVERY, ProgressBar
from kbackends.testing import two_blobs


def _blobs(n=200, d=4, seed=0):
    return two_blobs(n, d, seed)


# (estimator, the y it fits, the bar's total)
ESTIMATORS = {
    "dsg": (lambda v: DSGClassifier(n_iter=12, batch_size=32, block_size=16, random_state=0, verbose=v), "y", 12),
    "dsg_regressor": (lambda v: DSGRegressor(n_iter=12, batch_size=32, block_size=16, random_state=0, verbose=v),
                      "y", 12),
    "tsgs3vm": (lambda v: TSGS3VMClassifier(n_iter=12, batch_size=32, block_size=16, random_state=0, verbose=v),
                "semi", 12),
    "tsgsu": (lambda v: TSGSUClassifier(prior=0.7, n_iter=12, batch_size=32, block_size=16, random_state=0,
                                        verbose=v), "s", 12),
    "sbp": (lambda v: SBPClassifier(nu=0.05, n_iter=30, random_state=0, verbose=v), "y", 30),
    # 2 epochs of 200 rows in batches of 10, 20 inner steps per outer iteration: 2 outer iterations
    "s3gd": (lambda v: S3GDClassifier(step=0.1, max_epochs=2, n_anchors=10, random_state=0, verbose=v), "y", 2),
}


def _target(kind, y):
    if kind == "semi":
        return np.where(np.arange(y.size) % 4 == 0, y, -1)
    if kind == "s":
        return (np.arange(y.size) % 2 == 0).astype(int)
    return y


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_verbose_bar_reaches_the_end_and_silent_prints_nothing(name, capsys):
    make, kind, total = ESTIMATORS[name]
    X, y = _blobs()
    make(0).fit(X, _target(kind, y))
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
    make(1).fit(X, _target(kind, y))
    err = capsys.readouterr().err
    counts = re.findall(r"(\d+)/(\d+)", err)
    assert counts, err
    assert counts[-1] == (str(total), str(total)), err  # the last state shown is the end
    if name.startswith(("dsg", "tsgs")):
        assert re.search(r"loss=[-0-9.]", err), err  # the engine's batch loss, read a round late


def test_a_count_bar_without_total(capsys):
    """A bar of unknown length (the distributed driver's rounds before the end is known)
    counts the steps and shows the fields."""
    bar = ProgressBar(None, "count")
    bar.update(3, loss=0.5)
    bar.close()
    err = capsys.readouterr().err
    assert "count: 3it" in err.replace(" it", "it") and "loss=0.5" in err


@pytest.mark.transfer_guard
@pytest.mark.parametrize("n_iter", [25, 30])
def test_engine_bar_makes_no_blocking_read(n_iter, capsys):
    """verbose=1 on a device namespace: no blocking device -> host read in the loop; the
    batch loss crosses by a deferred read (to_host_async) every LOSS_EVERY iterations
    and at the last one, read LOSS_EVERY iterations later (the last after the loop)."""
    pytest.importorskip("array_api_strict")
    from kbackends.testing import make_backend, transfer_guard

    X, y = _blobs()
    with transfer_guard() as log:
        dsg.fit(X, y, n_iter=n_iter, batch_size=32, block_size=16, random_state=0,
                backend=make_backend("array_api_strict"), verbose=1)
    assert log.blocked == [] and log.regions > 0
    assert log.deferred == n_iter // LOSS_EVERY + (1 if n_iter % LOSS_EVERY else 0)
    assert f"{n_iter}/{n_iter}" in capsys.readouterr().err


@pytest.mark.transfer_guard
def test_sbp_bar_reads_nothing_from_the_device(capsys):
    pytest.importorskip("array_api_strict")
    from kbackends.testing import make_backend, transfer_guard

    X, y = _blobs()
    with transfer_guard() as log:
        sbp.fit(X, y, nu=0.05, n_iter=20, random_state=0, backend=make_backend("array_api_strict"), verbose=1)
    assert log.blocked == [] and log.deferred == 0 and log.regions > 0
    assert "20/20" in capsys.readouterr().err
