"""CSR against dense input, default estimators (issue 14's sparse acceptance).

``python -m algorithms.bench.sparse_dense [--only a9a,w8a] [--algos dsg,sbp,s3gd] [--seeds 0]``

For each data set as :func:`algorithms.datasets.load` gives it with ``sparse=True``
(CSR float64, what ``load_svmlight_file`` returns) and the same rows made dense,
``DSGClassifier()``, ``SBPClassifier()`` and ``S3GDClassifier()`` with default
arguments and the same ``random_state``, the two formats alternated in one
process: test accuracy, fit + predict time, and the CSR / dense time ratio.
The acceptance asks CSR for the dense accuracy (+-0.1 point) in no more time.
Each row is printed as a plain line when measured, the Markdown table at the end.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from algorithms import DSGClassifier, S3GDClassifier, SBPClassifier
from algorithms.datasets import load

from .common import pipe_table, row_text

ALGOS = ("dsg", "sbp", "s3gd")
HEADER = ["data", "algorithm", "seed", "CSR accuracy", "dense accuracy", "CSR s", "dense s", "CSR / dense time"]


def _estimator(algo, seed):
    return {"dsg": DSGClassifier, "sbp": SBPClassifier, "s3gd": S3GDClassifier}[algo](random_state=seed)


def _run(algo, seed, X, y, Xt, yt):
    start = time.perf_counter()
    model = _estimator(algo, seed).fit(X, y)
    accuracy = float(np.mean(model.predict(Xt) == yt))
    return accuracy, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="a9a,w8a", help="data sets, comma-separated")
    parser.add_argument("--algos", default=",".join(ALGOS), help="dsg, sbp, s3gd, comma-separated")
    parser.add_argument("--seeds", default="0", help="random_state values, comma-separated")
    parser.add_argument("--data", help="data folder (default: $KBACKENDS_DATA or ../shared/data)")
    args = parser.parse_args(argv)
    seeds, table = [int(s) for s in args.seeds.split(",")], []
    for name in args.only.split(","):
        X, y, Xt, yt = load(name, args.data, sparse=True)
        Xd, Xtd = X.toarray(), Xt.toarray()
        for algo in args.algos.split(","):
            for rows in (X, Xd):  # compile / load the kernels outside the timers (a whole fit: every path)
                _run(algo, 0, rows, y, Xt[:50] if rows is X else Xtd[:50], yt[:50])
            for seed in seeds:
                sparse_acc, sparse_s = _run(algo, seed, X, y, Xt, yt)
                dense_acc, dense_s = _run(algo, seed, Xd, y, Xtd, yt)
                table.append([f"{name} ({X.nnz / np.prod(X.shape):.1%} stored)", algo, seed,
                              f"{100 * sparse_acc:.2f}%", f"{100 * dense_acc:.2f}%", f"{sparse_s:.2f}",
                              f"{dense_s:.2f}", f"{sparse_s / dense_s:.2f}x"])
                print(row_text(HEADER, table[-1]), flush=True)  # progress: a row's fits take minutes
    print(pipe_table(HEADER, table))


if __name__ == "__main__":
    main()
