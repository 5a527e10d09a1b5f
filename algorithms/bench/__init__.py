"""algorithms.bench: the tools that measure the library, beside it (not its core).

Install with the ``bench`` extra, ``pip install "kbackends[bench]"``: matplotlib
(the plots), h5py (``datasets.load("usps8")``), dask and distributed (the
distributed fit's measurements) and asv; the core install has none of them, and
each is imported where it is needed, a missing one named with the extra. The
peers are scikit-learn's estimators; the SVC is oneDAL's (scikit-learn-intelex, the
``peers`` extra) where it is installed, libsvm's otherwise, and the output says which
(:func:`.protocols.svc_peer`); cuML's GPU SVC joins where it is installed.

- ``python -m algorithms bench`` (:func:`run`): every algorithm next to the tools
  users pick today, a Markdown report and PNG plots;
- ``python -m algorithms demo`` (:mod:`.demo`): the DSG family next to SVC on one
  data set (no extra needed);
- ``python -m algorithms gpu-report`` (:mod:`.gpu_report`): the whole GPU check;
- :mod:`.protocols`: the data, settings and peers one protocol fixes for the
  bench, the demo and the asv suites (``asv_bench/``);
- ``python -m algorithms.bench.<study>``: the studies behind docs/benchmarks.md
  (``distributed``, ``calibration``, ``sparse_dense``, ``sbp_defaults``,
  ``s3gd_defaults``).

Each algorithm has a section module here with ``run_section(data_dir, quick,
backend, progress) -> dict`` returning ``{"title", "rows", "peer", "markdown",
"plots"}``: rows of the shared table (:class:`Row`), the peer method the ratio
column divides by, extra Markdown (study tables), and ``(filename, Figure)``
pairs. The runner executes the sections one after the other in one process,
on the same splits for every method of a section, and writes ``results.md``
(headed by the machine, library versions and commit) and the PNG plots.
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path

from ._optional import pyplot
from .common import PeakMemory, Row, accuracy_time_figure, markdown_table, measure, subsample
from .dsg import DATASETS

__all__ = ["run", "SECTIONS", "Row", "PeakMemory", "measure", "markdown_table",
           "accuracy_time_figure", "subsample", "DATASETS"]

# Section name -> module (in the order the report shows them).
SECTIONS = {
    "dsg": "algorithms.bench.dsg",
    "tsgs3vm": "algorithms.bench.tsgs3vm",
    "tsgsu": "algorithms.bench.tsgsu",
    "sbp": "algorithms.bench.sbp",
    "s3gd": "algorithms.bench.s3gd",
    "defaults": "algorithms.bench.defaults",  # DSGClassifier() as a new user runs it (issue 14)
    "scale": "algorithms.bench.scale",  # DSGClassifier() on millions of rows (bench --only scale)
}


def machine_header(quick, backend):
    """Where and with what the numbers were measured."""
    import os
    import platform
    import subprocess

    import numba
    import numpy
    import sklearn

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"],
                                capture_output=True, text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count()
    mode = "--quick" if quick else "full"
    return (
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `python -m algorithms bench` "
        f"({mode}, backend {backend}) at commit `{commit}` on {cpu}, {cores} cores; "
        f"Python {platform.python_version()}, NumPy {numpy.__version__}, Numba {numba.__version__}, "
        f"scikit-learn {sklearn.__version__}.\n"
    )


def run(data_dir=None, out_dir="bench-out", quick=False, backend="cpu", only=None, progress=print):
    """Run the sections (all, or the names in ``only``); write results.md and the plots.

    Returns the list of section dicts.
    """
    plt = pyplot()  # matplotlib: the bench extra

    names = list(SECTIONS) if not only else list(only)
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        msg = f"unknown bench section(s) {unknown}; choose from {list(SECTIONS)}"
        raise ValueError(msg)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text = "# Benchmark results\n\n" + machine_header(quick, backend)
    sections = []
    for name in names:
        progress(f"=== section {name}")
        start = time.perf_counter()
        section = importlib.import_module(SECTIONS[name]).run_section(
            data_dir=data_dir, quick=quick, backend=backend, progress=progress)
        section["seconds"] = time.perf_counter() - start
        sections.append(section)
        text += f"\n## {section['title']}\n\n"
        if section["rows"]:
            text += markdown_table(section["rows"], section["peer"]) + "\n"
        if section.get("markdown"):
            text += "\n" + section["markdown"].rstrip() + "\n"
        for filename, fig in section.get("plots", []):
            fig.savefig(out / filename, dpi=110)
            plt.close(fig)
            text += f"\n![{filename}]({filename})\n"
        text += f"\n(section time {section['seconds']:.0f} s)\n"
        (out / "results.md").write_text(text)  # after every section: a partial run still leaves its numbers
        progress(f"=== section {name} done in {section['seconds']:.0f} s")
    progress(text)
    progress(f"written: {out / 'results.md'} and {sum(len(s.get('plots', [])) for s in sections)} plots in {out}")
    return sections
