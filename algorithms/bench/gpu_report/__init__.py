"""``python -m algorithms gpu-report --out DIR``: the whole GPU check in one command.

Three sections, each timed on the device and against the cpu engine in the same
run, written to ``DIR/report.md`` (Markdown) and ``DIR/report.json`` (raw figures):

1. the cuda test suite (``pytest -m cuda`` in a subprocess: its summary line);
2. each op's throughput against the device's own roofline: FP32 FMA peak =
   SMs x FP32 lanes per SM x 2 x clock, memory bandwidth = 2 x memory clock x
   bus width / 8, read from the device through CuPy; the model time is
   max(flops / peak, bytes / bandwidth) and "% roofline" is model / measured;
   rff_predict and rff_weighted_sum again with cuBLAS's product in memory
   (``NAME@cublas``, device only) against the default fused kernels, and the
   launch-bound ops again through
   Numba's own launches (``NAME@numba``, ``KBACKENDS_FAST_LAUNCH=0``) against
   kbackends' cuda.core launches (both through :func:`kbackends.launch_settings`), in
   the same run;
3. whole fits (DSG on ijcnn1, in process and as a dask array of CuPy chunks on a
   one-worker distributed.LocalCluster, TSGS3VM on Skin_NonSkin, TSGSU on SU data
   drawn from a9a, SBP on a9a, S3GD on a9a, DSG over one pass of synthetic rows; then what users run: DSGClassifier()
   defaults on float64 input, DSG, SBP and S3GD on a9a as CSR): fit time and test
   accuracy on the device and on the cpu engine.

``--profile`` adds a host-side profile (cProfile) of each device fit to
``DIR/profiles.txt``: on a GPU the launches, not the kernels, bound most fits.
``--small`` shrinks every size for a dry run (the simulator runs it end to end:
``NUMBA_ENABLE_CUDASIM=1 python -m algorithms gpu-report --out DIR --small
--backend cudasim``); the simulator has no roofline, so nominal H100 figures
stand in and are labelled so. Data come from :func:`algorithms.datasets.load`
(``--data DIR`` or ``$KBACKENDS_DATA``, else ``../shared/data``). A failing
item is recorded with its error and the report goes on.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import kbackends
from kbackends.testing import prepare_simulator

from .device import NOMINAL_H100, device_roofline
from .fits import NUMBA_FITS, fits, run_fits
from .markdown import markdown
from .ops import CUBLAS_VARIANT, NUMBA_VARIANT, run_ops
from .suite import run_tests

__all__ = ["SIZES", "NOMINAL_H100", "NUMBA_FITS", "CUBLAS_VARIANT", "NUMBA_VARIANT", "device_roofline", "fits",
           "markdown", "run", "run_fits", "run_ops", "run_tests"]

PARTS = ("tests", "ops", "fits")

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


def run(out, *, backend="cuda", small=False, data=None, pytest_args="", max_seconds=540.0, parts=PARTS,
        profile=False, skip=(), progress=None):
    """Run the report's sections into the folder ``out``; returns the report (a dict).

    ``report.md`` and ``report.json`` are rewritten after every item, so a run cut
    short keeps what it measured. The arguments are the command line's options
    (``python -m algorithms gpu-report --help``); ``pytest_args`` is one string,
    "none" skips the tests; ``progress`` (default: print with the elapsed time)
    gets one line per item.

    Raises
    ------
    ValueError
        For a section of ``parts`` other than tests, ops and fits.
    """
    parts = set(parts)
    unknown = parts - set(PARTS)
    if unknown:
        msg = f"unknown section(s) {sorted(unknown)}; choose from {', '.join(PARTS)}"
        raise ValueError(msg)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if data:
        os.environ["KBACKENDS_DATA"] = str(data)
    bk, cpu = kbackends.resolve(backend), kbackends.resolve("cpu")
    sizes = SIZES["small" if small else "full"]
    skip = set(skip)
    started = time.perf_counter()
    report = {"started": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "backend": bk.name,
              "sizes": "small" if small else "full", "host": f"{platform.node()}, {os.cpu_count()} cpus",
              "device": device_roofline(bk)}
    if progress is None:
        def progress(text):
            print(f"[gpu-report {time.perf_counter() - started:7.1f} s] {text}", flush=True)

    report["seconds"] = 0.0
    if pytest_args.strip() == "none" or "tests" not in parts:
        report["tests"] = None
    else:
        progress("tests ...")
        report["tests"] = run_tests(out, pytest_args.split(), data)
        progress(report["tests"]["summary"])

    def budget(saved=False):
        """Write the report so far (after an item); say whether time is left for another."""
        if saved:
            report["seconds"] = time.perf_counter() - started
            _write(out, report, progress)
        return time.perf_counter() - started < max_seconds

    report["ops"], report["fits"] = [], []
    switch = sys.getswitchinterval()
    if bk.name == "cudasim":  # the switch interval and the shared-array lock (see testing)
        prepare_simulator()
    try:
        if "ops" in parts:
            progress("ops ...")
            run_ops(bk, cpu, report["device"], sizes, skip, report["ops"], budget)
        if "fits" in parts:
            progress("fits ...")
            run_fits(bk, cpu, sizes, data, skip, report["fits"], budget,
                     profile=out / "profiles.txt" if profile else None)
    finally:
        sys.setswitchinterval(switch)
    budget(saved=True)
    progress(f"written {out / 'report.md'}")
    return report


def _write(out, report, progress):
    """report.json and report.md as they stand; the last item's figures to ``progress``."""
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str))
    (out / "report.md").write_text(markdown(report))
    rows = report["fits"] or report["ops"]
    if rows:
        row = rows[-1]
        progress(f"{row.get('op', row.get('fit'))}: " + ", ".join(
            f"{k} {v:.4g}" for k, v in row.items() if k.endswith(("_s", "_acc")) and isinstance(v, float)))

