"""``fit`` on dask arrays: each algorithm's plan of sources and rows."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from kbackends import is_array, resolve, to_numpy

from .. import _engine
from .._boundary.validation import seed_from
from ._common import is_dask_array
from ._driver import _ClusterRun


def _as_dask_rows(a, chunks, name):
    import dask.array as da

    if a is None:
        return None
    if not is_dask_array(a):
        a = np.asarray(a) if not is_array(a) else a
        return da.from_array(a, chunks=(chunks,) + tuple(-1 for _ in range(a.ndim - 1)))
    if a.shape[0] != sum(chunks):
        msg = f"`{name}` has {a.shape[0]} rows but `X` has {sum(chunks)}"
        raise ValueError(msg)
    a = a.rechunk((chunks,) + tuple(-1 for _ in range(a.ndim - 1)))
    return a


def _row_chunked(X, name):
    if X.ndim != 2:
        msg = f"`{name}` must be 2-D, got ndim={X.ndim}"
        raise ValueError(msg)
    if any(math.isnan(c) for c in X.shape):
        msg = f"`{name}` has unknown chunk sizes; call `{name}.compute_chunk_sizes()` first"
        raise ValueError(msg)
    return X.rechunk({1: -1}) if X.numblocks[1] != 1 else X


def _median_sample(arrays, seed, n_sample=1000):
    """Rows of the pooled dask arrays for the median heuristic (a float gamma after)."""
    import dask.array as da

    pooled = arrays[0] if len(arrays) == 1 else da.concatenate(arrays, axis=0)
    n = pooled.shape[0]
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(n, n_sample), replace=False))
    return pooled[rows].compute()


def fit(module_fit, algorithm, **arguments):
    """Fit ``algorithm`` ("dsg", "tsgs3vm" or "tsgsu") on dask arrays on the current
    ``distributed.Client``; ``arguments`` are those of ``module_fit`` (the module's
    own ``fit``, which validates them and builds the engine problem).

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
    from .._boundary.validation import check_gamma

    arguments = dict(arguments)
    seed = seed_from(arguments.get("random_state"))
    arguments["random_state"] = seed
    if algorithm == "dsg":
        plan = _plan_dsg(arguments, seed)
    elif algorithm == "tsgs3vm":
        plan = _plan_tsgs3vm(arguments, seed)
    elif algorithm == "tsgsu":
        plan = _plan_tsgsu(arguments, seed)
    else:
        msg = f"`algorithm` must be 'dsg', 'tsgs3vm' or 'tsgsu', got {algorithm!r}"
        raise ValueError(msg)
    tiny, rowsets, builder, context, fix_settings, fix_params, pooled = plan
    if isinstance(arguments.get("gamma", "median"), str) and arguments.get("gamma", "median") == "median":
        sample = _median_sample(pooled, seed)
        arguments["gamma"] = check_gamma("median", sample, resolve("auto", sample), seed)
    runner = _ClusterRun(rowsets, builder, context, algorithm, fix_settings)
    with _engine.run_with(runner):
        model = module_fit(**{**arguments, **tiny})
    params = {**model.params, **fix_params, "distributed": dict(runner.stats)}
    return dataclasses.replace(model, params=params)


def _first_rows(X, n):
    return X[: min(n, X.shape[0])].compute()


def _plan_dsg(arguments, seed):
    import dask.array as da

    X = _row_chunked(arguments["X"], "X")
    y = _as_dask_rows(arguments["y"], X.chunks[0], "y")
    loss = arguments.get("loss", "hinge")
    if loss == "squared":
        classes = None
        tiny_y = y[:2].compute()
    else:
        classes = np.asarray(da.unique(y).compute())
        tiny_y = classes
    tiny_X = _first_rows(X, len(tiny_y))
    if tiny_X.shape[0] < len(tiny_y):
        tiny_y = tiny_y[: tiny_X.shape[0]]
    context = {"classes": classes, "loss": loss}
    return ({"X": tiny_X, "y": tiny_y}, [[X, y]], _dsg_rows, context, None, {}, [X])


def _dsg_rows(parts, context, bk, dtype):
    """DSG's one source: rows and their loss targets, classes fixed by the whole y."""
    from ..dsg._fit import _targets

    X, y = parts[0]
    xp = bk.xp
    classes = context["classes"]
    n = X.shape[0]
    if classes is None:
        y_matrix = _targets(y, xp.astype(X, getattr(xp, dtype)), bk, "squared")[0]
        return [(X, y_matrix)]
    # Append every class once so this chunk's encoding is the global one, then drop them.
    y_all = np.concatenate([to_numpy(y), np.asarray(classes)])
    dummy = xp.zeros((y_all.shape[0], 0), dtype=getattr(xp, dtype))
    y_matrix = _targets(y_all, dummy, bk, context["loss"])[0]
    return [(X, y_matrix[:n])]


