"""``python -m algorithms gpu-check --out DIR``: the GPU check in at most five minutes.

The full ``gpu-report`` takes ten minutes or more; a GPU host is lent for 15 minutes
of device time, its start included. This check runs the steps that decide, cheapest
and most decisive first, each in a process of its own under its own time limit (a
step that hangs or runs long is killed and recorded as such, and the check goes on):

1. ``env``: versions (numpy, cupy, numba, numba-cuda, cuda-core), where the fast launch
   comes from, the device, and one op launched both ways (cuda.core and Numba) with
   the results compared bit for bit;
2. ``gate``: the cuda tests of the launch path and the engine's kernels;
3. ``fits``: the decisive fits against the cpu engine (DSG on ijcnn1, 200 iterations of
   4,096; SBP on a9a, 4,000 iterations; ``DSGClassifier()`` on ijcnn1 as CSR float64;
   TSGSU on a9a SU data), with the launches by path and the device pool's high-water mark,
   and a host-side profile of each device fit in ``DIR/profiles.txt``;
4. ``probe``: the host cost of a launch, the preconditioner's solve by LU, Cholesky and
   batched, one DSG iteration eager against the same iteration replayed as a CUDA graph
   (:mod:`.probe`);
5. ``scale``: one pass of DSG over 10^7 and 10^8 rows x 28 features drawn on the device
   (``make_nonlinear_classes``' rule), a 16,384-feature budget;
6. ``ops``: rff_predict and rff_weighted_sum at n = 10^6, d = 28, m = 4,096, water_level
   on 10^7 values, against the device's roofline and the cpu engine;
7. ``sweep``: DSG at 50,000, 200,000 and 1,000,000 rows against the cpu engine (the
   device twice: the default step, then the iterations replayed as CUDA graphs);
8. ``asv``: the asv suites' cuda rows (rff, water-fill), timed as asv would (setup, one
   warm call, the median of repeats), with their cpu rows beside them;
   ``suite``: the whole cuda suite, each outcome logged as it ends (``DIR/suite.log``;
   the failed tests named from the log, also when the step is cut by its limit; not in
   the usual call: about 4 minutes on 14 processes);
9. ``shapes``: the fused rff kernels' launch shapes swept against cuBLAS's path
   (:mod:`.shapes`; for a new device, not in the usual call).

It writes ``DIR/check.json`` and ``DIR/check.md`` after every step (a step's output
goes to the console; the gate's log to ``DIR/tests.log``). ``--small`` shrinks every
size (the simulator runs it end to end as a dry run:
``NUMBA_ENABLE_CUDASIM=1 python -m algorithms gpu-check --out DIR --small --backend cudasim``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import kbackends
from algorithms import dsg
from kbackends import launch_counts, launch_path, launch_settings, ops
from kbackends.random import omega_block
from kbackends.testing import prepare_simulator

from ..common import pipe_table
from . import SIZES
from .device import device_roofline, pool_mb, pool_reset
from .fits import (
    VARIANTS,
    _Data,
    fits,
    run_fits,
    variant_rows,
)
from .markdown import markdown as report_markdown
from .ops import _op_cases, run_ops
from .probe import probe
from .shapes import sweep_shapes
from .suite import failed_tests, pytest_logged, summary_line
from .sweep import size_sweep

STEPS = ("env", "gate", "fits", "probe", "scale", "ops", "sweep", "asv", "suite", "shapes")
LOGS = {"gate": "tests.log", "suite": "suite.log"}  # the test steps' logs in DIR, read for failures after each
# Each step's limit in seconds on a GPU host, and on the simulator (a dry run).
LIMITS = {"env": 40, "gate": 100, "fits": 150, "probe": 60, "ops": 90, "scale": 110, "sweep": 60, "asv": 40,
          "suite": 290, "shapes": 60}
SMALL_LIMITS = {"env": 60, "gate": 240, "fits": 240, "probe": 60, "ops": 120, "scale": 120, "sweep": 120,
                "asv": 120, "suite": 240, "shapes": 120}
GATE_TESTS = ("tests/kbackends/test_cuda_launch.py", "tests/kbackends/test_cuda_ops.py",
              "tests/kbackends/test_engine_kernels.py", "tests/kbackends/test_gauss_newton_kernels.py",
              "tests/kbackends/test_loss_kernels.py", "tests/algorithms/test_sbp_kernels.py",
              "tests/algorithms/test_sbp_cuda_run.py", "tests/algorithms/test_sbp_cuda_window.py",
              "tests/algorithms/test_engine_window.py")
SMALL_GATE = ("tests/kbackends/test_loss_kernels.py",)
GRAPH_TEST = "test_windows_captured_then_replayed_give_the_eager_model"  # the gate's graph = eager
FIT_KEYS = ("dsg-ijcnn1", "sbp-a9a", "dsg-defaults-ijcnn1", "tsgsu-a9a")
OPS = ("rff_predict", "rff_weighted_sum", "rff_features", "rff_predict@cublas", "rff_weighted_sum@cublas",
       "rff_predict@d32", "rff_predict@d32@cublas", "water_level", "water_level_biased", "kernel_response_update",
       "rff_predict@numba")
ROOT = Path(__file__).resolve().parents[3]


def _step_main(argv=None):
    """One step in a process of its own (what :func:`run` starts; the user's command is
    ``python -m algorithms gpu-check``)."""
    parser = argparse.ArgumentParser(prog="python -m algorithms.bench.gpu_report.check")
    parser.add_argument("--step", choices=STEPS, required=True)
    parser.add_argument("--part", required=True, help="the file the step writes its figures to")
    parser.add_argument("--out", required=True)
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--data")
    parser.add_argument("--fits", help="comma-separated fit and variant keys (default: FIT_KEYS and every variant)")
    parser.add_argument("--gate", help="comma-separated test files (default: GATE_TESTS)")
    args = parser.parse_args(argv)
    return run_step(args.step, args)


def run(out, *, backend="cuda", small=False, data=None, max_seconds=300.0, only=STEPS, fits=None, gate=None,
        progress=print):
    """Run the steps (``only``, in the module's order), each in its own process and
    under its own limit; returns the report (a dict), also written to ``out``.
    ``fits``: the fits step's rows (comma-separated keys of :func:`.fits.fits` and
    :data:`.fits.VARIANTS`; default :data:`FIT_KEYS` and every variant); ``gate``: the
    gate's test files (default :data:`GATE_TESTS`)."""
    if isinstance(only, str):
        only = [s.strip() for s in only.split(",") if s.strip()]
    unknown = set(only) - set(STEPS)
    if unknown:
        msg = f"unknown step(s) {sorted(unknown)}; choose from {', '.join(STEPS)}"
        raise ValueError(msg)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report = {"started": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "backend": backend, "small": small,
              "steps": {}}
    limits = SMALL_LIMITS if small else LIMITS
    parts = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    for step in STEPS:
        if step not in only:
            continue
        left = max_seconds - (time.perf_counter() - started)
        limit = min(limits[step], left)
        if limit < 5:
            report["steps"][step] = {"status": "skipped: the check's time budget is spent"}
            continue
        progress(f"[gpu-check {time.perf_counter() - started:6.1f} s] {step} (limit {limit:.0f} s)", flush=True)
        part = parts / f"{step}.json"
        cmd = [sys.executable, "-m", "algorithms.bench.gpu_report.check", "--step", step, "--part", str(part),
               "--out", str(out), "--backend", backend] + (["--small"] if small else []) + \
            (["--data", str(data)] if data else []) + (["--fits", fits] if fits else []) + \
            (["--gate", gate] if gate else [])
        t0 = time.perf_counter()
        status = _run_limited(cmd, limit)
        entry = json.loads(part.read_text()) if part.exists() else {}
        entry.update({"status": status, "seconds": round(time.perf_counter() - t0, 2)})
        if step in LOGS and (out / LOGS[step]).exists():  # read here: a step killed at its limit names them too
            entry["failed_tests"] = failed_tests((out / LOGS[step]).read_text())
        report["steps"][step] = entry
        report["seconds"] = round(time.perf_counter() - started, 1)
        (out / "check.json").write_text(json.dumps(report, indent=1, default=str))
        (out / "check.md").write_text(markdown(report))
    progress(f"[gpu-check {time.perf_counter() - started:6.1f} s] written {out / 'check.md'}", flush=True)
    return report


