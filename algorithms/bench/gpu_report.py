"""``python -m kbackends gpu-report --out DIR``: the whole GPU check in one command.

Three sections, each timed on the device and against the cpu engine in the same
run, written to ``DIR/report.md`` (Markdown) and ``DIR/report.json`` (raw figures):

1. the cuda test suite (``pytest -m cuda`` in a subprocess: its summary line);
2. each op's throughput against the device's own roofline: FP32 FMA peak =
   SMs x FP32 lanes per SM x 2 x clock, memory bandwidth = 2 x memory clock x
   bus width / 8, read from the device through CuPy; the model time is
   max(flops / peak, bytes / bandwidth) and "% roofline" is model / measured;
   rff_predict and rff_weighted_sum again with 1 GiB chunks (``NAME@1GiB``, device
   only) against the default 256 MiB, and the launch-bound ops again through
   Numba's own launches (``NAME@numba``, ``KBACKENDS_FAST_LAUNCH=0``) against
   :func:`~kbackends.kernels._cuda_launch.run_kernel`'s cuda.core launches, in the
   same run;
3. whole fits (DSG on ijcnn1, in process and as a dask array of CuPy chunks on a
   one-worker distributed.LocalCluster, TSGS3VM on Skin_NonSkin, TSGSU on SU data
   drawn from a9a, SBP on a9a, S3GD on a9a, DSG over one pass of synthetic rows; then what users run: DSGClassifier()
   defaults on float64 input, DSG, SBP and S3GD on a9a as CSR): fit time and test
   accuracy on the device and on the cpu engine.

``--profile`` adds a host-side profile (cProfile) of each device fit to
``DIR/profiles.txt``: on a GPU the launches, not the kernels, bound most fits.
``--small`` shrinks every size for a dry run (the simulator runs it end to end:
``NUMBA_ENABLE_CUDASIM=1 python -m kbackends gpu-report --out DIR --small
--backend cudasim``); the simulator has no roofline, so nominal H100 figures
stand in and are labelled so. Data come from :func:`algorithms.datasets.load`
(``--data DIR`` or ``$KBACKENDS_DATA``, else ``../shared/data``). A failing
item is recorded with its error and the report goes on.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

# FP32 lanes per SM by compute capability (CUDA C Programming Guide, "Arithmetic
# Instructions" throughput table); 128 for anything newer than listed.
_FP32_LANES = {(6, 0): 64, (7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128}
# H100 SXM5: 132 SMs at 1.98 GHz boost (67 TFLOP/s FP32 FMA), HBM3 3.35 TB/s.
NOMINAL_H100 = {"name": "nominal H100 SXM (no device read)", "sms": 132, "clock_hz": 1.98e9, "fp32_lanes": 128,
                "mem_clock_hz": 2.619e9, "bus_bits": 5120, "nominal": True}

SIZES = {
    "full": {
        "rff": (1_000_000, 28, 4096), "rff_features": (65_536, 28, 4096), "response": (1_000_000, 28, 256),
        "water_level": 10_000_000, "water_level_biased": 1_000_000, "prox_sgd": (32_561, 123, 10, 2000),
        "rows": None, "synthetic_rows": 5_000_000, "dsg_iter": 200, "sbp_iter": 4000, "s3gd_epochs": 3.0,
        "tsgs3vm_unlabeled": None, "batch": 4096, "block": 256, "repeat": 5, "warm_fits": True,
    },
    "small": {
        "rff": (256, 8, 32), "rff_features": (128, 8, 32), "response": (256, 8, 8),
        "water_level": 3000, "water_level_biased": 600, "prox_sgd": (300, 12, 5, 8),
        "rows": 200, "synthetic_rows": 96, "dsg_iter": 2, "sbp_iter": 3, "s3gd_epochs": 0.1,
        "tsgs3vm_unlabeled": 100, "batch": 32, "block": 8, "repeat": 1, "warm_fits": False,
    },
}


def device_roofline(backend):
    """Peak FP32 FMA rate (flop/s) and memory bandwidth (byte/s) of the backend's device.

    Each figure is read from CuPy's ``Device().attributes`` (cudaDevAttr* names
    without the prefix), else ``getDeviceProperties`` (CUDA 13 dropped the clocks
    from it), else Numba's device attributes. The simulator, or a device that
    reports none of them, gets :data:`NOMINAL_H100`, marked ``nominal``.
    """
    info = dict(NOMINAL_H100)
    if backend.name == "cuda":
        try:
            info = _read_device()
        except Exception as exc:  # noqa: BLE001 - the report goes on with nominal figures, saying why
            info["read_error"] = f"{type(exc).__name__}: {exc}"
    info["peak_flops"] = info["sms"] * info["fp32_lanes"] * 2 * info["clock_hz"]
    info["peak_bytes"] = 2 * info["mem_clock_hz"] * info["bus_bits"] / 8  # double data rate
    return info


def _read_device():
    import cupy

    dev = cupy.cuda.Device()
    attrs = dev.attributes
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)

    def read(attr, prop, numba_attr):
        value = attrs.get(attr) or props.get(prop)
        if not value:
            from numba import cuda

            value = getattr(cuda.get_current_device(), numba_attr, 0)
        if not value:
            msg = f"the device reports neither attribute {attr!r}, property {prop!r} nor {numba_attr}"
            raise RuntimeError(msg)
        return int(value)

    cc = divmod(int(dev.compute_capability), 10)  # "90" -> (9, 0), "100" -> (10, 0)
    name = props.get("name", b"")
    return {
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "compute_capability": f"{cc[0]}.{cc[1]}",
        "sms": read("MultiProcessorCount", "multiProcessorCount", "MULTIPROCESSOR_COUNT"),
        "clock_hz": 1e3 * read("ClockRate", "clockRate", "CLOCK_RATE"),  # kHz
        "fp32_lanes": _FP32_LANES.get(cc, 128),
        "mem_clock_hz": 1e3 * read("MemoryClockRate", "memoryClockRate", "MEMORY_CLOCK_RATE"),
        "bus_bits": read("GlobalMemoryBusWidth", "memoryBusWidth", "GLOBAL_MEMORY_BUS_WIDTH"),
        "memory_bytes": int(props.get("totalGlobalMem", 0)),
        "nominal": False,
    }


def _median_seconds(bk, fn, repeat):
    """Median wall time of ``fn`` after one warm-up call (compiles), synchronised.
    The simulator compiles nothing: no warm-up there (a dry run's time goes to it)."""
    if bk.name != "cudasim":
        fn()
        bk.synchronize()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        bk.synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


# --- section 1: tests ----------------------------------------------------------------------


def run_tests(out, pytest_args, data):
    """``pytest -m cuda`` in a subprocess; returns its summary and exit code."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "-p", "no:cacheprovider", *pytest_args]
    env = dict(os.environ)
    if data:
        env["KBACKENDS_DATA"] = str(data)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, cwd=Path(__file__).resolve().parents[1])
    seconds = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    (out / "tests.log").write_text(log)
    summary = [line for line in log.splitlines() if re.search(r"\d+ (passed|failed|error|skipped)", line)]
    return {"command": " ".join(cmd[1:]), "returncode": proc.returncode, "seconds": seconds,
            "summary": summary[-1].strip("= ") if summary else "(no summary line: see tests.log)"}


# --- section 2: ops against the roofline ---------------------------------------------------------


CHUNK_VARIANT = "@1GiB"  # an op name's suffix: the device measured with 1 GiB chunks, no cpu column
NUMBA_VARIANT = "@numba"  # ... measured with Numba's own launches (KBACKENDS_FAST_LAUNCH=0), no cpu column


def _with_launch_setting(make, name, value):
    """``make(bk)``'s callable run with ``_cuda_launch.<name> = value`` (the chunk
    budget, or the launch path), restored after each call."""
    from kbackends.kernels import _cuda_launch as launch

    def make_with(bk):
        fn = make(bk)

        def run():
            saved = getattr(launch, name)
            setattr(launch, name, value)
            try:
                return fn()
            finally:
                setattr(launch, name, saved)

        return run

    return make_with


def _op_cases(sizes, rng):
    """(name, shape text, flops, bytes, make(bk) -> callable) per op, float32."""
    from kbackends import ops
    from kbackends.random import omega_block

    def rff_case(op, n, d, m):
        X = rng.standard_normal((n, d), dtype=np.float32)
        other = rng.standard_normal(n if op == "rff_weighted_sum" else m, dtype=np.float32)

        def make(bk):
            omega, phase = omega_block(0, 0, m, d, gamma=0.1, dtype="float32", backend=bk)
            Xb, ob = bk.asarray(X), bk.asarray(other)
            fn = getattr(ops, op)
            if op == "rff_features":
                return lambda: fn(Xb, omega, phase, backend=bk, check_finite=False)
            return lambda: fn(Xb, omega, phase, ob, backend=bk, check_finite=False)

        out_bytes = 4 * n * m if op == "rff_features" else 4 * (n + m)
        return op, f"n={n}, d={d}, m={m}", 2.0 * n * d * m + 2.0 * n * m, 4.0 * (n * d + m * d + m) + out_bytes, make

    cases = [rff_case("rff_predict", *sizes["rff"]), rff_case("rff_weighted_sum", *sizes["rff"])]
    # The same two ops with 4x the scratch a chunk (1 GiB): the H100 run found them bound by
    # the host's ~0.6 ms a chunk (62 chunks); device only, the cpu engine has no chunks.
    for op in ("rff_predict", "rff_weighted_sum"):
        name, shape, flops, nbytes, make = rff_case(op, *sizes["rff"])
        cases.append((f"{name}{CHUNK_VARIANT}", shape + ", 1 GiB chunks", flops, nbytes,
                      _with_launch_setting(make, "CHUNK_BYTES", 1 << 30)))
    cases.append(rff_case("rff_features", *sizes["rff_features"]))

    n, d, b = sizes["response"]
    X = rng.standard_normal((n, d), dtype=np.float32)
    y = np.where(rng.random(n) < 0.5, 1, -1).astype(np.float32)
    idx = rng.choice(n, b, replace=False).astype(np.int64)
    coef, c = rng.random(b, dtype=np.float32), np.zeros(n, dtype=np.float32)

    def make_response(bk):
        args = [bk.asarray(a) for a in (X, idx, coef, y, c)]
        return lambda: ops.kernel_response_update(*args, kernel="rbf", gamma=0.1, backend=bk, check_finite=False)

    cases.append(("kernel_response_update", f"n={n}, d={d}, |idx|={b}, rbf", 2.0 * n * d * b,
                  4.0 * (n * d + 3 * n + b * d), make_response))

    n = sizes["water_level"]
    heights = rng.standard_normal(n, dtype=np.float32)

    def make_level(bk, n=n):
        hb = bk.asarray(heights)
        return lambda: ops.water_level(hb, 0.01 * n, backend=bk, check_finite=False)

    # the roofline is one read of the heights; the radix bracketing reads them 5 times (float32)
    cases.append(("water_level", f"one segment of {n} float32", 0.0, 4.0 * n, make_level))

    n = sizes["water_level_biased"]
    labels = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int64)
    responses = rng.standard_normal(n, dtype=np.float32)

    def make_biased(bk, n=n):
        cb, yb = bk.asarray(responses), bk.asarray(labels)
        return lambda: ops.water_level_biased(cb, yb, 0.01 * n, backend=bk, check_finite=False)

    cases.append(("water_level_biased", f"n={n} float32", 0.0, 4.0 * n + 8.0 * n, make_biased))

    n, d, p, steps = sizes["prox_sgd"]
    Xs = rng.standard_normal((n, d), dtype=np.float32)
    cls = (rng.random(n) < 0.3).astype(np.int64)
    batches = rng.integers(0, n, (steps, p))
    sw = np.ones(n, dtype=np.float32)

    def make_prox(bk):
        from kbackends._registry import get_kernel

        run = get_kernel("prox_sgd_run", bk)
        args = [bk.asarray(a) for a in (Xs, cls, np.zeros(d + 1, dtype=np.float32), batches, sw,
                                        np.zeros((0, d), dtype=np.float32), np.zeros((2, 0, d + 1), dtype=np.float32),
                                        np.zeros((0, 1), dtype=np.int64), np.zeros((0, 1), dtype=np.float32))]
        return lambda: run(*args, xp=bk.xp, method="sgd", loss="logistic", beta=10.0, eta=0.1, l1=0.0, l2=1e-3,
                           k_in=steps, n_outer=1, record_step=0)

    cases.append(("prox_sgd_run", f"{steps} steps of batch {p}, d={d} (sgd)", 4.0 * steps * p * d,
                  4.0 * steps * p * (d + 2), make_prox))
    # The launch-bound ops again through Numba's own launches, against run_kernel's
    # cuda.core path in the same run (the H100 run found ~0.3-0.6 ms of host time a
    # Numba launch): the difference is the host time the fast path saves.
    for case in list(cases):
        if case[0] in ("rff_predict", "kernel_response_update", "water_level", "water_level_biased", "prox_sgd_run"):
            name, shape, flops, nbytes, make = case
            cases.append((f"{name}{NUMBA_VARIANT}", shape + ", Numba's launches", flops, nbytes,
                          _with_launch_setting(make, "FAST_LAUNCH", False)))
    return cases


def run_ops(bk, cpu, roof, sizes, skip, rows, budget):
    """Append one row per op to ``rows``; ``budget()`` is False once time is up."""
    rng = np.random.default_rng(0)
    for name, shape, flops, nbytes, make in _op_cases(sizes, rng):
        if name in skip:
            continue
        row = {"op": name, "shape": shape, "flops": flops, "bytes": nbytes}
        if not budget():
            row["device_error"] = "skipped: the --max-seconds budget was spent"
            rows.append(row)
            continue
        model = max(flops / roof["peak_flops"], nbytes / roof["peak_bytes"])
        row["model_s"] = model
        for label, backend in (("device", bk), ("cpu", cpu)):
            if label == "cpu" and (name.endswith(CHUNK_VARIANT) or name.endswith(NUMBA_VARIANT)):
                continue
            try:
                seconds = _median_seconds(backend, make(backend), sizes["repeat"] if label == "device" else 1)
                row[f"{label}_s"] = seconds
            except Exception as exc:  # noqa: BLE001 - the report goes on; the error is its finding
                row[f"{label}_error"] = f"{type(exc).__name__}: {exc}"
        if "device_s" in row:
            row["gflops"] = flops / row["device_s"] / 1e9
            row["gbytes"] = nbytes / row["device_s"] / 1e9
            row["roofline_pct"] = 100.0 * model / row["device_s"]
            if "cpu_s" in row:
                row["speedup_vs_cpu"] = row["cpu_s"] / row["device_s"]
        rows.append(row)
        budget(saved=True)


# --- section 3: whole fits --------------------------------------------------------------------


def _subsample(rng, rows, *arrays):
    if rows is None or rows >= arrays[0].shape[0]:
        return arrays
    pick = rng.choice(arrays[0].shape[0], rows, replace=False)
    return tuple(a[pick] for a in arrays)


def _fits(sizes, data):
    """(name, dataset text, prepare() -> (fit(backend, warm), predict(model, X, backend), X_test, y_test)).

    ``fit(bk, warm=True)`` is the same fit on a few hundred rows for a couple of
    iterations: it compiles (or loads) the kernels outside the timed fit."""
    from algorithms import dsg
    from algorithms import s3gd
    from algorithms import sbp
    from algorithms import tsgs3vm
    from algorithms.datasets import load

    rows, small_rng = sizes["rows"], np.random.default_rng(0)
    engine = {"batch_size": sizes["batch"], "block_size": sizes["block"]}

    def labelled(name):
        X, y, Xt, yt = load(name, data)
        X, y = _subsample(small_rng, rows, X, y)
        Xt, yt = _subsample(small_rng, rows, Xt, yt)
        return X.astype(np.float32), y, Xt.astype(np.float32), yt

    def dsg_ijcnn1():
        X, y, Xt, yt = labelled("ijcnn1")
        kw = {"gamma": 1.0, "precondition": 0.1, "n_iter": sizes["dsg_iter"], "random_state": 0, **engine}
        return _warmable(lambda bk, k, w: dsg.fit(X[:k], y[:k], backend=bk, **{**kw, **w}), {"n_iter": 2}), \
            dsg.predict, Xt, yt

    def dsg_a9a_csr():  # the sparse path: CSR rows (cupyx on the device), never densified
        X, y, Xt, yt = load("a9a", data, sparse=True)
        X, y = _subsample(small_rng, rows, X, y)
        Xt, yt = _subsample(small_rng, rows, Xt, yt)
        X, Xt = X.astype(np.float32), Xt.astype(np.float32)
        kw = {"gamma": 0.05, "n_iter": sizes["dsg_iter"], "early_stopping": False, "random_state": 0, **engine}
        return _warmable(lambda bk, k, w: dsg.fit(X[:k], y[:k], backend=bk, **{**kw, **w}),
                         {"n_iter": 2}), dsg.predict, Xt, yt

    def tsgs3vm_skin():
        from algorithms.bench.tsgs3vm import split

        X_l, y_l, X_u, X_t, y_t = split("skin", 0, data, sizes["tsgs3vm_unlabeled"])
        X_t, y_t = _subsample(small_rng, rows, X_t, y_t)
        kw = {"random_state": 0, **engine}
        if rows is not None:
            kw["n_iter"] = sizes["dsg_iter"]
        X_l, X_u = X_l.astype(np.float32), X_u.astype(np.float32)

        def fit(bk, k, w):
            return tsgs3vm.fit(X_l, y_l, X_u[:k], backend=bk, **{**kw, **w})

        return _warmable(fit, {"n_iter": 2}), tsgs3vm.predict, X_t.astype(np.float32), y_t

    def tsgsu_a9a():
        # SU data from a9a's training rows (the paper's protocol: pairs of one class,
        # unlabeled rows at the class prior); the prior given, the larger class (-1) +1.
        from algorithms import tsgsu

        X, y, Xt, yt = labelled("a9a")
        n_pairs, n_unlabeled = (5_000, 10_000) if rows is None else (40, 80)
        X_s, X_u = tsgsu.make_su_data(X, y, n_pairs, n_unlabeled, random_state=0)
        prior = float(np.mean(y == -1))
        kw = {"prior": prior, "positive_class": -1, "negative_class": 1, "random_state": 0,
              "n_iter": 100 if rows is None else 2, "batch_size": 1000 if rows is None else 16}

        def fit(bk, k, w):
            return tsgsu.fit(X_s[: k // 2] if k else X_s, X_u[:k] if k else X_u, backend=bk, **{**kw, **w})

        return _warmable(fit, {"n_iter": 2}), tsgsu.predict, Xt, yt

    def as_csr(*arrays):  # a9a as LIBSVM gives it: CSR rows (moved to the device once on cuda)
        import scipy.sparse

        return tuple(scipy.sparse.csr_matrix(a) for a in arrays)

    def sbp_a9a(sparse=False):
        X, y, Xt, yt = labelled("a9a")
        if sparse:
            X, Xt = as_csr(X, Xt)
        kw = {"nu": 0.011 if rows is None else 0.2, "gamma": 0.05, "bias": True, "n_iter": sizes["sbp_iter"],
              "random_state": 0}
        return _warmable(lambda bk, k, w: sbp.fit(X[:k], y[:k], backend=bk, **{**kw, **w}), {"n_iter": 3}), \
            sbp.predict, Xt, yt

    def s3gd_a9a(sparse=False):
        X, y, Xt, yt = labelled("a9a")
        if sparse:
            X, Xt = as_csr(X, Xt)
        kw = {"method": "s3gd", "step": 1.0, "lam": 1e-3, "max_epochs": sizes["s3gd_epochs"], "random_state": 0,
              "checkpoint": 1e9}
        if rows is not None:
            kw.update(n_anchors=5, kmeans_sample=200, kmeans_iter=1, inner_iter=4)
        return _warmable(lambda bk, k, w: s3gd.fit(X[:k], y[:k], backend=bk, **{**kw, **w}),
                         {"max_epochs": 0.2, "n_anchors": 5, "kmeans_sample": 200, "kmeans_iter": 1}), \
            s3gd.predict, Xt, yt

    def dsg_defaults():
        # What users run: DSGClassifier() with default arguments on the data as
        # load_svmlight_file gives it (CSR float64; ijcnn1 is dense in fact and made dense
        # once), moved to the device once, computed in float32.
        from algorithms import DSGClassifier

        X, y, Xt, yt = load("ijcnn1", data, sparse=True)
        X, y = _subsample(small_rng, rows, X, y)
        Xt, yt = _subsample(small_rng, rows, Xt, yt)
        short = {"n_iter": 2, "batch_size": sizes["batch"], "block_size": sizes["block"]} if rows is not None else {}

        def fit(bk, k, w):
            return DSGClassifier(backend=bk, random_state=0, **{**short, **w}).fit(X[:k], y[:k])

        return _warmable(fit, {"n_iter": 2}), lambda est, Xt, backend: est.predict(Xt), Xt, yt

    def dsg_synthetic():
        n = sizes["synthetic_rows"]
        rng = np.random.default_rng(1)
        X = rng.standard_normal((n + n // 10, 20), dtype=np.float32)
        y = np.where((X[:, :3] ** 2).sum(1) + 0.3 * rng.standard_normal(X.shape[0]) > 2.4, 1, -1)
        n_iter = max(1, math.ceil(n / engine["batch_size"]))  # one pass
        kw = {"gamma": 0.1, "precondition": 0.1, "n_iter": n_iter, "random_state": 0, **engine}
        return _warmable(lambda bk, k, w: dsg.fit(X[:k or n], y[:k or n], backend=bk, **{**kw, **w}),
                         {"n_iter": 2}), dsg.predict, X[n:], y[n:]

    def dsg_distributed():
        # Issue 17 on a GPU host: the same DSG fit as dask arrays of CuPy chunks (NumPy
        # for the cpu column) on a one-worker distributed.LocalCluster; the time
        # includes the cluster's start and the chunks' transfer to the worker.
        X, y, Xt, yt = labelled("ijcnn1")
        kw = {"gamma": 1.0, "precondition": 0.1, "n_iter": sizes["dsg_iter"], "random_state": 0, **engine}

        def fit(bk, k, w):
            import dask.array as da
            from distributed import Client, LocalCluster

            Xk, yk = bk.asarray(X[:k]), y[:k]
            chunk = -(-Xk.shape[0] // 4)  # four row chunks
            with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
                    Client(cluster):
                Xd = da.from_array(Xk, chunks=(chunk, -1), asarray=False)
                yd = da.from_array(yk, chunks=(chunk,))
                model = dsg.fit(Xd, yd, backend=bk, **{**kw, **w})
            return model

        return _warmable(fit, {"n_iter": 2}), dsg.predict, Xt, yt

    return [
        ("dsg-ijcnn1", "DSG on ijcnn1", dsg_ijcnn1),
        ("dsg-ijcnn1-dask", "DSG on ijcnn1, dask array of 4 chunks on a 1-worker LocalCluster (issue 17)",
         dsg_distributed),
        ("tsgs3vm-skin", "TSGS3VM on Skin_NonSkin (200 labels)", tsgs3vm_skin),
        ("tsgsu-a9a", "TSGSU on a9a SU data (5,000 pairs, 10,000 unlabeled)", tsgsu_a9a),
        ("sbp-a9a", "SBP on a9a", sbp_a9a),
        ("s3gd-a9a", "S3GD on a9a", s3gd_a9a),
        ("dsg-synthetic", f"DSG, one pass over {sizes['synthetic_rows']:,} synthetic rows", dsg_synthetic),
        # What users run beyond the acceptance rows: default arguments, float64, sparse.
        ("dsg-defaults-ijcnn1", "DSGClassifier() defaults on ijcnn1, float64 input", dsg_defaults),
        ("dsg-a9a-csr", "DSG on a9a as CSR", dsg_a9a_csr),
        ("sbp-a9a-csr", "SBP on a9a as CSR", lambda: sbp_a9a(sparse=True)),
        ("s3gd-a9a-csr", "S3GD on a9a as CSR", lambda: s3gd_a9a(sparse=True)),
    ]


def _warmable(fit, short):
    """``fit(bk, rows, overrides)`` as ``fit(bk, warm)``: all rows, or 256 rows with ``short``."""

    def run(bk, warm=False):
        return fit(bk, 256, short) if warm else fit(bk, None, {})

    return run


def _timed_fit(bk, fit, predict, Xt, yt, warm):
    """(fit seconds, test accuracy) of a fit, after a warm-up fit on a few rows
    (compilation, outside the timer) if ``warm``."""
    from kbackends._xp_utils import to_numpy

    if warm:
        fit(bk, warm=True)
    bk.synchronize()
    start = time.perf_counter()
    model = fit(bk)
    bk.synchronize()
    seconds = time.perf_counter() - start
    from kbackends.ops import is_sparse

    pred = np.asarray(to_numpy(predict(model, Xt if is_sparse(Xt) else bk.asarray(Xt), backend=bk)))
    return seconds, float(np.mean(pred == np.asarray(yt)))


def _profile_fit(bk, fit, key, path):
    """One more device fit under cProfile: where the host's time goes (on a GPU, the
    launches), appended to ``path`` (the 25 costliest functions by own time)."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    fit(bk)
    bk.synchronize()
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
    with open(path, "a") as f:
        f.write(f"## {key}\n{text.getvalue()}\n")


