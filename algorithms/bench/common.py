"""What every bench section shares: the row of the table, timing and memory, the Markdown tables."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ._optional import pyplot, require

ALIGNMENTS = ("left", "right", "center")


@dataclass
class Row:
    """One method on one dataset.

    ``accuracy`` is the test accuracy (a mean over seeds when ``accuracy_std``
    is given); times are seconds on the same machine in the same run.
    """

    dataset: str
    method: str
    accuracy: float
    fit_s: float
    predict_s: float
    peak_mb: float
    size: str
    accuracy_std: float | None = None

    @property
    def total_s(self):
        return self.fit_s + self.predict_s


class PeakMemory:
    """Peak of the memory traced by ``tracemalloc`` above the level at entry.

    NumPy reports its array buffers to tracemalloc, so this counts the arrays a
    fit allocates (ours and scikit-learn's); native buffers that bypass it
    (libsvm's kernel cache, BLAS workspaces, Numba's small scratch vectors) are
    not counted. It slows allocation-heavy code, so it runs in a second,
    untimed fit.
    """

    def __enter__(self):
        import tracemalloc

        self._started = not tracemalloc.is_tracing()
        if self._started:
            tracemalloc.start()
        tracemalloc.reset_peak()
        self.base = tracemalloc.get_traced_memory()[0]
        return self

    def __exit__(self, *exc):
        import tracemalloc

        self.peak = tracemalloc.get_traced_memory()[1]
        if self._started:
            tracemalloc.stop()

    @property
    def added_mb(self):
        return max(0, self.peak - self.base) / 2**20


def measure(fit, predict, yt, memory=True):
    """Time ``fit()`` and ``predict(model)``; trace a second fit's peak memory.

    Returns ``(model, accuracy, fit_s, predict_s, peak_mb)`` (peak_mb is NaN
    when ``memory`` is False).
    """
    start = time.perf_counter()
    model = fit()
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    pred = predict(model)
    predict_s = time.perf_counter() - start
    mb = float("nan")
    if memory:
        with PeakMemory() as mem:
            fit()
        mb = mem.added_mb
    return model, float(np.mean(np.asarray(pred) == yt)), fit_s, predict_s, mb



def subsample(X, y, n, seed):
    """At most ``n`` rows drawn at random without replacement (order kept), as a tuple."""
    if len(y) <= n:
        return X, y
    keep = np.sort(np.random.default_rng(seed).choice(len(y), n, replace=False))
    return X[keep], y[keep]


def _cell(value):
    """A value as the text of one cell: ``|`` escaped (GitHub and Python-Markdown read
    ``\\|`` as a literal bar) and line breaks as ``<br>`` (a row is one line)."""
    return "<br>".join(str(value).replace("|", "\\|").splitlines())


def pipe_table(header, rows, align=None):
    """A Markdown pipe table (GitHub's), each cell the text the caller formatted.

    Cells are written with ``str`` and never re-parsed as numbers, so ``"1.50"``
    stays ``1.50``; columns are padded to a common width.

    Parameters
    ----------
    header : sequence
        The columns' titles.
    rows : iterable of sequences
        One sequence of cells per row, as many as ``header``; none gives the header
        and its rule alone.
    align : sequence of {"left", "right", "center"}, optional
        One per column, written into the rule under the header; all left when None.

    Returns
    -------
    str
        The header line, the rule and one line per row, without a final newline.

    Raises
    ------
    ValueError
        A row or ``align`` whose length is not the header's, or an unknown alignment.
    ModuleNotFoundError
        When tabulate (the ``bench`` extra) is not installed.
    """
    tabulate = require("tabulate", "the bench's tables").tabulate
    header = [_cell(title) for title in header]
    align = ["left"] * len(header) if align is None else list(align)
    if len(align) != len(header) or not set(align) <= set(ALIGNMENTS):
        raise ValueError(f"align must give one of {ALIGNMENTS} per column ({len(header)}), got {align}")
    cells = [[_cell(value) for value in row] for row in rows]
    for row in cells:
        if len(row) != len(header):
            raise ValueError(f"a row of {len(row)} cells under a header of {len(header)}: {row}")
    return tabulate(cells, headers=header, tablefmt="pipe", disable_numparse=True, colalign=align)


def row_text(header, row):
    """One row of a table as a plain line (``title: cell`` pairs), for progress printed
    while the table is still being measured."""
    return "; ".join(f"{title}: {cell}" for title, cell in zip(header, row))


def markdown_table(rows, peer):
    """Rows as a Markdown table; the ratio column is fit + predict time over ``peer``'s
    on the same dataset (the peer's row must be among ``rows``)."""
    header = ["dataset", "method", "accuracy", "fit s", "predict s", f"time vs {peer}", "peak traced MiB", "size"]
    cells = []
    for r in rows:
        ref = next((p for p in rows if p.dataset == r.dataset and p.method == peer), None)
        ratio = f"{r.total_s / ref.total_s:.2f}x" if ref and ref.total_s > 0 else "-"
        acc = f"{100 * r.accuracy:.2f}%"
        if r.accuracy_std is not None:
            acc += f" ± {100 * r.accuracy_std:.2f}"
        mb = "-" if np.isnan(r.peak_mb) else f"{r.peak_mb:.0f}"
        cells.append([r.dataset, r.method, acc, f"{r.fit_s:.2f}", f"{r.predict_s:.2f}", ratio, mb, r.size])
    return pipe_table(header, cells)


def accuracy_time_figure(rows, title):
    """Accuracy against fit + predict time (log scale), one panel per dataset."""
    plt = pyplot()  # matplotlib: the bench extra
    import matplotlib.ticker  # loaded with pyplot

    datasets = list(dict.fromkeys(r.dataset for r in rows))
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 4.5), squeeze=False)
    for ax, name in zip(axes[0], datasets):
        for r in (r for r in rows if r.dataset == name):
            ax.scatter(r.total_s, 100 * r.accuracy, s=50, label=r.method)
            ax.annotate(r.method, (r.total_s, 100 * r.accuracy), textcoords="offset points", xytext=(5, 4), fontsize=8)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("fit + predict time (s, log scale)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"{title}: {name}")
        ax.legend(fontsize=7, loc="best")
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig
