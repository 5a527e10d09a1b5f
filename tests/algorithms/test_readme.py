"""README.md's Python blocks run as written, in order, in one namespace (the README says
they are one session), and print numbers near the ones their comments show; the block
that starts a cluster (guarded by ``if __name__ == "__main__":``) runs as a saved script,
as the README tells the reader to run it. The blocks use scikit-learn's bundled or
generated data only: a fresh clone runs them with no data folder beside it."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TOLERANCE = 0.02  # |printed - README's "~value"|: float32 rounding and BLAS differ between machines
SCRIPT_GUARD = 'if __name__ == "__main__":'


def python_blocks(text):
    """The ```python blocks of ``text``, in order."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def expected_prints(block):
    """For each ``print(...)`` line with a ``# ~a, ~b`` comment: the list of figures shown."""
    out = []
    for line in block.splitlines():
        if line.lstrip().startswith("print(") and "#" in line:
            out.append([float(v) for v in re.findall(r"~(-?\d+(?:\.\d+)?)", line.split("#", 1)[1])])
    return out


def _check_printed(name, stdout, block):
    printed = [line for line in stdout.splitlines() if line.strip()]
    expected = expected_prints(block)
    assert len(printed) == len(expected), (name, printed)
    for line, figures in zip(printed, expected):
        values = [float(v) for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", line)]
        assert len(values) == len(figures), (name, line, figures)
        for got, want in zip(values, figures):
            assert abs(got - want) <= TOLERANCE, f"{name} printed {line!r}, README says {figures}"


def test_python_blocks_are_parsed():
    blocks = python_blocks(README.read_text())
    assert [len(expected_prints(b)) for b in blocks] == [1, 1, 1, 1, 1, 1, 1, 0]
    assert [SCRIPT_GUARD in b for b in blocks].count(True) == 1
    first = blocks[0].strip().splitlines()
    assert len(first) <= 10 and "shared" not in blocks[0]  # the first example: ten lines, bundled data


@pytest.mark.slow  # compiles every algorithm's kernels: ~40 s on a loaded 2-core machine
def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the blocks save model files
    namespace = {"__name__": "__readme__"}
    for k, block in enumerate(python_blocks(README.read_text())):
        if SCRIPT_GUARD in block:
            continue  # run as a script: test_readme_dask_block_runs_as_a_saved_script
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            exec(compile(block, f"README.md python block {k + 1}", "exec"), namespace)  # noqa: S102
        _check_printed(f"block {k + 1}", stdout.getvalue(), block)


@pytest.mark.slow  # a local cluster of two workers, each compiling the engine
def test_readme_dask_block_runs_as_a_saved_script(tmp_path):
    pytest.importorskip("distributed")
    (block,) = [b for b in python_blocks(README.read_text()) if SCRIPT_GUARD in b]
    script = tmp_path / "dask_block.py"
    script.write_text(block)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    _check_printed("the Dask block", done.stdout, block)
