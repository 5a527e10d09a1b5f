"""Shared by the driver and the workers: the lost-worker error, the dask test, the settings."""

from __future__ import annotations

import sys





class WorkerLostError(RuntimeError):
    """A distributed fit lost workers and could not recover (the message names them)."""


def is_dask_array(X) -> bool:
    """True for a ``dask.array.Array`` (without importing dask when it is not loaded)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)


def _config(name, default):
    import dask

    return dask.config.get(f"kbackends.{name}", default)