def _run_limited(cmd, limit):
    """Run ``cmd`` in a process group of its own; kill the group at ``limit`` seconds."""
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True)
    try:
        rc = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return f"killed at its limit ({limit:.0f} s)"
    return "ok" if rc == 0 else f"failed (exit {rc})"


# --------------------------------------------------------------------------- steps


class _Part:
    """A step's figures, written to its part file after every item (a killed step keeps them)."""

    def __init__(self, path):
        self.path, self.data = Path(path), {}

    def __setitem__(self, key, value):
        self.data[key] = value
        self.path.write_text(json.dumps(self.data, default=str))

    def __getitem__(self, key):
        return self.data[key]


def run_step(step, args):
    """One step in this process: its figures go to ``args.part``."""
    if args.data:
        os.environ["KBACKENDS_DATA"] = str(args.data)
    part = _Part(args.part)

    bk = kbackends.resolve(args.backend)
    if bk.name == "cudasim":  # the switch interval and the shared-array lock (see testing)
        prepare_simulator()
    globals()[f"_step_{step}"](bk, kbackends.resolve("cpu"), args, part)
    return 0


def _versions():
    names = ("numpy", "cupy-cuda13x", "cupy-cuda12x", "numba", "numba-cuda", "cuda-core", "cuda-bindings",
             "scipy", "scikit-learn")
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    found["python"] = sys.version.split()[0]
    return found


