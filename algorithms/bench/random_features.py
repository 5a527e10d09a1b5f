"""Monte-Carlo, orthogonal and quasi-Monte-Carlo random features (``features=``) compared.

Two measurements, seeds 0-4, 256 features a block:

- ``error``: the relative Frobenius error ``||K - Z Z^T||_F / ||K||_F`` of the rbf Gram
  matrix on 1000 training rows (gamma by the median heuristic on those rows) against the
  number of features;
- ``accuracy``: ``DSGClassifier(n_iter=B, early_stopping=False, features=...)`` test
  accuracy, fit and predict seconds against the number of blocks ``B`` (the three kinds
  alternate within each seed, so a load on the machine hits them alike).

One command each::

    KBACKENDS_DATA=/work/shared/data python -m algorithms.bench.random_features error letter ijcnn1 a9a usps8
    KBACKENDS_DATA=/work/shared/data python -m algorithms.bench.random_features accuracy ijcnn1 \
        --blocks 10,25,50,100 --max-test 20000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.spatial.distance import cdist

from kbackends.random import FEATURES, omega_blocks

from .. import datasets
from ..dsg import DSGClassifier
from .common import pipe_table, row_text

SEEDS = range(5)
BLOCK_SIZE = 256


def gram_errors(name, blocks=(1, 4, 16, 64), n_rows=1000):
    """Print the error table of data set ``name``: mean ± std over the seeds per kind (each
    row as a plain line when measured, the Markdown table at the end)."""
    X = datasets.load(name)[0]
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    Xs = X[np.random.default_rng(0).choice(X.shape[0], n_rows, replace=False)]
    D = cdist(Xs, Xs, "sqeuclidean")
    gamma = 1.0 / np.median(D[np.triu_indices(n_rows, 1)])
    K = np.exp(-gamma * D)
    print(f"{name}: d={X.shape[1]}, gamma={gamma:.4g}")
    header, table = ["features", *FEATURES], []
    for nb in blocks:
        cells = []
        for features in FEATURES:
            errors = []
            for seed in SEEDS:
                omega, phase = omega_blocks(seed, 0, nb, BLOCK_SIZE, X.shape[1], gamma=gamma, features=features)
                Z = np.sqrt(2.0 / (nb * BLOCK_SIZE)) * np.cos(Xs @ omega.T + phase)
                errors.append(np.linalg.norm(K - Z @ Z.T) / np.linalg.norm(K))
            cells.append(f"{np.mean(errors):.4f} ± {np.std(errors):.4f}")
        table.append([nb * BLOCK_SIZE, *cells])
        print(row_text(header, table[-1]), flush=True)
    print(pipe_table(header, table))


def accuracies(name, blocks=(10, 25, 50, 100), max_train=0, max_test=0):
    """Print the accuracy table of data set ``name`` (rows subsampled to ``max_train`` /
    ``max_test`` where those are set and smaller), each row as a plain line when measured,
    the Markdown table at the end."""
    X, y, Xt, yt = datasets.load(name)
    rng = np.random.default_rng(0)
    if max_train and X.shape[0] > max_train:
        keep = rng.choice(X.shape[0], max_train, replace=False)
        X, y = X[keep], y[keep]
    if max_test and Xt.shape[0] > max_test:
        keep = rng.choice(Xt.shape[0], max_test, replace=False)
        Xt, yt = Xt[keep], yt[keep]
    print(f"{name}: train {X.shape}, test {Xt.shape}")
    header = ["blocks (features)", "features", "accuracy % mean ± std", "fit s (median)", "predict s (median)"]
    table = []
    for nb in blocks:
        runs = {features: ([], [], []) for features in FEATURES}
        for seed in SEEDS:
            for features in FEATURES:
                acc, fit_s, predict_s = runs[features]
                t0 = time.perf_counter()
                clf = DSGClassifier(n_iter=nb, early_stopping=False, features=features, random_state=seed).fit(X, y)
                t1 = time.perf_counter()
                acc.append(100 * np.mean(clf.predict(Xt) == yt))
                predict_s.append(time.perf_counter() - t1)
                fit_s.append(t1 - t0)
        for features, (acc, fit_s, predict_s) in runs.items():
            table.append([f"{nb} ({nb * BLOCK_SIZE})", features, f"{np.mean(acc):.2f} ± {np.std(acc):.2f}",
                          f"{np.median(fit_s):.2f}", f"{np.median(predict_s):.2f}"])
            print(row_text(header, table[-1]), flush=True)
    print(pipe_table(header, table))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m algorithms.bench.random_features", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("error", "accuracy"))
    parser.add_argument("names", nargs="+", help="data sets of algorithms.datasets")
    parser.add_argument("--blocks", help="comma-separated block counts")
    parser.add_argument("--max-train", type=int, default=0)
    parser.add_argument("--max-test", type=int, default=0)
    args = parser.parse_args(argv)
    blocks = {} if args.blocks is None else {"blocks": tuple(int(b) for b in args.blocks.split(","))}
    for name in args.names:
        if args.what == "error":
            gram_errors(name, **blocks)
        else:
            accuracies(name, max_train=args.max_train, max_test=args.max_test, **blocks)


if __name__ == "__main__":
    main()
