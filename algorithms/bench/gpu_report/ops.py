"""Section 2 of the GPU report: each op's throughput against the device's roofline."""

from __future__ import annotations

import numpy as np

from kbackends import get_kernel, launch_settings, ops
from kbackends.random import omega_block

from .device import median_seconds

CUBLAS_VARIANT = "@cublas"  # an op name's suffix: the device's product through cuBLAS, not fused; no cpu column
WIDE_VARIANT = "@d32"  # ... rows of 32 values, the widest the fused kernels take; no cpu column
NUMBA_VARIANT = "@numba"  # ... measured with Numba's own launches (KBACKENDS_FAST_LAUNCH=0), no cpu column


def _with_launch_settings(make, **settings):
    """``make(bk)``'s callable run under :func:`kbackends.launch_settings` (the
    product path, or the launch path), restored after each call."""

    def make_with(bk):
        fn = make(bk)

        def run():
            with launch_settings(**settings):
                return fn()

        return run

    return make_with


def _op_cases(sizes, rng):
    """(name, shape text, flops, bytes, make(bk) -> callable) per op, float32."""
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
    # The same two ops with cuBLAS's (rows, m) product in device memory and the cos and
    # sums after it (the path before the fused kernels, and that of sparse or wider rows):
    # device only, against the fused default in the same run.
    for op in ("rff_predict", "rff_weighted_sum"):
        name, shape, flops, nbytes, make = rff_case(op, *sizes["rff"])
        cases.append((f"{name}{CUBLAS_VARIANT}", shape + ", cuBLAS product", flops, nbytes,
                      _with_launch_settings(make, fused=False)))
    # rff_predict at the widest rows the fused kernels take (32), both paths: the crossing measured
    n, _, m = sizes["rff"]
    for suffix, fused in (("", True), (CUBLAS_VARIANT, False)):
        name, shape, flops, nbytes, make = rff_case("rff_predict", n, 32, m)
        cases.append((f"{name}{WIDE_VARIANT}{suffix}", shape + ("" if fused else ", cuBLAS product"), flops, nbytes,
                      _with_launch_settings(make, fused=fused)))
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
                          _with_launch_settings(make, fast=False)))
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
            if label == "cpu" and "@" in name:  # the variants are the device's alone
                continue
            try:
                seconds = median_seconds(backend, make(backend), sizes["repeat"] if label == "device" else 1)
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
