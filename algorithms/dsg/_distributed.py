"""DSG on dask arrays (:mod:`algorithms.distributed`): what the whole data fix, and a
worker's rows as its one source."""

from __future__ import annotations

import numpy as np

from kbackends import to_numpy

from ..distributed import Prepared, as_dask_rows, first_rows, row_chunked
from ._targets import targets


def prepare(arguments, seed):
    """The classes of the whole ``y`` (a few rows carrying each for the problem's build)."""
    import dask.array as da

    X = row_chunked(arguments["X"], "X")
    y = as_dask_rows(arguments["y"], X.chunks[0], "y")
    loss = arguments.get("loss", "hinge")
    shift = None
    if loss == "squared":
        classes = None
        tiny_y = y[:2].compute()
        mean, std = (float(v) for v in da.compute(y.astype("float64").mean(), y.astype("float64").std()))
        shift = (mean, std if std > 0 else 1.0)
    else:
        classes = np.asarray(da.unique(y).compute())
        tiny_y = classes
    tiny_X = first_rows(X, len(tiny_y))
    if tiny_X.shape[0] < len(tiny_y):
        tiny_y = tiny_y[: tiny_X.shape[0]]
    return Prepared(tiny={"X": tiny_X, "y": tiny_y}, rowsets=[[X, y]],
                    context={"classes": classes, "loss": loss, "shift": shift}, pooled=[X], target_shift=shift)


def rows(parts, context, bk, dtype):
    """DSG's one source: rows and their loss targets, classes fixed by the whole y."""
    X, y = parts[0]
    xp = bk.xp
    classes = context["classes"]
    n = X.shape[0]
    if classes is None:
        y_matrix = targets(y, xp.astype(X, getattr(xp, dtype)), bk, "squared", shift=context.get("shift"))[0]
        return [(X, y_matrix)]
    # Append every class once so this chunk's encoding is the global one, then drop them.
    y_all = np.concatenate([to_numpy(y), np.asarray(classes)])
    dummy = xp.zeros((y_all.shape[0], 0), dtype=getattr(xp, dtype))
    y_matrix = targets(y_all, dummy, bk, context["loss"])[0]
    return [(X, y_matrix[:n])]