# Fits timed a third time on the device with Numba's own launches (KBACKENDS_FAST_LAUNCH=0):
# what the cuda.core launch path saves a whole fit, in the same run.
NUMBA_FITS = ("dsg-ijcnn1", "sbp-a9a", "s3gd-a9a-csr")


def run_fits(bk, cpu, sizes, data, skip, rows, budget, profile=None):
    """Append one row per fit to ``rows``; ``budget()`` is False once time is up.
    With ``profile`` (a file path), each device fit is profiled once more into it."""
    from kbackends.kernels import _cuda_launch as launch

    for key, title, prepare in _fits(sizes, data):
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
            counts, fast = dict(launch.launch_counts), launch.FAST_LAUNCH
            launch.FAST_LAUNCH = fast and label != "device_numba"
            try:
                row[f"{label}_s"], row[f"{label}_acc"] = _timed_fit(backend, fit, predict, Xt, yt, sizes["warm_fits"])
            except Exception as exc:  # noqa: BLE001 - the report goes on; the error is its finding
                row[f"{label}_error"] = f"{type(exc).__name__}: {exc}"
                row[f"{label}_trace"] = traceback.format_exc(limit=4)
            finally:
                launch.FAST_LAUNCH = fast
            if label == "device":  # which path the fit's launches took (warm-up and prediction included)
                row["launches"] = {k: launch.launch_counts[k] - counts[k] for k in counts}
        if "device_s" in row and "cpu_s" in row:
            row["speedup_vs_cpu"] = row["cpu_s"] / row["device_s"]
        if profile is not None and "device_s" in row and budget():
            _profile_fit(bk, fit, key, profile)
        rows.append(row)
        budget(saved=True)


