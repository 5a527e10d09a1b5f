"""``python -m algorithms demo``: what the library is for, in about a minute on 2 cores.

Two parts, each row printed as it finishes, then a picture of accuracy against fit time
(every part tested on ``TEST_ROWS`` rows):

1. **Rows past an exact SVM.** ``DSGClassifier()`` (the defaults, float64 input) on
   every row of a synthetic problem (:func:`algorithms.datasets.make_nonlinear_classes`,
   Bayes accuracy 96%) next to the bench's SVC (:func:`algorithms.bench.protocols.svc_peer`)
   on subsamples doubled from 5,000 rows while the next fit should end within DSG's fit
   time on every row (the rows an exact SVM fits in the same time), and
   ``RBFSampler(2048) + SGDClassifier`` (the scale bench's peer) on up to 100,000 rows.
2. **A real set** from the data folder (ijcnn1, where the exact SVM with its C and gamma
   tuned still wins; ``--dataset a9a,ijcnn1`` adds a9a, where DSG matches it at a fraction
   of its time), or scikit-learn's bundled digits where the folder is missing:
   ``DSGClassifier()`` next to the SVC tuned by the bench's protocol
   (:func:`algorithms.bench.protocols.dsg_settings`) on the same rows.

The figures the demo prints on the 2-core machine, and the scale curve past 10 M rows,
are in docs/benchmarks.md ("Demo", "Scale").
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from algorithms import DSGClassifier
from algorithms.bench._optional import pyplot
from algorithms.bench.protocols import dsg_settings, svc_peer, svc_peer_note
from algorithms.bench.scale import LABELS, fit_method
from algorithms.datasets import load_or_digits, make_nonlinear_classes

SYNTHETIC_ROWS = 300_000
TEST_ROWS = 20_000  # test rows of every part (drawn from a real set's test file): the peers' predict is slow
SVC_FIRST_SUBSAMPLE = 5_000  # then doubled while the next fit should end within DSG's time
SVC_TIME_PER_DOUBLING = 4.0  # an exact SVM's fit time grows about 4x when its rows double
RBF_SGD_ROWS = 100_000  # its float64 features: 1.6 GB
REAL_SETS = ("ijcnn1",)
QUICK_ROWS = 10_000  # --quick: training rows of every set
DSG = "DSGClassifier()"


@dataclass
class Row:
    """One model of the demo: where, what, how well and how fast."""

    part: str
    name: str
    rows: int
    accuracy: float
    fit_s: float
    predict_s: float


def run_demo(datasets=REAL_SETS, data_dir=None, *, rows=SYNTHETIC_ROWS, quick=False, backend="cpu", svc=True,
             plot="demo.png"):
    """Train ``DSGClassifier()`` next to the SVC peer, print the rows, draw the picture.

    Parameters
    ----------
    datasets : sequence of str
        The real sets (names of :data:`algorithms.datasets.DATASETS`); digits where missing.
    data_dir : path-like, optional
        Their folder (default :func:`algorithms.datasets.data_dir`).
    rows : int
        Training rows of the synthetic problem (its test rows: ``TEST_ROWS``).
    quick : bool
        ``QUICK_ROWS`` training rows everywhere and smaller SVC subsamples (a smoke run).
    backend : str
        DSG's backend.
    svc : bool
        Fit the SVC peer (slow past ~50,000 rows).
    plot : path-like or None
        The picture (PNG; needs matplotlib, the ``bench`` extra). An existing file is
        never replaced: the picture is then skipped with a message.

    Returns
    -------
    int
        0 (the command's exit status).
    """
    svc_name, SVC = svc_peer()
    print(svc_peer_note())
    results = []
    n_train = QUICK_ROWS if quick else int(rows)
    X, y = make_nonlinear_classes(n_train + TEST_ROWS, random_state=0)
    print("compiling the kernels (the first run on a machine) ...", file=sys.stderr, flush=True)
    DSGClassifier(random_state=0, n_iter=2, backend=backend).fit(X[:2_000], y[:2_000])  # not timed
    X, y, Xt, yt = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    part = f"nonlinear {n_train:,} rows"
    print(f"\n{part} (make_nonlinear_classes: 20 features, Bayes accuracy 96%), test {Xt.shape[0]:,} rows")
    _print_header()
    results.append(_measured(part, DSG, _dsg(backend), X, y, Xt, yt))
    m = SVC_FIRST_SUBSAMPLE // 10 if quick else SVC_FIRST_SUBSAMPLE
    while svc and m < n_train:
        results.append(_measured(part, f"{svc_name}()", lambda X, y: SVC().fit(X, y), X[:m], y[:m], Xt, yt))
        if results[-1].fit_s * SVC_TIME_PER_DOUBLING > results[0].fit_s:
            break
        m *= 2
    m = min(n_train, RBF_SGD_ROWS)
    rbf_sgd = lambda X, y: fit_method("rbf-sgd", X, y)[0]  # noqa: E731
    results.append(_measured(part, LABELS["rbf-sgd"], rbf_sgd, X[:m], y[:m], Xt, yt))
    _print_verdict(results, part)
    for dataset in datasets:
        name, X, y, Xt, yt = load_or_digits(dataset, data_dir)
        if quick:
            X, y = _rows(X, y, QUICK_ROWS)
        Xt, yt = _rows(Xt, yt, TEST_ROWS)
        print(f"\n{name}: train {X.shape[0]:,} x {X.shape[1]}, test {Xt.shape[0]:,} rows")
        _print_header()
        results.append(_measured(name, DSG, _dsg(backend), X, y, Xt, yt))
        if svc:
            tuned = dsg_settings(name)
            C, gamma = tuned["svc_C"], tuned["gamma"]
            results.append(_measured(name, f"{svc_name}(C={C:g}, gamma={gamma:g})",
                                     lambda X, y: SVC(C=C, gamma=gamma).fit(X, y), X, y, Xt, yt))
        _print_verdict(results, name)
        if name.startswith("digits"):
            break  # the fallback is one set
    if plot is not None:
        _draw(results, plot)
    return 0


def _rows(X, y, m):
    """``m`` rows drawn at random (seed 0, kept in order), or all where there are fewer."""
    if X.shape[0] <= m:
        return X, y
    rows = np.sort(np.random.default_rng(0).choice(X.shape[0], m, replace=False))
    return X[rows], y[rows]


def _dsg(backend):
    """``fit(X, y)`` of ``DSGClassifier()`` (its defaults, seed 0) on ``backend``."""
    return lambda X, y: DSGClassifier(random_state=0, backend=backend).fit(X, y)


def _measured(part, name, fit, X, y, Xt, yt):
    """``fit(X, y)`` timed, its predictions on ``Xt`` timed and scored; the row printed."""
    model, fit_s = _timed(lambda: fit(X, y))
    accuracy, predict_s = _timed(lambda: float(np.mean(model.predict(Xt) == yt)))
    return _printed(Row(part, name, X.shape[0], accuracy, fit_s, predict_s))


def _print_header():
    print(f"{'model':<36}{'rows':>11}{'accuracy':>10}{'fit s':>9}{'predict s':>11}")


def _printed(row):
    print(f"{row.name:<36}{row.rows:>11,}{100 * row.accuracy:>9.2f}%{row.fit_s:>9.2f}{row.predict_s:>11.2f}",
          flush=True)
    return row


def _print_verdict(results, part):
    """One line: DSG against the part's most accurate peer (nothing without a peer)."""
    ours, *peers = [r for r in results if r.part == part]
    if peers:
        best = max(peers, key=lambda r: r.accuracy)
        print(f"DSG against the most accurate peer ({best.name} on {best.rows:,} rows): "
              f"{100 * (ours.accuracy - best.accuracy):+.2f} points at {ours.fit_s / best.fit_s:.2f}x its fit time")


def _draw(results, path):
    """Accuracy against fit time, one panel a part (skipped, with a message, without
    matplotlib or where ``path`` exists)."""
    if os.path.exists(path):
        print(f"\npicture not drawn: {path} exists (choose another with --plot PATH)")
        return
    try:
        plt = pyplot()
    except ModuleNotFoundError as missing:
        print(f"\npicture not drawn: {missing}")
        return
    parts = list(dict.fromkeys(r.part for r in results))
    fig, axes = plt.subplots(1, len(parts), figsize=(4.2 * len(parts), 3.6), squeeze=False)
    for ax, part in zip(axes[0], parts):
        for r in (r for r in results if r.part == part):
            ours = r.name == DSG
            ax.scatter(r.fit_s, 100 * r.accuracy, marker="o" if ours else "s", color="C0" if ours else "C1")
            ax.annotate(f"{r.name}, {r.rows:,} rows", (r.fit_s, 100 * r.accuracy),
                        textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.set_xscale("log")
        ax.set_title(part, fontsize=9)
        ax.set_xlabel("fit seconds (log)")
        ax.margins(x=0.25)
        accuracies = [100 * r.accuracy for r in results if r.part == part]
        middle, half = (max(accuracies) + min(accuracies)) / 2, max(2.0, 0.6 * (max(accuracies) - min(accuracies)))
        top = min(100.0, middle + half)
        ax.set_ylim(top - 2 * half, top)  # at least 4 points: a small gap looks small
    axes[0][0].set_ylabel("test accuracy (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"\npicture: {path}")


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start
