"""The documentation site (mkdocs.yml): it builds with warnings as errors, its API
reference names every public name of both packages, and the README's links resolve."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import algorithms
import kbackends

ROOT = Path(__file__).resolve().parents[1]


def _referenced(page, package):
    """The ``::: package.name`` entries of an API page (the names mkdocstrings renders)."""
    text = (ROOT / "docs" / "api" / page).read_text()
    return re.findall(rf"^::: {package}\.(\w+)$", text, flags=re.MULTILINE)


@pytest.mark.parametrize(("package", "page"), [(algorithms, "algorithms.md"), (kbackends, "kbackends.md")],
                         ids=["algorithms", "kbackends"])
def test_api_reference_lists_every_public_name(package, page):
    names = _referenced(page, package.__name__)
    public = set(package.__all__)
    assert public <= set(names), f"missing from docs/api/{page}: {sorted(public - set(names))}"
    extra = {n for n in names if n not in public}  # public modules documented beside __all__
    assert all(f"{package.__name__}.{n}" in sys.modules or hasattr(package, n) for n in extra), extra


def test_readme_links_resolve():
    text = (ROOT / "README.md").read_text()
    links = [link for link in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text) if "://" not in link]
    assert links
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, missing


@pytest.mark.slow  # ~30 s: imports both packages, runs the gallery's examples
def test_docs_build_with_warnings_as_errors(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    pytest.importorskip("mkdocs_gallery")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    site = tmp_path / "site"
    # the gallery's pages are generated into docs/generated (git-ignored); a previous build's would
    # be reused unexecuted: the examples run in this build
    shutil.rmtree(ROOT / "docs" / "generated", ignore_errors=True)
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(site)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for package, page in ((algorithms, "algorithms"), (kbackends, "kbackends")):
        html = (site / "api" / page / "index.html").read_text()
        rendered = set(re.findall(rf'id="{package.__name__}\.(\w+)"', html))
        assert set(package.__all__) <= rendered, sorted(set(package.__all__) - rendered)
    guide = (site / "api" / "algorithms" / "index.html").read_text()
    assert "warm_start" in guide and "n_jobs" in guide  # the estimators' Parameters, filled in at import
    assert "Unreleased" in (site / "changelog" / "index.html").read_text()
    for example in sorted((ROOT / "examples").glob("plot_*.py")):
        page = re.sub(r"<[^>]+>", "", (site / "generated" / "gallery" / example.stem / "index.html").read_text())
        assert re.search(r"accuracy\s+\d\.\d{3}", page), example.name  # its printed output, not only its code
        assert list((site / "generated" / "gallery" / "images").glob(f"mkd_glr_{example.stem}_*.png")), example.name


def test_ci_runs_the_readmes_test_command():
    """.ci/run's command is the README's test command, character for character."""
    command = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    bash_blocks = re.findall(r"^```bash\n(.*?)^```", (ROOT / "README.md").read_text(), flags=re.MULTILINE | re.DOTALL)
    assert command.startswith("python -m pip install")
    assert any(block.strip() == command for block in bash_blocks), command
