"""TSGS3VM on dask arrays (:mod:`algorithms.distributed`): what the whole data fix, and a
worker's rows as the labelled and unlabelled sources."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from kbackends import resolve, to_numpy

from ..distributed import REPLICATE_BYTES, Prepared, as_dask_rows, first_rows, row_chunked


def prepare(arguments, seed):
    """The classes and counts of the labelled and unlabelled rows, and the derived
    defaults (``C_star``, ``n_iter``, the feature budget) from the whole data; small
    labelled rows go whole to every worker."""
    import dask.array as da

    X = row_chunked(arguments["X"], "X")
    y = as_dask_rows(arguments["y"], X.chunks[0], "y")
    X_u = arguments.get("X_unlabeled")
    label = arguments.get("unlabeled_label", -1)
    batch_size = arguments.get("batch_size", 256)
    if X_u is not None:
        X_u = row_chunked(X_u, "X_unlabeled")
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
    pooled = [X] if X_u is None else [X, X_u]
    small = n_l * X.shape[1] * np.dtype(X.dtype).itemsize <= REPLICATE_BYTES
    if X_u is None and small and n_u:
        # Labelled rows are scarce and often sit in a few chunks (labelled rows first): held
        # in memory and given whole to every worker, the unlabelled ones split as before.
        unlabeled = np.asarray((y == label).compute())
        X, y, X_u = da.from_array(X[~unlabeled].compute()), da.from_array(labels), X[unlabeled]
        X_u = row_chunked(X_u, "X")
    if X_u is None:
        tiny_y = np.concatenate([classes, [label] if n_u else []]).astype(labels.dtype)
        tiny = {"X": first_rows(X, tiny_y.size), "y": tiny_y}
        rowsets = [[X, y]]
    else:
        tiny = {"X": first_rows(X, classes.size), "y": classes, "X_unlabeled": first_rows(X_u, 1)}
        rowsets = [[X, y], [X_u]]

    def fix_settings(settings):
        if settings.balance is None:
            return settings
        xp_target = settings.balance[1]
        balance = _like(xp_target, balance_target)
        return dataclasses.replace(settings, balance=(settings.balance[0], balance))

    context = {"classes": classes, "label": label, "separate": X_u is not None}
    return Prepared(tiny=tiny, rowsets=rowsets, context=context, pooled=pooled, fix_settings=fix_settings,
                    fix_params={"n_labeled": int(n_l), "n_unlabeled": int(n_u)},
                    replicate=(0,) if X_u is not None and small else ())


def _like(like, values):
    """``values`` (host) as an array of ``like``'s backend and dtype."""
    bk = resolve("auto", like)
    return bk.xp.astype(bk.asarray(np.asarray(values)), like.dtype)


def rows(parts, context, bk, dtype):
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
