"""The core install needs none of matplotlib, tabulate and h5py: fitting every algorithm
imports none of them, and pyproject's core dependencies do not list them (they come with
the `bench` extra)."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import sys
import numpy as np
from algorithms import dsg, s3gd, sbp, tsgs3vm, tsgsu
rng = np.random.default_rng(0)
X = rng.normal(size=(200, 4)); y = (X[:, 0] > 0).astype(int)
dsg.fit(X, y, n_iter=3, random_state=0)
tsgs3vm.fit(X[:40], y[:40], X[40:], n_iter=3, random_state=0)
S, U = tsgsu.make_su_data(X, 2 * y - 1, 30, 60, random_state=0, replace=True)
tsgsu.fit(S, U, prior=0.4, n_iter=3, random_state=0)
sbp.fit(X, y, nu=0.3, n_iter=50, random_state=0)
s3gd.fit(X, y, max_epochs=1, random_state=0)
print(sorted(m for m in ("matplotlib", "tabulate", "h5py") if m in sys.modules))
"""


def test_fitting_every_algorithm_imports_no_bench_dependency():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


def test_the_core_dependencies_leave_the_tools_out():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = " ".join(project["dependencies"])
    extras = project["optional-dependencies"]
    for tool in ("matplotlib", "tabulate", "h5py"):
        assert tool not in core and tool in " ".join(extras["bench"]), tool
    assert "tabulate" in " ".join(extras["test"])  # CI installs .[test] alone and runs the bench's tests
