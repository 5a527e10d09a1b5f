"""The rules of the house that a test can check (docs/architecture.md, "The floors")."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 500

# An import of a private kbackends module: kbackends._x, kbackends.kernels..., or a
# private name taken from kbackends (kbackends.testing is the public door to them).
PRIVATE = re.compile(
    r"^\s*(from|import)\s+kbackends(\.[a-z]\w*)*\.(_(?!_)\w+|kernels)\b"
    r"|^\s*from\s+kbackends(\.\w+)*\s+import\s+.*\b_[a-z]\w*",
    re.MULTILINE,
)


def _python_files(*folders):
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))]


@pytest.mark.parametrize("path", _python_files("algorithms"), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_algorithm_module_over_500_lines(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(ROOT)} has {n} lines: split it (docs/architecture.md)"


@pytest.mark.parametrize("folder", ["algorithms", "asv_bench", "tests"])
def test_no_private_kbackends_import_outside_kbackends(folder):
    found = [f"{p.relative_to(ROOT)}: {m.group(0).strip()}"
             for p in _python_files(folder) for m in PRIVATE.finditer(p.read_text())]
    assert not found, "use kbackends' public names (or kbackends.testing in tests):\n" + "\n".join(found)


def test_the_private_import_rule_sees_a_planted_import():
    assert PRIVATE.search("from kbackends._xp_utils import to_numpy")
    assert PRIVATE.search("    from kbackends.kernels.rff._xp import rff_predict")
    assert PRIVATE.search("from kbackends.ops import _checks")
    assert not PRIVATE.search("from kbackends import to_numpy, resolve")
    assert not PRIVATE.search("from kbackends.testing import oracle")
    assert not PRIVATE.search("from kbackends.__main__ import main")