def _step_env(bk, cpu, args, part):
    part["versions"] = _versions()
    part["launch_path"] = launch_path() if bk.name == "cuda" else "simulator: Numba's launch"
    part["device"] = device_roofline(bk)
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20, check=False)
        part["nvidia_smi"] = smi.stdout.strip() or smi.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        part["nvidia_smi"] = f"{type(exc).__name__}: {exc}"
    rng = np.random.default_rng(0)
    n, d, m = (256, 8, 32) if args.small else (3000, 28, 512)
    X = bk.asarray(rng.standard_normal((n, d), dtype=np.float32))
    a = bk.asarray(rng.standard_normal(m, dtype=np.float32))
    omega, phase = omega_block(0, 0, m, d, gamma=0.1, dtype="float32", backend=bk)
    results, counts = {}, {}
    for label, fast in (("numba", False), ("fast", True), ("fast_again", True)):
        before = launch_counts()
        with launch_settings(fast=fast):
            results[label] = np.asarray(bk.to_numpy(ops.rff_predict(X, omega, phase, a, backend=bk)))
        after = launch_counts()
        counts[label] = {k: after[k] - before[k] for k in before}
    part["launches"] = counts
    part["fast_equals_numba_bitwise"] = bool(np.array_equal(results["fast_again"], results["numba"]))


def _step_gate(bk, cpu, args, part):
    tests = _keys(args.gate) or (SMALL_GATE if args.small else GATE_TESTS)
    command, returncode, log = pytest_logged(tests, Path(args.out) / LOGS["gate"], report_all=True,
                                             workers=0 if args.small else min(8, os.cpu_count() or 1),
                                             simulator=bk.name == "cudasim")
    part["command"], part["summary"], part["returncode"] = command, summary_line(log), returncode
    outcomes = [line.split()[0] for line in log.splitlines() if GRAPH_TEST in line and line.split()[0].isupper()]
    part["graph_equals_eager"] = (f"{outcomes[0].lower()} ({GRAPH_TEST})" if outcomes
                                  else "not run (test_engine_window.py is not in this gate)")


def _keys(text):
    return tuple(k.strip() for k in (text or "").split(",") if k.strip())


def _sizes(small):
    return SIZES["small" if small else "full"]


def _step_fits(bk, cpu, args, part):
    sizes = _sizes(args.small)
    chosen = _keys(args.fits) or (*FIT_KEYS, *(key for key, *_ in VARIANTS))
    skip = {key for key, _, _ in fits(sizes, args.data)} - set(chosen)
    # no fit timed with Numba's launches: measured once (docs/benchmarks.md "GPU", 3.1x slower
    # for DSG); the env step compares the two launches and every row counts them
    skip |= {"sbp-a9a:device_numba", "tsgsu-a9a:device_numba", "dsg-defaults-ijcnn1:device_numba",
             "dsg-ijcnn1:device_numba"}
    rows = []

    def budget(saved=False):
        if saved:
            part["fits"] = rows
        return True

    profile = None if args.small or bk.name != "cuda" else Path(args.out) / "profiles.txt"
    run_fits(bk, cpu, sizes, args.data, skip, rows, budget, profile=profile)
    part["fits"] = rows
    # the same fits another way, same run
    variant_rows(bk, _Data(sizes, args.data), sizes["warm_fits"], rows, saved=lambda: budget(saved=True),
                 keys=chosen, profile=profile)


def _step_probe(bk, cpu, args, part):
    for key, value in probe(bk).items():
        part[key] = value


def _step_ops(bk, cpu, args, part):
    sizes = _sizes(args.small)
    names = {case[0] for case in _op_cases(sizes, np.random.default_rng(0))}
    rows = []

    def budget(saved=False):
        if saved:
            part["ops"] = rows
        return True

    run_ops(bk, cpu, device_roofline(bk), sizes, names - set(OPS), rows, budget)
    part["ops"] = rows


