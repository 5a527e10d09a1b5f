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
    """``pytest -m cuda`` in a subprocess (:func:`pytest_logged`, its log ``tests.log``);
    returns its summary and exit code."""
    start = time.perf_counter()
    command, returncode, log = pytest_logged(pytest_args, out / "tests.log",
                                             env={"KBACKENDS_DATA": str(data)} if data else None)
    return {"command": command, "returncode": returncode, "seconds": time.perf_counter() - start,
            "summary": summary_line(log)}


def pytest_logged(tests, log_path, *, verbose=False, workers=0, timeout=0, simulator=False, report_all=False,
                  env=None):
    """``pytest -m cuda`` over ``tests`` (files or pytest's arguments) in a subprocess, its
    log written as it runs (a step killed at its limit keeps it); ``workers`` > 1:
    pytest-xdist's processes where it is installed; ``timeout``: pytest-timeout's limit a
    test where it is installed; ``env``: variables set for it. Returns the command, its
    exit code and the log's text."""
    cmd = [sys.executable, "-m", "pytest", "-v" if verbose else "-q", "-m", "cuda", "-p", "no:cacheprovider"]
    if report_all:
        cmd.append("-rA")
    cmd += list(tests)
    if workers > 1 and _installed("xdist"):
        cmd += ["-n", str(workers)]
    if timeout and _installed("pytest_timeout"):
        cmd += ["--timeout", str(timeout)]
    env = {**os.environ, **(env or {}), **({"NUMBA_ENABLE_CUDASIM": "1"} if simulator else {})}
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