def _plan_tsgs3vm(arguments, seed):
    X = _row_chunked(arguments["X"], "X")
    y = _as_dask_rows(arguments["y"], X.chunks[0], "y")
    X_u = arguments.get("X_unlabeled")
    label = arguments.get("unlabeled_label", -1)
    batch_size = arguments.get("batch_size", 256)
    if X_u is not None:
        X_u = _row_chunked(X_u, "X_unlabeled")
        y_l = y
        n_u = X_u.shape[0]
    else:
        y_l = y[y != label]
    labels = y_l.compute()
    classes = np.unique(labels)
    n_l = labels.shape[0]
    if X_u is None:
        n_u = X.shape[0] - n_l
    C = arguments.get("C", 1.0)
    if arguments.get("C_star") is None:
        arguments["C_star"] = C * n_l / n_u if n_u else 0.0
    if arguments.get("n_iter") is None:
        arguments["n_iter"] = max(1, math.ceil(max(n_u, n_l) / batch_size))
    if arguments.get("feature_budget") == "sqrt":
        arguments["feature_budget"] = max(1, math.ceil(math.sqrt(max(n_u, 1))))
    if classes.size == 2:
        targets = np.where(labels == classes[1], 1.0, -1.0).reshape(-1, 1)
    else:
        targets = np.where(labels[:, None] == classes[None, :], 1.0, -1.0)
    balance_target = targets.mean(axis=0)
    if X_u is None:
        tiny_y = np.concatenate([classes, [label] if n_u else []]).astype(labels.dtype)
        tiny = {"X": _first_rows(X, tiny_y.size), "y": tiny_y}
        rowsets = [[X, y]]
        pooled = [X]
    else:
        tiny = {"X": _first_rows(X, classes.size), "y": classes, "X_unlabeled": _first_rows(X_u, 1)}
        rowsets = [[X, y], [X_u]]
        pooled = [X, X_u]

    def fix_settings(settings):
        if settings.balance is None:
            return settings
        xp_target = settings.balance[1]
        balance = _like(xp_target, balance_target)
        return dataclasses.replace(settings, balance=(settings.balance[0], balance))

    context = {"classes": classes, "label": label, "separate": X_u is not None}
    return tiny, rowsets, _tsgs3vm_rows, context, fix_settings, {"n_labeled": int(n_l), "n_unlabeled": int(n_u)}, \
        pooled


def _like(like, values):
    """``values`` (host) as an array of ``like``'s backend and dtype."""
    bk = resolve("auto", like)
    return bk.xp.astype(bk.asarray(np.asarray(values)), like.dtype)


def _tsgs3vm_rows(parts, context, bk, dtype):
    """TSGS3VM's labeled (rows, +-1 targets) and unlabeled (rows, None) sources."""
    xp = bk.xp
    classes = context["classes"]
    if context["separate"]:
        (X, y), (X_u,) = parts
        y_l = to_numpy(y)
        X_l = X
    else:
        X, y = parts[0]
        y_host = to_numpy(y)
        unlabeled = y_host == context["label"]
        X_l = xp.take(X, bk.asarray(np.flatnonzero(~unlabeled)), axis=0)
        X_u = xp.take(X, bk.asarray(np.flatnonzero(unlabeled)), axis=0)
        y_l = y_host[~unlabeled]
    if classes.size == 2:
        targets = np.where(y_l == classes[1], 1.0, -1.0).reshape(-1, 1)
    else:
        targets = np.where(y_l[:, None] == classes[None, :], 1.0, -1.0)
    y_pm = xp.astype(bk.asarray(targets), getattr(xp, dtype))
    return [(X_l, y_pm), (X_u, None)]


def _plan_tsgsu(arguments, seed):
    from ..tsgsu import estimate_prior

    X_s = arguments["X_similar"]
    if X_s.ndim == 3:
        X_s = X_s.reshape((-1, X_s.shape[2]))
    X_s = _row_chunked(X_s, "X_similar")
    X_u = _row_chunked(arguments["X_unlabeled"], "X_unlabeled")
    if arguments.get("prior") is None:
        # The estimate needs the data in memory: on samples of up to 10,000 rows of each.
        s = _first_rows(X_s, 10_000) if X_s.shape[0] <= 10_000 else _median_sample([X_s], seed, 10_000)
        u = _first_rows(X_u, 10_000) if X_u.shape[0] <= 10_000 else _median_sample([X_u], seed + 1, 10_000)
        arguments["prior"] = estimate_prior(s, u, random_state=seed)
    tiny = {"X_similar": _first_rows(X_s, 2), "X_unlabeled": _first_rows(X_u, 2)}
    fix = {"n_similar_points": int(X_s.shape[0]), "n_unlabeled": int(X_u.shape[0])}
    return tiny, [[X_s], [X_u]], _tsgsu_rows, {}, None, fix, [X_s, X_u]


def _tsgsu_rows(parts, context, bk, dtype):
    """TSGSU's similar-points and unlabeled sources (no targets)."""
    (X_s,), (X_u,) = parts
    return [(X_s, None), (X_u, None)]
