"""Cases an adversarial pass over the public entries found: each failed before its fix
(a silently wrong result, or an error that did not say what to change)."""

import numpy as np
import pytest

from algorithms import DSGClassifier


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    y = np.where(rng.random(200) < 0.5, -1, 1)
    X = rng.normal(size=(200, 5))
    X[:, 0] += 1.5 * y
    return X, y


def test_a_validation_fraction_leaving_too_few_rows_is_refused_by_name(blobs):
    """scikit-learn's split refused it naming `train_size`, which DSG does not have."""
    X, y = blobs
    with pytest.raises(ValueError, match=r"`validation_fraction`=0.999 .* leaving 1 to train on for 2 classes"):
        DSGClassifier(early_stopping=True, validation_fraction=0.999, n_iter=5, block_size=32).fit(X, y)


def test_an_s3gd_inner_loop_over_the_memory_budget_is_refused_by_name(blobs):
    """It surfaced as a raw MemoryError (74.5 GiB of row indices) after the anchors were built."""
    from algorithms import S3GDClassifier

    X, y = blobs
    with pytest.raises(ValueError, match="lower `inner_iter`"):
        S3GDClassifier(inner_iter=10**9, n_anchors=10, max_epochs=1).fit(X, y)


@pytest.mark.parametrize("marker", [float("nan"), np.float32("nan")])
def test_a_nan_unlabeled_label_is_refused_by_name(blobs, marker):
    """NaN never equals itself, so no row matched it: scikit-learn's "Input y contains NaN"
    (estimator) or "NaN labels" (function), neither naming `unlabeled_label`."""
    from algorithms import TSGS3VMClassifier, tsgs3vm

    X, y = blobs
    y = y.astype(float)
    y[100:] = np.nan
    for fit in (lambda: TSGS3VMClassifier(unlabeled_label=marker, n_iter=2).fit(X, y),
                lambda: tsgs3vm.fit(X, y, unlabeled_label=marker, n_iter=2)):
        with pytest.raises(ValueError, match="`unlabeled_label` must be a label other than NaN"):
            fit()


def test_distributed_fit_on_thread_workers_keeps_one_state_per_worker():
    """The workers of LocalCluster(processes=False) are threads of one process: keyed by the
    fit's token alone, they shared one engine state, applied every averaged change twice and
    fitted targets to R^2 ~0 (against 0.99 in memory), silently."""
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    from sklearn.metrics import r2_score

    from algorithms import dsg

    X = np.random.default_rng(0).normal(size=(400, 5))
    t = 1e3 + 10 * np.sin(X[:, 0])
    args = dict(loss="squared", n_iter=16, batch_size=64, block_size=64, random_state=0)
    in_memory = r2_score(t, dsg.predict(dsg.fit(X, t, **args), X))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        model = dsg.fit(da.from_array(X, chunks=(100, -1)), da.from_array(t, chunks=100), **args)
    assert model.params["distributed"]["rounds"] > 1
    assert r2_score(t, dsg.predict(model, X)) > in_memory - 0.03
