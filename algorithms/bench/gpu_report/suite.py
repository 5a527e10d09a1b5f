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
