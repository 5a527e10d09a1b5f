"""Shared by the driver and the workers: the lost-worker error and the settings."""

from __future__ import annotations

from .._models.dask_arrays import is_dask_array  # noqa: F401 (the package's public name)


class WorkerLostError(RuntimeError):
    """A distributed fit lost workers and could not recover (the message names them)."""


def _config(name, default):
    import dask

    return dask.config.get(f"kbackends.{name}", default)
