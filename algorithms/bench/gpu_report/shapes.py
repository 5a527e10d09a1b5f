"""The GPU check's ``shapes`` step: the fused random-feature kernels' launch shape swept on
the device (rows or frequencies a thread, features a thread in ``rff_predict``, rows a
thread in ``rff_weighted_sum``, threads a block), each shape timed on the same arrays as
cuBLAS's path (``kbackends.launch_settings(fused=False)``) in the same run, and its
results compared with that path's.

A white-box sweep: it sets the constants of ``kbackends/kernels/rff/_cuda_fused.py``
(through :func:`kbackends.testing.kernel_module`) one shape at a time and restores them.
The shape the library uses is the fastest of the last sweep on an H100
(docs/benchmarks.md, "GPU"); a new device or compiler is the reason to run it again.
"""

from __future__ import annotations

import json
import time

import numpy as np

from kbackends import launch_settings, ops, to_numpy
from kbackends.random import omega_block
from kbackends.testing import kernel_module

# Changes from the library's shape, one a row ("R": rows or frequencies a thread).
CHANGES = ({}, {"R": 2}, {"R": 3}, {"SEGMENT": 128}, {"SEGMENT": 512}, {"ROW_BLOCK": 64}, {"ROW_BLOCK": 128},
           {"THREADS": 64}, {"THREADS": 256})
CONSTANTS = ("SEGMENT", "ROW_BLOCK", "THREADS", "rows_per_thread")


def _median_ms(bk, fn, repeat):
    out = fn()  # compiles the shape's kernels
    bk.synchronize()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        bk.synchronize()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times)), to_numpy(out)


def sweep_shapes(bk, n=1_000_000, d=28, m=4096, changes=CHANGES, repeat=7):
    """One row per shape: its ``rff_predict`` and ``rff_weighted_sum`` milliseconds (float32,
    median of ``repeat`` warm calls) and their largest difference from cuBLAS's path
    (relative to that path's largest value); the first row is cuBLAS's path."""
    fused = kernel_module("rff", "cuda_fused")
    rng = np.random.default_rng(0)
    X = bk.asarray(rng.standard_normal((n, d), dtype=np.float32))
    coef = bk.asarray(rng.standard_normal(m, dtype=np.float32))
    g = bk.asarray(rng.standard_normal(n, dtype=np.float32))
    omega, phase = omega_block(0, 0, m, d, gamma=0.1, dtype="float32", backend=bk)
    ops_by_name = {"predict": lambda: ops.rff_predict(X, omega, phase, coef, backend=bk, check_finite=False),
                   "weighted_sum": lambda: ops.rff_weighted_sum(X, omega, phase, g, backend=bk, check_finite=False)}
    reference, row = {}, {"shape": "cuBLAS's product in memory"}
    with launch_settings(fused=False):
        for name, fn in ops_by_name.items():
            row[f"{name}_ms"], reference[name] = _median_ms(bk, fn, repeat)
    rows = [row]
    saved = {name: getattr(fused, name) for name in CONSTANTS}
    base = {"R": saved["rows_per_thread"](d), "SEGMENT": saved["SEGMENT"], "ROW_BLOCK": saved["ROW_BLOCK"],
            "THREADS": saved["THREADS"]}
    try:
        for change in changes:
            shape = {**base, **change}
            fused.SEGMENT, fused.ROW_BLOCK, fused.THREADS = shape["SEGMENT"], shape["ROW_BLOCK"], shape["THREADS"]
            fused.rows_per_thread = lambda d_, itemsize=4, R=shape["R"]: R
            row = {"shape": json.dumps(change) if change else f"the library's {json.dumps(base)}"}
            try:
                for name, fn in ops_by_name.items():
                    row[f"{name}_ms"], out = _median_ms(bk, fn, repeat)
                    ref = reference[name]
                    row[f"{name}_rel_diff"] = float(np.max(np.abs(out - ref)) / max(np.max(np.abs(ref)), 1e-30))
            except Exception as exc:  # noqa: BLE001 - a shape that fails is reported with its error
                row["error"] = f"{type(exc).__name__}: {exc}"
            rows.append(row)
    finally:
        for name, value in saved.items():
            setattr(fused, name, value)
    return rows
