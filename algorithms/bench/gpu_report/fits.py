"""Section 3 of the GPU report: whole fits on the device against the cpu engine.

Each fit of :func:`fits` is ``(key, title, prepare)``; ``prepare()`` loads its data
and returns ``(fit(backend, warm), predict(model, X, backend), X_test, y_test)``.
``fit(bk, warm=True)`` is the same fit on the same rows for a couple of iterations: it
compiles (or loads) the kernels outside the timed fit.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import math
import pstats
import time
import traceback
import warnings

import numpy as np
import scipy.sparse

from algorithms import DSGClassifier, dsg, s3gd, sbp, tsgs3vm, tsgsu
from algorithms._engine import ahead, window
from algorithms.datasets import load
from algorithms.sbp import _kernels as sbp_kernels
from algorithms.sbp import _loop as sbp_loop
from kbackends import CapturedGraph, launch_counts, launch_settings, to_numpy
from kbackends.ops import is_sparse

from .._optional import require
from ..tsgs3vm import split as s3vm_split
from .device import pool_mb, pool_reset


def _subsample(rng, rows, *arrays):
    if rows is None or rows >= arrays[0].shape[0]:
        return arrays
    pick = rng.choice(arrays[0].shape[0], rows, replace=False)
    return tuple(a[pick] for a in arrays)


class _Data:
    """What the fits' preparations share: the sizes, the data folder, the engine's
    batch and block, and one generator for the subsamples (drawn from in the order
    the fits are prepared, as when they were one function's closures)."""

    def __init__(self, sizes, data):
        self.sizes, self.data = sizes, data
        self.rows, self.rng = sizes["rows"], np.random.default_rng(0)
        self.engine = {"batch_size": sizes["batch"], "block_size": sizes["block"]}

    def subsampled(self, name, sparse=False):
        """``load(name)``, train and test rows each subsampled to ``sizes["rows"]``."""
        X, y, Xt, yt = load(name, self.data, sparse=sparse)
        X, y = _subsample(self.rng, self.rows, X, y)
        Xt, yt = _subsample(self.rng, self.rows, Xt, yt)
        return X, y, Xt, yt

    def labelled(self, name):
        """:meth:`subsampled`, dense float32."""
        X, y, Xt, yt = self.subsampled(name)
        return X.astype(np.float32), y, Xt.astype(np.float32), yt


def _dsg_ijcnn1(d):
    X, y, Xt, yt = d.labelled("ijcnn1")
    kw = {"gamma": 1.0, "precondition": 0.1, "n_iter": d.sizes["dsg_iter"], "random_state": 0, **d.engine}
    # warmed by the whole fit: what runs once per process (CuPy's kernels for the windows'
    # sums, the capture's pool) starts past a short fit's iterations; after a 2-iteration
    # warm-up on a fresh GPU host the timed fit took 6.6 s, its next run 0.4 s (profiled)
    return _warmable(lambda bk, k, w: dsg.fit(X[:k], y[:k], backend=bk, **{**kw, **w}), {}), \
        dsg.predict, Xt, yt


def _dsg_a9a_csr(d):  # the sparse path: CSR rows (cupyx on the device), never densified
    X, y, Xt, yt = d.subsampled("a9a", sparse=True)
    X, Xt = X.astype(np.float32), Xt.astype(np.float32)
    kw = {"gamma": 0.05, "n_iter": d.sizes["dsg_iter"], "early_stopping": False, "random_state": 0, **d.engine}
    return _warmable(lambda bk, k, w: dsg.fit(X[:k], y[:k], backend=bk, **{**kw, **w}),
                     {"n_iter": 2}), dsg.predict, Xt, yt


def _tsgs3vm_skin(d):
    X_l, y_l, X_u, X_t, y_t = s3vm_split("skin", 0, d.data, d.sizes["tsgs3vm_unlabeled"])
    X_t, y_t = _subsample(d.rng, d.rows, X_t, y_t)
    kw = {"random_state": 0, **d.engine}
    if d.rows is not None:
        kw["n_iter"] = d.sizes["dsg_iter"]
    X_l, X_u = X_l.astype(np.float32), X_u.astype(np.float32)

    def fit(bk, k, w):
        return tsgs3vm.fit(X_l, y_l, X_u[:k], backend=bk, **{**kw, **w})

    return _warmable(fit, {"n_iter": 2}), tsgs3vm.predict, X_t.astype(np.float32), y_t


def _tsgsu_a9a(d):
    # SU data from a9a's training rows (the paper's protocol: pairs of one class,
    # unlabeled rows at the class prior); the prior given, the larger class (-1) +1.
    X, y, Xt, yt = d.labelled("a9a")
    n_pairs, n_unlabeled = (5_000, 10_000) if d.rows is None else (40, 80)
    X_s, X_u = tsgsu.make_su_data(X, y, n_pairs, n_unlabeled, random_state=0)
    prior = float(np.mean(y == -1))
    kw = {"prior": prior, "positive_class": -1, "negative_class": 1, "random_state": 0,
          "n_iter": 100 if d.rows is None else 2, "batch_size": 1000 if d.rows is None else 16}

    def fit(bk, k, w):
        return tsgsu.fit(X_s[: k // 2] if k else X_s, X_u[:k] if k else X_u, backend=bk, **{**kw, **w})

    return _warmable(fit, {"n_iter": 2}), tsgsu.predict, Xt, yt


def _as_csr(*arrays):  # a9a as LIBSVM gives it: CSR rows (moved to the device once on cuda)
    return tuple(scipy.sparse.csr_matrix(a) for a in arrays)


def _sbp_a9a(d, sparse=False):
    X, y, Xt, yt = d.labelled("a9a")
    if sparse:
        X, Xt = _as_csr(X, Xt)
    kw = {"nu": 0.011 if d.rows is None else 0.2, "gamma": 0.05, "bias": True, "n_iter": d.sizes["sbp_iter"],
          "random_state": 0}
    return _warmable(lambda bk, k, w: sbp.fit(X[:k], y[:k], backend=bk, **{**kw, **w}), {"n_iter": 3}), \
        sbp.predict, Xt, yt


def _s3gd_a9a(d, sparse=False):
    X, y, Xt, yt = d.labelled("a9a")
    if sparse:
        X, Xt = _as_csr(X, Xt)
    kw = {"method": "s3gd", "step": 1.0, "lam": 1e-3, "max_epochs": d.sizes["s3gd_epochs"], "random_state": 0,
          "checkpoint": 1e9}
    if d.rows is not None:
        kw.update(n_anchors=5, kmeans_sample=200, kmeans_iter=1, inner_iter=4)
    return _warmable(lambda bk, k, w: s3gd.fit(X[:k], y[:k], backend=bk, **{**kw, **w}),
                     {"max_epochs": 0.2, "n_anchors": 5, "kmeans_sample": 200, "kmeans_iter": 1}), \
        s3gd.predict, Xt, yt


def _dsg_defaults(d):
    # What users run: DSGClassifier() with default arguments on the data as
    # load_svmlight_file gives it (CSR float64; ijcnn1 is dense in fact and made dense
    # once), moved to the device once, computed in float32.
    X, y, Xt, yt = d.subsampled("ijcnn1", sparse=True)
    short = {"n_iter": 2, "batch_size": d.sizes["batch"], "block_size": d.sizes["block"]} \
        if d.rows is not None else {}

    def fit(bk, k, w):
        return DSGClassifier(backend=bk, random_state=0, **{**short, **w}).fit(X[:k], y[:k])

    return _warmable(fit, {"n_iter": 2}), lambda est, Xt, backend: est.predict(Xt), Xt, yt


def _dsg_synthetic(d):
    n = d.sizes["synthetic_rows"]
    rng = np.random.default_rng(1)
    X = rng.standard_normal((n + n // 10, 20), dtype=np.float32)
    y = np.where((X[:, :3] ** 2).sum(1) + 0.3 * rng.standard_normal(X.shape[0]) > 2.4, 1, -1)
    n_iter = max(1, math.ceil(n / d.engine["batch_size"]))  # one pass
    kw = {"gamma": 0.1, "precondition": 0.1, "n_iter": n_iter, "random_state": 0, **d.engine}
    return _warmable(lambda bk, k, w: dsg.fit(X[:k or n], y[:k or n], backend=bk, **{**kw, **w}),
                     {"n_iter": 2}), dsg.predict, X[n:], y[n:]


def _dsg_distributed(d):
    # Issue 17 on a GPU host: the same DSG fit as dask arrays of CuPy chunks (NumPy
    # for the cpu column) on a one-worker distributed.LocalCluster; the time
    # includes the cluster's start and the chunks' transfer to the worker.
    X, y, Xt, yt = d.labelled("ijcnn1")
    kw = {"gamma": 1.0, "precondition": 0.1, "n_iter": d.sizes["dsg_iter"], "random_state": 0, **d.engine}

    def fit(bk, k, w):
        da = require("dask.array", "the report's distributed fit")
        distributed = require("distributed", "the report's distributed fit")
        Client, LocalCluster = distributed.Client, distributed.LocalCluster

        Xk, yk = bk.asarray(X[:k]), y[:k]
        chunk = -(-Xk.shape[0] // 4)  # four row chunks
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
                Client(cluster):
            Xd = da.from_array(Xk, chunks=(chunk, -1), asarray=False)
            yd = da.from_array(yk, chunks=(chunk,))
            model = dsg.fit(Xd, yd, backend=bk, **{**kw, **w})
        return model

    return _warmable(fit, {"n_iter": 2}), dsg.predict, Xt, yt


def fits(sizes, data):
    """``(key, title, prepare)`` of every fit, in the report's order (see the module's doc)."""
    d = _Data(sizes, data)
    return [
        ("dsg-ijcnn1", "DSG on ijcnn1", lambda: _dsg_ijcnn1(d)),
        ("dsg-ijcnn1-dask", "DSG on ijcnn1, dask array of 4 chunks on a 1-worker LocalCluster (issue 17)",
         lambda: _dsg_distributed(d)),
        ("tsgs3vm-skin", "TSGS3VM on Skin_NonSkin (200 labels)", lambda: _tsgs3vm_skin(d)),
        ("tsgsu-a9a", "TSGSU on a9a SU data (5,000 pairs, 10,000 unlabeled)", lambda: _tsgsu_a9a(d)),
        ("sbp-a9a", "SBP on a9a", lambda: _sbp_a9a(d)),
        ("s3gd-a9a", "S3GD on a9a", lambda: _s3gd_a9a(d)),
        ("dsg-synthetic", f"DSG, one pass over {sizes['synthetic_rows']:,} synthetic rows", lambda: _dsg_synthetic(d)),
        # What users run beyond the acceptance rows: default arguments, float64, sparse.
        ("dsg-defaults-ijcnn1", "DSGClassifier() defaults on ijcnn1, float64 input", lambda: _dsg_defaults(d)),
        ("dsg-a9a-csr", "DSG on a9a as CSR", lambda: _dsg_a9a_csr(d)),
        ("sbp-a9a-csr", "SBP on a9a as CSR", lambda: _sbp_a9a(d, sparse=True)),
        ("s3gd-a9a-csr", "S3GD on a9a as CSR", lambda: _s3gd_a9a(d, sparse=True)),
    ]


# The switches that turn the engine's graph path on: the systems built ahead and the
# iterations run a window at a time (a CUDA graph each on CuPy); "bk": the backend's name.
GRAPH_SWITCHES = ((ahead, "AUTO_BACKENDS", "bk"), (window, "AUTO_BACKENDS", "bk"))
GRAPH16_SWITCHES = (*GRAPH_SWITCHES, (ahead, "SYSTEMS_AHEAD", 16))  # windows of 16 iterations

# Fits timed again another way in the same run, each against its row above:
# (key, title, the fit's key, the switches set while it is timed: (module, attribute, value)).
VARIANTS = (
    ("sbp-a9a-window", "SBP on a9a, windows of iterations with no host read (sbp_window_run)", "sbp-a9a",
     ((sbp_loop, "WINDOW_RUN", True),)),
    ("sbp-a9a-window-graph", "SBP on a9a, windows of 16 iterations replayed as a CUDA graph", "sbp-a9a",
     ((sbp_loop, "WINDOW_RUN", True), (sbp_kernels, "WINDOW_GRAPH", True))),
    ("sbp-a9a-csr-window", "SBP on a9a as CSR, windows of iterations with no host read", "sbp-a9a-csr",
     ((sbp_loop, "WINDOW_RUN", True),)),
    ("sbp-a9a-csr-window-graph", "SBP on a9a as CSR, windows of 16 iterations replayed as a CUDA graph",
     "sbp-a9a-csr", ((sbp_loop, "WINDOW_RUN", True), (sbp_kernels, "WINDOW_GRAPH", True))),
    ("sbp-a9a-run", "SBP on a9a, its iterations in one launch of one block (sbp_run)", "sbp-a9a",
     ((sbp_loop, "CUDA_RUN", True),)),
    ("dsg-ijcnn1-graph16", "DSG on ijcnn1, 16 iterations a window replayed as a CUDA graph", "dsg-ijcnn1",
     GRAPH16_SWITCHES),
    ("dsg-ijcnn1-graph16-first", "DSG on ijcnn1, windows of 16, the first window captured (no eager run)",
     "dsg-ijcnn1", (*GRAPH16_SWITCHES, (CapturedGraph, "eager_runs", 0))),
    ("dsg-ijcnn1-graph", "DSG on ijcnn1, 64 iterations a window replayed as a CUDA graph", "dsg-ijcnn1",
     GRAPH_SWITCHES),
    ("dsg-ijcnn1-ahead", "DSG on ijcnn1, the systems built 64 iterations ahead", "dsg-ijcnn1",
     ((ahead, "AUTO_BACKENDS", "bk"),)),
    ("sbp-a9a-csr-run", "SBP on a9a as CSR, its iterations in one launch of one block", "sbp-a9a-csr",
     ((sbp_loop, "CUDA_RUN", True),)),
    ("sbp-a9a-warm", "SBP on a9a, the step-by-step level warm-started on the device", "sbp-a9a",
     ((sbp_kernels, "WARM_LEVEL", True),)),
)


@contextlib.contextmanager
def _switched(switches, bk):
    """``switches`` set while the block runs, restored after."""
    saved = [(module, name, getattr(module, name)) for module, name, _ in switches]
    try:
        for module, name, value in switches:
            setattr(module, name, (bk.name,) if value == "bk" else value)
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def variant_rows(bk, d, warm, rows, saved=lambda: None, keys=None, profile=None):
    """The :data:`VARIANTS` rows (those in ``keys``, or all): each fit timed (warmed as
    the others) with its switches set; an error goes into the row; ``saved()`` after
    each row; with ``profile`` (a path) each fit profiled once more into it."""
    prepares = {"dsg-ijcnn1": lambda: _dsg_ijcnn1(d), "sbp-a9a": lambda: _sbp_a9a(d),
                "sbp-a9a-csr": lambda: _sbp_a9a(d, sparse=True)}
    for key, title, base, switches in VARIANTS:
        if keys is not None and key not in keys:
            continue
        row = {"fit": key, "title": title}
        counts = launch_counts()
        pool_reset(bk)
        try:
            with _switched(switches, bk), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fit, predict, Xt, yt = prepares[base]()
                row["device_s"], row["device_acc"] = _timed_fit(bk, fit, predict, Xt, yt, warm)
                if profile is not None:
                    _profile_fit(bk, fit, key, profile)
            row["warnings"] = sorted({str(w.message)[:300] for w in caught})  # a refused capture says so here
        except Exception as exc:  # noqa: BLE001 - the row says why
            row["device_error"] = f"{type(exc).__name__}: {exc}"
            row["device_trace"] = traceback.format_exc(limit=4)
        after = launch_counts()
        row["launches"] = {k: after[k] - counts[k] for k in counts}
        row["device_pool_mb"] = pool_mb(bk)
        rows.append(row)
        saved()


def _warmable(fit, short):
    """``fit(bk, rows, overrides)`` as ``fit(bk, warm)``: all rows, or (the warm-up) all rows
    with ``short``'s few iterations: the same shapes as the timed fit, so what is compiled or
    allocated once per shape (kernels typed for its arguments, CuPy's kernels and the pool's
    blocks) stays out of its time (SBP's device fit on a9a took 6.45 s after a warm-up on
    256 rows, 2.3 s after one on all rows)."""

    def run(bk, warm=False):
        return fit(bk, None, short) if warm else fit(bk, None, {})

    return run


# A fit that takes under this many seconds is timed twice more and the median kept: one
# timed fit of DSG on a fresh GPU host varied up to 2x between runs (docs/benchmarks.md, "GPU").
REPEAT_UNDER = 1.0


def _timed_fit(bk, fit, predict, Xt, yt, warm):
    """(fit seconds, test accuracy) of a fit, after a warm-up fit on a few rows
    (compilation, outside the timer) if ``warm``; the median of three where one fit takes
    under :data:`REPEAT_UNDER` seconds."""
    if warm:
        fit(bk, warm=True)

    def timed():
        bk.synchronize()
        start = time.perf_counter()
        model = fit(bk)
        bk.synchronize()
        return time.perf_counter() - start, model

    seconds, model = timed()
    times = [seconds] if seconds >= REPEAT_UNDER else [seconds, timed()[0], timed()[0]]
    pred = np.asarray(to_numpy(predict(model, Xt if is_sparse(Xt) else bk.asarray(Xt), backend=bk)))
    return float(np.median(times)), float(np.mean(pred == np.asarray(yt)))


def _profile_fit(bk, fit, key, path):
    """One more device fit under cProfile: where the host's time goes (on a GPU, the
    launches), appended to ``path`` (the 25 costliest functions by own time, then the
    water levels' calls: a warm level's count beside the cold kernel's says how often
    it fell back)."""
    profiler = cProfile.Profile()
    profiler.enable()
    fit(bk)
    bk.synchronize()
    profiler.disable()
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text).sort_stats("tottime")
    stats.print_stats(25)
    stats.print_stats(r"water_level|_cuda_level")
    with open(path, "a") as f:
        f.write(f"## {key}\n{text.getvalue()}\n")


# Fits timed a third time on the device with Numba's own launches (KBACKENDS_FAST_LAUNCH=0):
# what the cuda.core launch path saves a whole fit, in the same run.
NUMBA_FITS = ("dsg-ijcnn1", "sbp-a9a", "s3gd-a9a-csr")


def run_fits(bk, cpu, sizes, data, skip, rows, budget, profile=None):
    """Append one row per fit to ``rows``; ``budget()`` is False once time is up.
    With ``profile`` (a file path), each device fit is profiled once more into it."""
    for key, title, prepare in fits(sizes, data):
        if key in skip:
            continue
        row = {"fit": key, "title": title}
        if not budget():
            row["error"] = "skipped: the --max-seconds budget was spent"
            rows.append(row)
            continue
        try:
            fit, predict, Xt, yt = prepare()
        except Exception as exc:  # noqa: BLE001 - a missing data folder is reported, not fatal
            row["error"] = f"data: {type(exc).__name__}: {exc}"
            rows.append(row)
            continue
        for label, backend in (("device", bk), ("cpu", cpu), ("device_numba", bk)):
            if label == "device_numba" and (key not in NUMBA_FITS or "device_s" not in row):
                continue
            if f"{key}:{label}" in skip or not budget():
                continue
            counts = launch_counts()
            pool_reset(backend)
            try:
                with launch_settings(fast=False if label == "device_numba" else None):
                    row[f"{label}_s"], row[f"{label}_acc"] = _timed_fit(backend, fit, predict, Xt, yt,
                                                                        sizes["warm_fits"])
            except Exception as exc:  # noqa: BLE001 - the report goes on; the error is its finding
                row[f"{label}_error"] = f"{type(exc).__name__}: {exc}"
                row[f"{label}_trace"] = traceback.format_exc(limit=4)
            if label == "device":  # which path the fit's launches took (warm-up and prediction included)
                after = launch_counts()
                row["launches"] = {k: after[k] - counts[k] for k in counts}
                row["device_pool_mb"] = pool_mb(backend)  # the pool's high-water mark (warm-up, fit, prediction)
        if "device_s" in row and "cpu_s" in row:
            row["speedup_vs_cpu"] = row["cpu_s"] / row["device_s"]
        if profile is not None and "device_s" in row and budget():
            _profile_fit(bk, fit, key, profile)
        rows.append(row)
        budget(saved=True)

