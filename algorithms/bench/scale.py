"""Bench section ``scale``: ``DSGClassifier()`` with its defaults on millions of rows.

The data are :func:`algorithms.datasets.make_nonlinear_classes` (20 standard normal
features, a non-linear rule in six of them, 4% of the labels flipped: Bayes accuracy
96%), float64 as users bring it; the test set is 100,000 other rows. At each size,
one process per method (so that its peak memory is its own; ``ru_maxrss``):

- ``dsg``: ``DSGClassifier(random_state=0)``, every other argument its default;
- ``dsg-dask``: the same on the same rows as dask arrays, on a ``LocalCluster`` of
  two single-threaded workers (the distributed fit; memory is the workers');
- ``rbf-sgd``: ``RBFSampler(2048, gamma=1 / (d Var X)) + SGDClassifier()``, the
  scalable scikit-learn peer, where its float64 features fit in memory;
- ``svc-200k``: oneDAL's exact SVC (scikit-learn-intelex, ``SVC(gamma="scale")``)
  on 200,000 rows drawn from the training rows, at the first size only, when
  scikit-learn-intelex is installed (scikit-learn's own SVC takes hours there);
- ``sbp``: ``SBPClassifier(random_state=0)``, every other argument its default (not in
  the usual run: ``60 sqrt(n)`` iterations, each a kernel row over every row).

``python -m algorithms bench --only scale`` (1, 4 and 10 million rows; ``--quick``:
100,000 and 300,000), or ``python -m algorithms.bench.scale --sizes 1e6,4e6
--methods dsg,rbf-sgd`` for a part of it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from .. import DSGClassifier, SBPClassifier
from ..datasets import make_nonlinear_classes
from .common import Row, pipe_table

SIZES = (1_000_000, 4_000_000, 10_000_000)
QUICK_SIZES = (100_000, 300_000)
METHODS = ("dsg", "dsg-dask", "rbf-sgd", "svc-200k")
N_TEST = 100_000
SVC_ROWS = 200_000
TRAIN_SEED, TEST_SEED = 1, 2
LABELS = {"dsg": "DSGClassifier()", "dsg-dask": "DSGClassifier() on dask (2 workers)",
          "rbf-sgd": "RBFSampler(2048) + SGD", "svc-200k": "oneDAL SVC(gamma='scale') on 200k rows",
          "sbp": "SBPClassifier()"}


def _rss_mb():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def fit_method(method, X, y):
    """The fitted model of ``method`` (timed by the caller) and what it says about itself."""
    if method == "dsg":
        model = DSGClassifier(random_state=0).fit(X, y)
        return model, {"n_iter": model.n_iter_, "features": model.model_.n_blocks * model.model_.block_size}
    if method == "sbp":
        model = SBPClassifier(random_state=0).fit(X, y)
        return model, {"n_iter": model.n_iter_, "support_vectors": model.model_.params["n_support"],
                       "nu": model.model_.params["nu"]}
    if method == "rbf-sgd":
        from sklearn.kernel_approximation import RBFSampler
        from sklearn.linear_model import SGDClassifier
        from sklearn.pipeline import make_pipeline

        gamma = 1.0 / (X.shape[1] * float(X[:100_000].var()))
        model = make_pipeline(RBFSampler(n_components=2048, gamma=gamma, random_state=0),
                              SGDClassifier(random_state=0)).fit(X, y)
        return model, {"features": 2048}
    if method == "svc-200k":
        from sklearnex.svm import SVC

        rows = np.sort(np.random.default_rng(0).choice(X.shape[0], SVC_ROWS, replace=False))
        model = SVC(gamma="scale").fit(X[rows], y[rows])
        return model, {"rows": SVC_ROWS, "support_vectors": int(model.n_support_.sum())}
    msg = f"unknown method {method!r}"
    raise ValueError(msg)


def _fit_dask(X, y, Xt):
    """DSGClassifier() on dask arrays of ``X``, ``y`` on a local cluster; (fit s, predictions)."""
    import dask.array as da
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster):
        chunks = max(1, X.shape[0] // 8)
        dX, dy = da.from_array(X, chunks=(chunks, X.shape[1])), da.from_array(y, chunks=chunks)
        start = time.perf_counter()
        model = DSGClassifier(random_state=0).fit(dX, dy)
        fit_s = time.perf_counter() - start
        start = time.perf_counter()
        predicted = model.predict(Xt)
        return model, fit_s, predicted, time.perf_counter() - start


def measure_one(method, n):
    """One method at one size, in this process: a dict of the measurements."""
    X, y = make_nonlinear_classes(n, random_state=TRAIN_SEED)
    Xt, yt = make_nonlinear_classes(N_TEST, random_state=TEST_SEED)
    out = {"method": method, "n": n, "input_mb": X.nbytes / 2**20, "rss_data_mb": _rss_mb()}
    if method == "rbf-sgd" and n * 2048 * 8 > 0.8 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"):
        return {**out, "skipped": f"its features need {n * 2048 * 8 / 2**30:.0f} GiB"}
    if method == "dsg-dask":
        model, fit_s, predicted, predict_s = _fit_dask(X, y, Xt)
        info = {"n_iter": model.n_iter_}
    else:
        start = time.perf_counter()
        model, info = fit_method(method, X, y)
        fit_s = time.perf_counter() - start
        start = time.perf_counter()
        predicted = model.predict(Xt)
        predict_s = time.perf_counter() - start
    return {**out, **info, "fit_s": fit_s, "predict_s": predict_s, "accuracy": float(np.mean(predicted == yt)),
            "peak_rss_mb": _rss_mb()}


def _run_child(method, n, progress):
    """``measure_one`` in a fresh interpreter (its own peak memory); its dict."""
    if method == "svc-200k":
        try:
            import sklearnex  # noqa: F401
        except ImportError:
            return {"method": method, "n": n, "skipped": "scikit-learn-intelex is not installed"}
    command = [sys.executable, "-m", "algorithms.bench.scale", "--one", method, str(n)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        progress(done.stderr[-2000:])
        return {"method": method, "n": n, "skipped": f"failed (exit {done.returncode})"}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    progress(f"  {n:,} rows, {method}: " + json.dumps({k: (round(v, 4) if isinstance(v, float) else v)
                                                       for k, v in result.items()}))
    return result


def run(sizes=SIZES, methods=METHODS, progress=print):
    """Every method at every size (``svc-200k`` at the first size only); a list of dicts."""
    results = []
    for i, n in enumerate(sizes):
        for method in methods:
            if method == "svc-200k" and i:
                continue
            results.append(_run_child(method, int(n), progress))
    return results


def markdown(results):
    """The results as a Markdown table, each row with its ratio to RBFSampler + SGD at that size."""
    peer = {r["n"]: r for r in results if r["method"] == "rbf-sgd" and "fit_s" in r}
    header = ["rows", "method", "accuracy", "fit s", "fit ratio to RBF+SGD", "predict s (100k rows)", "us / row",
              "features", "iterations", "peak RSS MB (input MB)"]
    rows = []
    for r in results:
        name = LABELS[r["method"]]
        if "skipped" in r:
            rows.append([f"{r['n']:,}", name, f"not run: {r['skipped']}"] + [""] * (len(header) - 3))
            continue
        ratio = f"{r['fit_s'] / peer[r['n']]['fit_s']:.2f}" if r["n"] in peer else ""
        memory = "" if r["method"] == "dsg-dask" else f"{r['peak_rss_mb']:.0f} ({r['input_mb']:.0f})"
        rows.append([f"{r['n']:,}", name, f"{100 * r['accuracy']:.2f}%", f"{r['fit_s']:.1f}", ratio,
                     f"{r['predict_s']:.2f}", f"{1e6 * r['fit_s'] / r['n']:.1f}", r.get("features", ""),
                     r.get("n_iter", ""), memory])
    return pipe_table(header, rows) + "\n"


def run_section(data_dir=None, quick=False, backend="cpu", progress=print):
    """The bench runner's section (see :mod:`algorithms.bench`); the table is in ``markdown``."""
    results = run(QUICK_SIZES if quick else SIZES, progress=progress)
    rows = [Row(f"{r['n']:,} rows", LABELS[r["method"]], r["accuracy"], r["fit_s"], r["predict_s"], float("nan"),
                str(r.get("features", ""))) for r in results if "fit_s" in r]
    return {"title": "Scale: DSGClassifier() defaults on millions of rows", "rows": rows, "peer": None,
            "markdown": markdown(results), "plots": [], "results": results}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m algorithms.bench.scale", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(str(n) for n in SIZES), help="rows, comma-separated (1e6 ok)")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"of {', '.join(METHODS)}, sbp")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--one", nargs=2, metavar=("METHOD", "ROWS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure_one(args.one[0], int(args.one[1]))))
        return
    results = run([int(float(n)) for n in args.sizes.split(",")], args.methods.split(","))
    print(markdown(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