def nonlinear_rows(xp, n, d, seed, noise=0.04, dtype="float32"):
    """``algorithms.datasets.make_nonlinear_classes``' rule drawn with ``xp``'s own
    generator (on the device for CuPy): standard normal rows, the sign of
    ``sum_{j<3} sin(x_2j) cos(x_2j+1)`` flipped with probability ``noise``; labels -1 / +1."""
    rng = xp.random.default_rng(seed) if hasattr(xp.random, "default_rng") else np.random.default_rng(seed)
    X = rng.standard_normal((n, d), dtype=dtype)
    s = xp.zeros(n, dtype=dtype)
    for j in range(3):
        s += xp.sin(X[:, 2 * j]) * xp.cos(X[:, 2 * j + 1])
    flip = rng.random(n, dtype=dtype) < noise
    y = xp.where((s > 0) != flip, 1, -1).astype(xp.int8)
    return X, y


def _step_scale(bk, cpu, args, part):
    """One pass of DSG over rows drawn on the device, a 16,384-feature budget."""
    xp = bk.xp
    sizes = (256,) if args.small else (10_000_000, 100_000_000)
    budget, batch, block = (32, 64, 16) if args.small else (16_384, 4_096, 256)
    Xt, yt = nonlinear_rows(xp, 500 if args.small else 100_000, 28, seed=99)
    yt = np.asarray(bk.to_numpy(yt))
    rows = []
    for n in sizes:
        row = {"rows": n, "features": 28, "feature_budget": budget, "batch_size": batch}
        try:
            pool_reset(bk)
            X, y = nonlinear_rows(xp, n, 28, seed=n)
            y = np.asarray(bk.to_numpy(y))  # labels on the host, as a loader gives them; X stays on the device
            row["data_mb"] = X.nbytes / 2**20
            n_iter = math.ceil(n / batch)
            start = time.perf_counter()
            model = dsg.fit(X, y, n_iter=n_iter, batch_size=batch, block_size=block, feature_budget=budget,
                            early_stopping=False, random_state=0, backend=bk)
            bk.synchronize()
            row["fit_s"] = time.perf_counter() - start
            row["iterations"] = n_iter
            row["rows_per_s"] = n / row["fit_s"]
            row["device_pool_mb"] = pool_mb(bk)
            pred = dsg.predict(model, Xt, backend=bk)
            row["accuracy"] = float(np.mean(np.asarray(bk.to_numpy(pred)) == yt))
            del X, y, model
        except Exception as exc:  # noqa: BLE001 - the size is reported with its error
            row["error"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
        part["scale"] = rows


def _step_sweep(bk, cpu, args, part):
    rows = []

    def saved():
        part["sweep"] = rows

    size_sweep(bk, cpu, args.small, rows, saved)


# The asv suites whose cuda rows the check times, with the parameters it runs (the
# acceptance sizes; a dry run takes the smallest of each list).
ASV_SUITES = {"bench_rff": ("RFFPredict", "RFFWeightedSum", "RFFProductPath"),
              "bench_waterfill": ("WaterLevel", "WaterLevelBiased")}


def _step_asv(bk, cpu, args, part):
    """The asv suites' rows as asv times them (setup, a warm call, the median of repeats),
    for the device and the cpu engine: what ``asv run --python=same --quick`` would record."""
    import importlib
    import itertools

    sys.path.insert(0, str(ROOT / "asv_bench"))
    rows = []
    for module_name, classes in ASV_SUITES.items():
        module = importlib.import_module(f"benchmarks.{module_name}")
        for cls_name in classes:
            cls = getattr(module, cls_name)
            params = list(cls.params)
            # one row a suite: float32, the largest size (a dry run: the smallest); every path
            rest = [p if name == "path" else [p[0] if args.small or isinstance(p[0], str) else p[-1]]
                    for name, p in zip(cls.param_names[1:], params[1:])]
            engines = (bk.name, "cpu") if "cpu" in params[0] else (bk.name,)
            for backend_name, combo in itertools.product(engines, itertools.product(*rest)):
                suite = cls()
                if args.small and hasattr(suite, "m"):  # the simulator runs every thread in Python
                    suite.n, suite.m = 256, 32
                for name in sorted(n for n in dir(suite) if n.startswith("time_")):
                    row = {"suite": f"{module_name}.{cls_name}.{name}", "backend": backend_name,
                           "params": list(combo)}
                    try:
                        suite.setup(backend_name, *combo)
                        fn = getattr(suite, name)
                        fn(backend_name, *combo)
                        times = []
                        for _ in range(1 if args.small or backend_name == "cpu" else 5):
                            start = time.perf_counter()
                            fn(backend_name, *combo)
                            times.append(time.perf_counter() - start)
                        row["median_s"] = float(np.median(times))
                    except NotImplementedError as exc:
                        row["skipped"] = str(exc)
                    except Exception as exc:  # noqa: BLE001
                        row["error"] = f"{type(exc).__name__}: {exc}"
                    rows.append(row)
                    part["asv"] = rows


def _step_suite(bk, cpu, args, part):
    """The whole cuda suite (``--small``: the small gate's file), each test's outcome logged
    as it ends (``-v``), on up to 14 processes, 90 s a test at most."""
    tests = SMALL_GATE if args.small else ("tests",)
    command, returncode, log = pytest_logged(tests, Path(args.out) / LOGS["suite"], verbose=True,
                                             workers=0 if args.small else min(14, os.cpu_count() or 1), timeout=90,
                                             simulator=bk.name == "cudasim")
    part["command"], part["summary"], part["returncode"] = command, summary_line(log), returncode


def _step_shapes(bk, cpu, args, part):
    """The fused rff kernels' launch shapes (:mod:`.shapes`); a dry run: tiny arrays, two shapes."""
    if args.small:
        part["shapes"] = sweep_shapes(bk, n=40, d=5, m=20, changes=({}, {"R": 2}), repeat=1)
    else:
        part["shapes"] = sweep_shapes(bk)


# --------------------------------------------------------------------------- report


def _fmt(v, spec=".3g"):
    if v is None:
        return "-"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def markdown(report):
    """The check's report as Markdown: one section per step, tables where it has rows."""
    steps = report["steps"]
    lines = [(f"# GPU check ({report['backend']}{', small sizes' if report['small'] else ''}), "
              f"{report['started']} UTC, {report.get('seconds', 0)} s"), ""]
    lines.append(pipe_table(["step", "status", "seconds"],
                            [[name, s.get("status"), s.get("seconds")] for name, s in steps.items()]))
    env = steps.get("env", {})
    if env.get("versions"):
        lines += ["", "## env", "", "versions: " + ", ".join(f"{k} {v}" for k, v in env["versions"].items()),
                  f"launch path: {env.get('launch_path')}; device: {env.get('nvidia_smi', '-')}",
                  (f"fast launch = Numba's, bit for bit: {env.get('fast_equals_numba_bitwise')}; "
                   f"launches by path: {env.get('launches')}")]
    for name in LOGS:
        tested = steps.get(name, {})
        if tested:
            lines += ["", f"## {name}", "", f"`{tested.get('command', '')}`: {tested.get('summary', '-')}",
                      "failed: " + (", ".join(tested.get("failed_tests") or []) or "none named in the log")]
            if name == "gate":
                lines.append(f"graph = eager: {tested.get('graph_equals_eager', '-')}")
    if steps.get("fits", {}).get("fits") or steps.get("ops", {}).get("ops"):
        sub = {"fits": steps.get("fits", {}).get("fits", []), "ops": steps.get("ops", {}).get("ops", []),
               "device": env.get("device") or device_roofline(kbackends.resolve("cpu")),  # nominal when env did not run
               "tests": None, "started": report["started"], "backend": report["backend"],
               "sizes": "small" if report["small"] else "full", "host": "-", "seconds": 0.0}
        lines += ["", report_markdown(sub)]
    probe = steps.get("probe", {})
    if probe:
        lines += ["", "## probe", ""]
        for key in ("launch", "solve", "iteration", "ahead_iteration", "fused_resources", "sbp_run", "skipped"):
            if key in probe:
                lines.append(f"- {key}: " + json.dumps(probe[key], default=str))
    for key, cols in (("scale", ("rows", "feature_budget", "batch_size", "iterations", "fit_s", "rows_per_s",
                                 "accuracy", "device_pool_mb", "data_mb", "error")),
                      ("sweep", ("rows", "device_s", "device_graph_s", "cpu_s", "speedup_vs_cpu", "graph_speedup_vs_cpu",
                                 "device_acc", "device_graph_acc", "cpu_acc", "device_pool_mb", "device_error",
                                 "cpu_error")),
                      ("asv", ("suite", "backend", "params", "median_s", "skipped", "error")),
                      ("shapes", ("shape", "predict_ms", "weighted_sum_ms", "predict_rel_diff",
                                  "weighted_sum_rel_diff", "error"))):
        rows = steps.get(key, {}).get(key)
        if rows:
            lines += ["", f"## {key}", "", pipe_table(cols, [[_fmt(r.get(c)) for c in cols] for r in rows])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(_step_main())
