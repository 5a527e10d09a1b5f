"""README.md's Python blocks run as written, in order, in one namespace (the README
says they are one session), and print numbers near the ones their comments show.

The only change is the data's size: ``algorithms.datasets.load`` is wrapped to return
a random subsample of each split (the code shown is the code run), so the printed
figures are compared with the README's full-data ones within a tolerance that still
tells a working example from a broken one (an inverted TSGSU prints 0.18, not 0.82).
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

import algorithms.datasets

README = Path(__file__).resolve().parents[2] / "README.md"
N_TRAIN, N_TEST = 10_000, 4_000  # a9a's SU block draws 2 * 2000 + 4000 points without replacement
TOLERANCE = 0.04  # |printed - README's "~value"|: subsampling moves accuracies by ~1-2 points


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


def _subsampling(load):
    def subsampled(name, data_dir_path=None, **kwargs):
        X, y, Xt, yt = load(name, data_dir_path, **kwargs)
        rng = np.random.default_rng(0)
        i = rng.permutation(X.shape[0])[:N_TRAIN]
        j = rng.permutation(Xt.shape[0])[:N_TEST]
        return X[i], y[i], Xt[j], yt[j]

    return subsampled


def test_python_blocks_are_parsed():
    blocks = python_blocks(README.read_text())
    assert len(blocks) == 7
    assert [len(expected_prints(b)) for b in blocks] == [3, 1, 1, 2, 1, 0, 0]


@pytest.mark.slow  # minutes on a loaded 2-core machine (240 s measured): over the 60 s of a unit test
def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch):
    for name in ("ijcnn1", "a9a"):
        try:
            algorithms.datasets.load(name)
        except (FileNotFoundError, OSError):
            pytest.skip(f"{name} is not in the data folder (set $KBACKENDS_DATA)")
    monkeypatch.setattr(algorithms.datasets, "load", _subsampling(algorithms.datasets.load))
    monkeypatch.chdir(tmp_path)  # the blocks save model files
    namespace = {"__name__": "__readme__"}
    for k, block in enumerate(python_blocks(README.read_text())):
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            exec(compile(block, f"README.md python block {k + 1}", "exec"), namespace)  # noqa: S102
        printed = [line for line in stdout.getvalue().splitlines() if line.strip()]
        expected = expected_prints(block)
        assert len(printed) == len(expected), (k + 1, printed)
        for line, figures in zip(printed, expected):
            values = [float(v) for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", line)]
            assert len(values) == len(figures), (k + 1, line, figures)
            for got, want in zip(values, figures):
                assert abs(got - want) <= TOLERANCE, f"block {k + 1} printed {line!r}, README says {figures}"
