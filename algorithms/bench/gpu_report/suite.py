"""Section 1 of the GPU report: the cuda test suite in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]  # the checkout: pytest finds tests/ and this tree's packages from it


def run_tests(out, pytest_args, data):
    """``pytest -m cuda`` in a subprocess; returns its summary and exit code."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "-p", "no:cacheprovider", *pytest_args]
    env = dict(os.environ)
    if data:
        env["KBACKENDS_DATA"] = str(data)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, cwd=ROOT)
    seconds = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    (out / "tests.log").write_text(log)
    summary = [line for line in log.splitlines() if re.search(r"\d+ (passed|failed|error|skipped)", line)]
    return {"command": " ".join(cmd[1:]), "returncode": proc.returncode, "seconds": seconds,
            "summary": summary[-1].strip("= ") if summary else "(no summary line: see tests.log)"}


def pytest_logged(tests, log_path, *, verbose=False, workers=0, timeout=0, simulator=False, report_all=False):
    """``pytest -m cuda`` over ``tests`` in a subprocess, its log written as it runs (a step
    killed at its limit keeps it); ``workers`` > 1: pytest-xdist's processes where it is
    installed; ``timeout``: pytest-timeout's limit a test where it is installed. Returns the
    command, its exit code and the log's text."""
    cmd = [sys.executable, "-m", "pytest", "-v" if verbose else "-q", "-m", "cuda", "-p", "no:cacheprovider"]
    if report_all:
        cmd.append("-rA")
    cmd += list(tests)
    if workers > 1 and _installed("xdist"):
        cmd += ["-n", str(workers)]
    if timeout and _installed("pytest_timeout"):
        cmd += ["--timeout", str(timeout)]
    env = dict(os.environ)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    with Path(log_path).open("w") as log_file:
        proc = subprocess.run(cmd, cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT, env=env, check=False)
    return " ".join(cmd[1:]), proc.returncode, Path(log_path).read_text()


def summary_line(log):
    """pytest's last summary line (counts of passed, failed, ...), or a note that there is none."""
    lines = [line for line in log.splitlines() if re.search(r"\d+ (passed|failed|errors?|skipped|deselected)", line)]
    return lines[-1].strip("= ") if lines else "(no summary line: see the log)"


_OUTCOME = re.compile(r"(?:^|\s)(FAILED|ERROR)\s+(tests/\S+)|(tests/\S+::\S+)\s+(FAILED|ERROR)\b")


def failed_tests(log):
    """The tests a pytest log names as failed or in error, in order, once each: from the
    outcome lines of ``-v`` (with or without pytest-xdist) and from ``-rA`` / ``-rf``
    summaries, so a log cut short by a limit still names those that ended."""
    found = []
    for line in log.splitlines():
        match = _OUTCOME.search(line)
        if match:
            name = match.group(2) or match.group(3)
            if name not in found:
                found.append(name)
    return found


def _installed(module):
    import importlib.util

    return importlib.util.find_spec(module) is not None
