"""Fixtures of the algorithm tests: the data several test modules share."""

import re

import pytest
from sklearn.datasets import load_breast_cancer

from algorithms.datasets import load


@pytest.fixture(scope="session")
def real_data():
    """``algorithms.datasets.load``, or a skip where the data folder (../shared/data or
    $KBACKENDS_DATA) is not there: a fresh clone runs the suite without it."""

    def load_or_skip(name, **kwargs):
        try:
            return load(name, **kwargs)
        except FileNotFoundError as missing:
            pytest.skip(f"{name}: {missing}")

    return load_or_skip


@pytest.fixture(scope="session")
def cancer():
    """scikit-learn's breast cancer data, each column standardised: X (569, 30)
    float64, y (569,) in {0, 1}. Shared by the whole session: do not modify in place.
    (Not flagged read-only: the CUDA simulator copies kernel arguments back into
    host arrays, unchanged, after each launch.)"""
    X, y = load_breast_cancer(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y


@pytest.fixture
def device_tool_backend():
    """The backend a dry run of the GPU tools takes: "cudasim" under the simulator,
    "cuda" on a GPU; skipped elsewhere."""
    import os

    import kbackends

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return "cudasim"
    if "cuda" in kbackends.available_backends():
        return "cuda"
    pytest.skip("no CUDA GPU here and the simulator is off")


@pytest.fixture
def table_rows():
    """A function reading the Markdown tables in a text: for each line that starts with
    ``|`` (header, rule and rows alike), its cells, split at the bars that are not
    escaped, stripped of their padding and with ``\\|`` read back as ``|``."""

    def read(text):
        return [[cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
                for line in text.splitlines() if line.startswith("|")]

    return read
