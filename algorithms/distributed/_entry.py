"""``fit`` on dask arrays: the plan an algorithm gives (:class:`Plan`), the helpers its
``prepare`` reads the dask arrays with, and the run on the cluster."""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from kbackends import is_array, resolve

from .._boundary.validation import check_gamma, seed_from
from ._common import is_dask_array
from ._driver import _ClusterRun


def as_dask_rows(a, chunks, name):
    """``a`` (any array, or None) as a dask array with the row chunks ``chunks``."""
    import dask.array as da

    if a is None:
        return None
    if not is_dask_array(a):
        a = np.asarray(a) if not is_array(a) else a
        return da.from_array(a, chunks=(chunks,) + tuple(-1 for _ in range(a.ndim - 1)))
    a = _known_chunks(a)
    if a.shape[0] != sum(chunks):
        msg = f"`{name}` has {a.shape[0]} rows but `X` has {sum(chunks)}"
        raise ValueError(msg)
    a = a.rechunk((chunks,) + tuple(-1 for _ in range(a.ndim - 1)))
    return a


def row_chunked(X, name):
    """A 2-D dask array with known chunk sizes (computed when unknown, as after boolean
    indexing), its columns in one chunk."""
    if X.ndim != 2:
        msg = f"`{name}` must be 2-D, got ndim={X.ndim}"
        raise ValueError(msg)
    X = _known_chunks(X)
    return X.rechunk({1: -1}) if X.numblocks[1] != 1 else X


def _known_chunks(a):
    return a.compute_chunk_sizes() if any(math.isnan(c) for c in a.shape) else a


def check_finite(arguments):
    """Refuse NaN or infinity in any floating dask array among ``arguments`` (one pass over
    each, computed together), as the in-memory fit refuses them."""
    import dask

    named = [(name, a) for name, a in arguments.items()
             if is_dask_array(a) and np.dtype(a.dtype).kind in "fc"]
    if not named:
        return
    finite = dask.compute(*[a.map_blocks(lambda b: np.asarray(np.isfinite(b).all()).reshape((1,) * b.ndim),
                                         chunks=(1,) * a.ndim, dtype=bool).all() for _, a in named])
    bad = [name for (name, _), ok in zip(named, finite) if not bool(ok)]
    if bad:
        msg = f"`{bad[0]}` contains NaN or infinite values"
        raise ValueError(msg)


def median_sample(arrays, seed, n_sample=1000):
    """Rows of the pooled dask arrays for the median heuristic (a float gamma after), or for
    an estimate that needs rows in memory (TSGSU's prior)."""
    import dask.array as da

    pooled = arrays[0] if len(arrays) == 1 else da.concatenate(arrays, axis=0)
    n = pooled.shape[0]
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(n, n_sample), replace=False))
    return pooled[rows].compute()


@dataclasses.dataclass(frozen=True)
class Plan:
    """How an engine algorithm trains on dask arrays; each algorithm package defines its own.

    Attributes
    ----------
    name : str
        The algorithm, for messages.
    params : ParamTable
        Its hyper-parameters (``partial_fit`` validates the estimator's with them).
    build : callable
        ``build(**validated arguments) -> Problem``: the algorithm's problem builder, run
        on the few rows of ``Prepared.tiny`` to fix the settings, losses and model.
    prepare : callable
        ``prepare(arguments, seed) -> Prepared``: reads what the whole data fix (classes,
        counts, the prior) and may complete ``arguments`` (derived defaults) in place.
    rows : callable
        ``rows(parts, context, bk, dtype) -> [(X, y), ...]``: a worker's rows as the
        sources' rows and targets (``parts[row set][array]``); picklable (module level).
    """

    name: str
    params: object
    build: Callable
    prepare: Callable
    rows: Callable


@dataclasses.dataclass
class Prepared:
    """What ``Plan.prepare`` reads off the dask arrays.

    Attributes
    ----------
    tiny : dict
        Arguments replaced by a few in-memory rows that carry every class, for ``build``.
    rowsets : list of lists of dask arrays
        Per source-group, the arrays whose row chunks the workers read (same chunks).
    context : dict
        What ``rows`` needs on a worker (classes, loss, labels).
    pooled : list of dask arrays
        The rows the median heuristic samples.
    fix_settings : callable or None
        Settings -> settings that only the whole data fix (TSGS3VM's balance target).
    fix_params : dict
        Model parameters that only the whole data fix (row counts).
    replicate : tuple of int
        The row sets every worker holds whole (a small source, such as scarce labelled
        rows, that would otherwise leave some worker without rows of it).
    target_shift : (float, float) or None
        Regression targets' ``(mean, scale)`` over the whole data (``rows`` standardises
        with it; see :attr:`algorithms._engine.Problem.target_shift`).
    """

    tiny: dict
    rowsets: list
    context: dict
    pooled: list
    fix_settings: Callable | None = None
    fix_params: dict = dataclasses.field(default_factory=dict)
    replicate: tuple = ()
    target_shift: tuple | None = None


# A source at most this large may go whole to every worker (Prepared.replicate).
REPLICATE_BYTES = 64 * 2**20


def fit(plan, **arguments):
    """Fit ``plan``'s algorithm on dask arrays on the current ``distributed.Client``;
    ``arguments`` are those of the algorithm's ``fit``, validated.

    Returns
    -------
    RFFModel
        The ordinary model (its arrays on the backend of the chunks).

    Raises
    ------
    RuntimeError
        No Client is running.
    WorkerLostError
        Workers were lost and the fit could not recover (names them).
    """
    arguments = dict(arguments)
    seed = seed_from(arguments.get("random_state"))
    arguments["random_state"] = seed
    check_finite(arguments)
    prepared = plan.prepare(arguments, seed)
    gamma = arguments.get("gamma", "median")
    if isinstance(gamma, str) and gamma == "median":
        sample = median_sample(prepared.pooled, seed)
        arguments["gamma"] = check_gamma("median", sample, resolve("auto", sample), seed)
    elif isinstance(gamma, str) and gamma == "scale":  # over every row, as in memory
        arguments["gamma"] = scale_gamma_of_chunks(prepared.pooled)
    problem = dataclasses.replace(plan.build(**{**arguments, **prepared.tiny}), target_shift=prepared.target_shift)
    runner = _ClusterRun(prepared.rowsets, plan.rows, prepared.context, plan.name, prepared.fix_settings,
                         replicate=prepared.replicate)
    model = problem.solve(runner)
    params = {**model.params, **prepared.fix_params, "distributed": dict(runner.stats)}
    return dataclasses.replace(model, params=params)


def scale_gamma_of_chunks(arrays):
    """``1 / (n_features Var X)`` over the pooled dask arrays' entries (float64 sums, one pass)."""
    import dask

    X = [a.astype("float64") for a in arrays]
    count = sum(a.size for a in X)
    total, squares = dask.compute(sum(a.sum() for a in X), sum((a * a).sum() for a in X))
    var = float(squares) / count - (float(total) / count) ** 2
    return 1.0 / (X[0].shape[1] * var) if var > 0 and math.isfinite(var) else 1.0


def first_rows(X, n):
    """The first ``n`` rows of a dask array, in memory."""
    return X[: min(n, X.shape[0])].compute()


