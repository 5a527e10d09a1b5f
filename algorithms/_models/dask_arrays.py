"""Dask arrays where the rest of the library meets them: the test for one (without
importing dask) and chunk-wise, lazy prediction over their rows. The distributed
training itself is :mod:`algorithms.distributed`."""

from __future__ import annotations

import sys

import numpy as np


def is_dask_array(X) -> bool:
    """True for a ``dask.array.Array`` (without importing dask when it is not loaded)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)



def map_rows(method, X, *args):
    """``method(*args, block)`` over the row chunks of dask array ``X``, lazily.

    Parameters
    ----------
    method : callable
        A row-wise function: ``method(*args, block)`` maps an array of shape
        (rows, n_features) to (rows,) or (rows, k) (a module's
        ``decision_function(model, X)``, an estimator's ``predict_proba``, ...).
    X : dask array of shape (n_samples, n_features)
        Row-chunked; column chunks are merged first.
    *args
        Passed before the block (the model for the module functions).

    Returns
    -------
    dask array of shape (n_samples,) or (n_samples, k)
        Chunked like ``X``'s rows, NumPy or CuPy blocks like ``X``'s.
    """
    if X.ndim != 2:
        msg = f"`X` must be 2-D, got ndim={X.ndim}"
        raise ValueError(msg)
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    # The output's shape and dtype from one row of zeros of X's own namespace.
    meta = X._meta
    probe = method(*args, _zeros_like_meta(meta, (1, X.shape[1]), X.dtype))
    if probe.ndim == 1:
        return X.map_blocks(lambda b: method(*args, b), drop_axis=1, dtype=probe.dtype,
                            meta=_zeros_like_meta(meta, (0,), probe.dtype), token="kbackends-predict")
    k = probe.shape[1]
    return X.map_blocks(lambda b: method(*args, b), chunks=(X.chunks[0], (k,)), dtype=probe.dtype,
                        meta=_zeros_like_meta(meta, (0, 0), probe.dtype), token="kbackends-predict")


def _zeros_like_meta(meta, shape, dtype):
    mod = type(meta).__module__.split(".")[0]
    if mod == "cupy":
        import cupy

        return cupy.zeros(shape, dtype=dtype)
    return np.zeros(shape, dtype=dtype)
