"""The GPU check's size sweep: DSG at 50,000, 200,000 and 1,000,000 rows, the device
against the cpu engine on the same rows (:func:`size_sweep`)."""

from __future__ import annotations

import numpy as np

from algorithms import dsg
from algorithms.datasets import make_nonlinear_classes

from .device import pool_mb, pool_reset
from .fits import GRAPH16_SWITCHES, _switched, _timed_fit, _warmable


def size_sweep(bk, cpu, small, rows, saved):
    """DSG at growing sizes, device against the cpu engine on the same rows; the device
    twice: the default step, then the systems built ahead and the iterations replayed a
    window of 16 at a time as CUDA graphs (:data:`.fits.GRAPH16_SWITCHES`). A row a size
    appended to ``rows``, ``saved()`` after each."""
    sizes = (256,) if small else (50_000, 200_000, 1_000_000)
    kw = {"n_iter": 2 if small else 200, "batch_size": 64 if small else 4096,
          "block_size": 16 if small else 256, "early_stopping": False, "random_state": 0}
    Xt, yt = make_nonlinear_classes(500 if small else 100_000, 28, random_state=99, dtype=np.float32)
    # one whole untimed device fit a path first: the first timed fit of a process paid
    # one-off work the short warm-up fits do not reach
    X, y = make_nonlinear_classes(sizes[0], 28, random_state=0, dtype=np.float32)
    for graph in (False, True):
        with _switched(GRAPH16_SWITCHES if graph else (), bk):
            dsg.fit(bk.asarray(X), y, backend=bk, **kw)
    for n in sizes:
        X, y = make_nonlinear_classes(n, 28, random_state=n, dtype=np.float32)
        row = {"rows": n}
        for label, backend, switches in (("device", bk, ()), ("device_graph", bk, GRAPH16_SWITCHES),
                                         ("cpu", cpu, ())):
            try:
                pool_reset(backend)
                Xb = backend.asarray(X)  # the rows on the engine's device before the timer, as a user's are
                fit = _warmable(lambda b, k, w, Xb=Xb, y=y: dsg.fit(Xb, y, backend=b, **{**kw, **w}), {"n_iter": 2})
                with _switched(switches, backend):
                    row[f"{label}_s"], row[f"{label}_acc"] = _timed_fit(backend, fit, dsg.predict, Xt, yt, True)
                if label == "device":
                    row["device_pool_mb"] = pool_mb(backend)
            except Exception as exc:  # noqa: BLE001 - the row says why
                row[f"{label}_error"] = f"{type(exc).__name__}: {exc}"
        if "device_s" in row and "cpu_s" in row:
            row["speedup_vs_cpu"] = row["cpu_s"] / row["device_s"]
        if "device_graph_s" in row and "cpu_s" in row:
            row["graph_speedup_vs_cpu"] = row["cpu_s"] / row["device_graph_s"]
        rows.append(row)
        saved()
