"""Data-parallel and out-of-core training on Dask, and chunk-wise prediction.

``dsg.fit``, ``tsgs3vm.fit`` and ``tsgsu.fit`` hand a dask array to :func:`fit`,
which trains on the workers of the current ``distributed.Client``:

* each worker holds its own row chunks (read once from the array's graph, kept in
  the worker's memory; CuPy chunks stay on the worker's GPU) and samples its
  mini-batches from them;
* the random-feature blocks are a pure function of ``(seed, block)``, so every
  worker regenerates the same basis locally: only coefficients travel;
* the scheme is *local steps with exact periodic averaging*: every worker runs
  ``sync_every`` iterations of the ordinary engine (``_engine.run`` resumed from
  the last synchronised state), then sends the rows of the coefficients it
  changed; the driver averages the changes and sends the average back. Because
  the basis is shared, averaging the coefficients averages the functions
  exactly (the global scale factor and the step schedule depend on the
  iteration only, so they agree on every worker). One round trip per
  ``sync_every`` iterations, ``sync_every * block_size * n_outputs`` numbers
  each way (docs/architecture.md, "Distributed training", gives the choice;
  docs/benchmarks.md, "Distributed (Dask)", the measurements behind it);
* every replica (driver and workers) applies the same averaged change to the
  same synchronised state, so they stay bit-identical, and a lost worker is
  replaced by re-reading its chunks on the survivors and resuming from the last
  synchronised coefficients;
* data larger than the cluster's memory is *streamed*: each round a worker
  reads one chunk from disk (zarr, ``.npy`` memmaps, anything dask.array
  reads), steps on it and drops it, so a worker holds one chunk at a time.

Each algorithm gives a :class:`Plan`: its problem builder (``build``, the
same as its in-memory fit's, run on a few rows that carry the classes to fix the
settings, losses and model), what it reads off the whole data (``prepare``) and how
a worker's rows become its sources (``rows``). The problem is then solved on the
cluster (:meth:`algorithms._engine.Problem.solve` with the cluster's runner); the
model returned is the ordinary :class:`~algorithms.RFFModel`.

:func:`map_rows` evaluates any row-wise method (``decision_function``,
``predict``, ``predict_proba`` of every model) lazily over a dask array's row
chunks.

Options that no ``fit`` signature has are read from dask's configuration::

    with dask.config.set({"kbackends.sync_every": 10, "kbackends.mode": "stream"}):
        model = dsg.fit(X, y)

``kbackends.sync_every`` (default 8), ``kbackends.mode`` ("auto": stream when the
data exceed half the workers' memory limit; "memory"; "stream"),
``kbackends.verbose`` (progress bar; or ``verbose=1`` on the fit), ``kbackends.lost_worker_timeout`` (s,
default 30), ``kbackends.max_recoveries`` (default 3).
"""

from ._common import WorkerLostError, is_dask_array
from ._entry import (
    REPLICATE_BYTES, Plan, Prepared, as_dask_rows, check_finite, first_rows, fit, median_sample, row_chunked,
)
from ._driver import n_workers
from ._partial import partial_fit
from .._models.dask_arrays import map_rows
from ._worker import _LOCAL  # noqa: F401  (each worker's fit states; tests check they are dropped)

__all__ = [
    "is_dask_array", "fit", "map_rows", "partial_fit", "WorkerLostError", "Plan", "Prepared", "as_dask_rows",
    "first_rows", "median_sample", "row_chunked", "check_finite", "REPLICATE_BYTES", "n_workers",
]