# --- the report ------------------------------------------------------------------------------


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def _ms(row, key):
    return _fmt(row[key] * 1e3 if key in row else None, ".3f")


def _pct(row, key):
    return _fmt(100 * row[key] if key in row else None, ".2f")


def markdown(report):
    dev, lines = report["device"], []
    lines += ["# GPU report", "",
              (f"{report['started']} UTC, {report['seconds']:.1f} s in all; backend `{report['backend']}`, "
               f"sizes `{report['sizes']}`; host {report['host']}."), "",
              "## Device", ""]
    lines.append(f"{dev['name']}: {dev['sms']} SMs x {dev['fp32_lanes']} FP32 lanes at {dev['clock_hz'] / 1e9:.3f} GHz "
                 f"-> **{dev['peak_flops'] / 1e12:.1f} TFLOP/s** FP32 FMA; memory {dev['mem_clock_hz'] / 1e9:.3f} GHz x "
                 f"{dev['bus_bits']} bits x 2 -> **{dev['peak_bytes'] / 1e12:.2f} TB/s**"
                 + (" (nominal figures: no device was read" + (f"; {dev['read_error']}" if "read_error" in dev else "")
                    + ")" if dev.get("nominal") else "") + ".")
    lines += ["", "## Tests", ""]
    tests = report.get("tests")
    if tests is None:
        lines.append("skipped (`--pytest-args none`).")
    else:
        lines.append(f"`{tests['command']}`: **{tests['summary']}** (exit {tests['returncode']}, "
                     f"{tests['seconds']:.1f} s; output in tests.log).")
    lines += ["", "## Ops against the roofline", "",
              ("float32; model = max(flops / FP32 peak, bytes / bandwidth); % roofline = model / measured "
               "(median of warm calls); cpu = the cpu engine on the same arrays, same run."), "",
              "| op | shape | GFLOP | MB | model ms | device ms | GFLOP/s | GB/s | % roofline | cpu ms | vs cpu |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["ops"]:
        lines.append(f"| {r['op']} | {r['shape']} | {r['flops'] / 1e9:.3g} | {r['bytes'] / 1e6:.3g} | {_ms(r, 'model_s')} | "
                     f"{_ms(r, 'device_s')} | {_fmt(r.get('gflops'), '.1f')} | {_fmt(r.get('gbytes'), '.1f')} | "
                     f"{_fmt(r.get('roofline_pct'), '.1f')} | {_ms(r, 'cpu_s')} | {_fmt(r.get('speedup_vs_cpu'), '.1f')}x |")
        for key in ("device_error", "cpu_error"):
            if key in r:
                lines.append(f"| {r['op']} | {key}: {r[key][:200]} |||||||||||")
    lines += ["", "## Whole fits against the cpu engine", "",
              ("launches: the device fit's kernel launches through cuda.core / through Numba; device s with "
               "Numba's launches: the same fit with `KBACKENDS_FAST_LAUNCH=0`, same run."), "",
              "| fit | device s | device acc % | cpu s | cpu acc % | speed-up | launches | device s with Numba's launches |",
              "|---|---|---|---|---|---|---|---|"]
    for r in report["fits"]:
        counts = r.get("launches")
        launches = "-" if counts is None else f"{counts['fast']} / {counts['numba']}"
        lines.append(f"| {r['title']} | {_fmt(r.get('device_s'), '.3f')} | {_pct(r, 'device_acc')} | "
                     f"{_fmt(r.get('cpu_s'), '.3f')} | {_pct(r, 'cpu_acc')} | {_fmt(r.get('speedup_vs_cpu'), '.1f')}x | "
                     f"{launches} | "
                     f"{_fmt(r.get('device_numba_s'), '.3f')} |")
        for key in ("error", "device_error", "cpu_error", "device_numba_error"):
            if key in r:
                lines.append(f"| {r['title']} | {key}: {r[key][:200]} |||||||")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kbackends gpu-report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for report.md, report.json and tests.log")
    parser.add_argument("--backend", default="cuda", help="cuda (a GPU) or cudasim (the simulator, for a dry run)")
    parser.add_argument("--small", action="store_true", help="tiny sizes: a dry run")
    parser.add_argument("--data", help="data folder (default: $KBACKENDS_DATA or ../shared/data)")
    parser.add_argument("--pytest-args", default="",
                        help="extra pytest arguments for the test section, one quoted string (write"
                             " --pytest-args='-k EXPR' with '=' when it starts with a dash); 'none' skips it")
    parser.add_argument("--max-seconds", type=float, default=540.0,
                        help="start no new item after this many seconds (the GPU host allows ten minutes a command);"
                             " the report is rewritten after every item, so a cut run keeps what it measured")
    parser.add_argument("--parts", default="tests,ops,fits",
                        help="which sections to run, comma-separated (e.g. 'tests,ops' in one call and 'fits' in the"
                             " next, to keep each call inside the GPU host's ten minutes)")
    parser.add_argument("--profile", action="store_true",
                        help="profile each device fit once more on the host (cProfile) into DIR/profiles.txt:"
                             " where an iteration's host time goes")
    parser.add_argument("--skip", action="append", default=[],
                        help="an op or fit to leave out (e.g. rff_features, sbp-a9a, dsg-synthetic:cpu); repeatable")
    args = parser.parse_args(argv)
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    unknown = parts - {"tests", "ops", "fits"}
    if unknown:
        parser.error(f"--parts: unknown section(s) {sorted(unknown)}; choose from tests, ops, fits")

    import kbackends

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.data:
        os.environ["KBACKENDS_DATA"] = str(args.data)
    bk, cpu = kbackends.resolve(args.backend), kbackends.resolve("cpu")
    sizes = SIZES["small" if args.small else "full"]
    skip = set(args.skip)
    started = time.perf_counter()
    report = {"started": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "backend": bk.name,
              "sizes": "small" if args.small else "full", "host": f"{platform.node()}, {os.cpu_count()} cpus",
              "device": device_roofline(bk)}

    def progress(text):
        print(f"[gpu-report {time.perf_counter() - started:7.1f} s] {text}", flush=True)

    report["seconds"] = 0.0
    if args.pytest_args.strip() == "none" or "tests" not in parts:
        report["tests"] = None
    else:
        progress("tests ...")
        report["tests"] = run_tests(out, args.pytest_args.split(), args.data)
        progress(report["tests"]["summary"])

    def budget(saved=False):
        """Write the report so far (after an item); say whether time is left for another."""
        if saved:
            report["seconds"] = time.perf_counter() - started
            (out / "report.json").write_text(json.dumps(report, indent=1, default=str))
            (out / "report.md").write_text(markdown(report))
            rows = report["fits"] or report["ops"]
            if rows:
                row = rows[-1]
                progress(f"{row.get('op', row.get('fit'))}: " + ", ".join(
                    f"{k} {v:.4g}" for k, v in row.items() if k.endswith(("_s", "_acc")) and isinstance(v, float)))
        return time.perf_counter() - started < args.max_seconds

    report["ops"], report["fits"] = [], []
    switch = sys.getswitchinterval()
    if bk.name == "cudasim":  # the simulator's block manager polls with the GIL held (see testing)
        from kbackends.testing import SIMULATOR_SWITCH_INTERVAL

        sys.setswitchinterval(SIMULATOR_SWITCH_INTERVAL)
    try:
        if "ops" in parts:
            progress("ops ...")
            run_ops(bk, cpu, report["device"], sizes, skip, report["ops"], budget)
        if "fits" in parts:
            progress("fits ...")
            run_fits(bk, cpu, sizes, args.data, skip, report["fits"], budget,
                     profile=out / "profiles.txt" if args.profile else None)
    finally:
        sys.setswitchinterval(switch)
    budget(saved=True)
    progress(f"written {out / 'report.md'}")
    return report
