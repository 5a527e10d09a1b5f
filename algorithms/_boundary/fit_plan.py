"""What an engine fit decides from its data before the loop: the "auto" settings,
the sample weights, the held-out rows of early stopping.

The rules are in one function, :func:`auto_settings`, so that they can be read,
tested and changed in one place (DSG uses it; TSGS3VM / TSGSU can).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from kbackends import is_array, to_numpy

from .validation import check_nonneg_float

__all__ = ["AutoSettings", "auto_settings", "check_sample_weight", "validation_rows", "weights_of_rows"]

MAX_BATCH = 4096  # rows per iteration of a large data set
PASSES = 10  # without early stopping: about this many passes over the data ...
MIN_ITER, MAX_ITER = 10, 200  # ... clipped to this range; with early stopping: at least MAX_ITER ...
EARLY_STOPPING_PASSES = 2  # ... and at least this many passes over the data
EARLY_STOPPING_MIN_ROWS = 10_000  # as HistGradientBoosting's early_stopping="auto"
MIN_NO_CHANGE, NO_CHANGE_PASS = 10, 0.1  # patience: 10 iterations, or a tenth of a pass if longer
MAX_VALIDATION_ROWS = 50_000  # held-out rows at most (their f is updated every iteration)
LARGE_SPLIT_ROWS = 1_000_000  # from here the held-out rows are drawn directly (fit_plan._held_out_sample)
# feature_budget="auto": a model whose evaluation costs about FEATURE_WORK multiply-adds
# a row (features x (input cost per row + COS_COST)), at least MIN_FEATURES.
FEATURE_WORK = 2**20
COS_COST = 32  # a cosine and the coefficient's multiply-add, in multiply-adds of the inner product
MIN_FEATURES = 8_192


@dataclass(frozen=True)
class AutoSettings:
    """The resolved iteration bound, batch size and early-stopping switch."""

    n_iter: int
    batch_size: int
    early_stopping: bool
    n_iter_no_change: int = MIN_NO_CHANGE


def auto_settings(n_samples, *, n_iter="auto", batch_size="auto", early_stopping="auto", n_iter_no_change="auto"):
    """The settings a fit on ``n_samples`` (weighted: positive-weight) rows runs with.

    - ``batch_size="auto"``: ``min(4096, n_samples)``: small data is not drawn 4096
      times per iteration (with replacement), large data gets the batch whose
      preconditioned block step is accurate (4096 rows for 256 features).
    - ``n_iter="auto"``: with early stopping, the larger of 200 and two passes over
      the rows (``ceil(2 n / batch)``), an upper bound that the held-out loss ends
      first on most data (on ijcnn1, the slowest to converge of the sets measured,
      300 add 0.04 point to 200's at 1.5x the time; on a million rows of
      ``make_nonlinear_classes`` one pass stopped 1.2 points short of the 397
      iterations early stopping chose); without, about 10
      passes over the data, ``ceil(10 n / batch)`` clipped to [10, 200]: small data gets few iterations
      (each adds 256 features, and with the default tiny ``lam`` the number of
      blocks is what regularises: measured on breast_cancer, 200 rows, 10
      iterations beat 20 and 40; on higgs, 7,700 rows, the test accuracy peaks
      near 16 iterations and falls after).
    - ``early_stopping="auto"``: on when ``n_iter`` is "auto" and there are at least
      10,000 rows (HistGradientBoosting's rule): then 10% held out still measures the
      loss to about 1% and costs the fit little; below, the held-out rows would be
      missed more than the extra iterations. An explicit ``n_iter`` asks for exactly
      that many iterations, so "auto" leaves early stopping off.

    - ``n_iter_no_change="auto"``: early stopping's patience, 10 iterations or a tenth
      of a pass over the rows if that is longer (``ceil(0.1 n / batch)``): on large
      data a few batches move the held-out loss by less than ``tol`` while the model
      still gains (10 million rows of ``make_nonlinear_classes``: ten iterations
      without a 0.1% gain stopped the fit at 232 iterations, 0.2 point below
      the fit on a million rows); the patience of 10 is unchanged below 409,600 rows.

    Explicit integers (and True / False) are returned as given.

    Returns
    -------
    AutoSettings
    """
    n = max(1, int(n_samples))
    batch = min(MAX_BATCH, n) if batch_size == "auto" else int(batch_size)
    if early_stopping == "auto":
        early = n_iter == "auto" and n >= EARLY_STOPPING_MIN_ROWS
    else:
        early = bool(early_stopping)
    if n_iter == "auto":
        if early:
            n_iter = max(MAX_ITER, math.ceil(EARLY_STOPPING_PASSES * n / batch))
        else:
            n_iter = min(MAX_ITER, max(MIN_ITER, math.ceil(PASSES * n / batch)))
    if n_iter_no_change == "auto":
        n_iter_no_change = max(MIN_NO_CHANGE, math.ceil(NO_CHANGE_PASS * n / batch))
    return AutoSettings(n_iter=int(n_iter), batch_size=batch, early_stopping=early,
                        n_iter_no_change=int(n_iter_no_change))


def auto_feature_budget(row_cost):
    """The features of ``feature_budget="auto"`` (DSG, UDSG, CDSG, TSGS3VM, TSGSU) for rows that cost ``row_cost``
    multiply-adds each in the features' inner products (the number of features of
    dense rows, the mean stored values of a sparse row).

    ``FEATURE_WORK / (row_cost + COS_COST)``, at least 8,192: a model whose evaluation
    costs about a million multiply-adds a row (``2**20``; a cosine counted as 32), so
    that an iteration past the budget costs about the same whatever the data's width,
    and a pass over ``n`` rows ``O(n)``: 20,164 features for 20 dense features, 32,768
    at most (the rows' cost vanishing), 8,192 for rows of 96 values or more. The
    data's size enters through the iterations (:func:`auto_settings`: at least two passes
    over the rows), the width through the features they can afford.
    """
    return int(max(MIN_FEATURES, FEATURE_WORK // (max(0, math.ceil(row_cost)) + COS_COST)))


def budget_blocks(feature_budget, X, block_size):
    """The most blocks a fit on ``X`` may hold (its ``max_blocks``), from ``feature_budget``:
    None (no limit), an integer (features), or "auto" (:func:`auto_feature_budget` of the
    cost of ``X``'s rows), rounded up to whole blocks."""
    if feature_budget is None:
        return None
    if feature_budget == "auto":
        nnz = getattr(X, "nnz", None)  # scipy / cupyx sparse: the stored values set the cost
        feature_budget = auto_feature_budget(X.shape[1] if nnz is None else nnz / max(X.shape[0], 1))
    return max(1, math.ceil(int(feature_budget) / block_size))


def check_sample_weight(sample_weight, n_rows, name="sample_weight"):
    """``sample_weight`` as a host float64 array of shape (n_rows,), or None.

    A scalar is every row's weight; None, or weights all equal, give None (the
    objective is the weighted *mean* loss, so a constant weight changes nothing and
    the fit is the unweighted one, bit for bit).

    Raises
    ------
    ValueError
        Not 1-D, the wrong length, NaN / inf, a negative weight, or all zero.
    TypeError
        A non-numeric dtype.
    """
    if sample_weight is None:
        return None

    w = to_numpy(sample_weight) if is_array(sample_weight) else np.asarray(sample_weight)
    if w.dtype.kind not in "fiub":
        msg = f"`{name}` must be numeric, got dtype {w.dtype}"
        raise TypeError(msg)
    w = np.asarray(w, dtype=np.float64)
    if w.ndim == 0:
        w = np.full(n_rows, float(w))
    if w.ndim != 1 or w.shape[0] != n_rows:
        msg = f"`{name}` must have shape ({n_rows},) (one weight per row of X), got {w.shape}"
        raise ValueError(msg)
    if not np.all(np.isfinite(w)):
        msg = f"`{name}` contains NaN or infinite values"
        raise ValueError(msg)
    if np.any(w < 0):
        msg = f"`{name}` must be non-negative, got {int(np.sum(w < 0))} negative weight(s) (min {w.min():g})"
        raise ValueError(msg)
    if not np.any(w > 0):
        msg = f"`{name}` is zero for every row: nothing to fit (it must have a positive weight)"
        raise ValueError(msg)
    if np.all(w == w[0]):
        return None
    return w


def weights_of_rows(sample_weight, rows):
    """The estimators' ``sample_weight`` for the rows a fit runs on: all of them
    (``rows`` None), or those ``probability=True`` keeps for the fit (host indices);
    unchecked (the fit checks it)."""
    if sample_weight is None or rows is None:
        return sample_weight

    w = np.asarray(to_numpy(sample_weight) if is_array(sample_weight) else sample_weight)
    return w[rows] if w.ndim else w


def validation_rows(n_rows, fraction, seed, labels=None, *, every_class=False):
    """Host indices ``(train, held_out)`` of a held-out split (early stopping's, and
    ``probability=True``'s calibration rows).

    ``fraction`` of the rows (at least one, at most ``MAX_VALIDATION_ROWS``, at
    least one left to train on), stratified by ``labels`` when every class has two
    rows or more (as scikit-learn's estimators split for early stopping).
    ``every_class``: each side keeps every class (the caller checked that each has
    two rows or more).
    """
    from sklearn.model_selection import train_test_split

    n_held = min(MAX_VALIDATION_ROWS, max(1, math.ceil(fraction * n_rows)), n_rows - 1)
    stratify = None
    if labels is not None:
        _, counts = np.unique(labels, return_counts=True)
        if every_class:
            n_held = min(max(n_held, counts.size), n_rows - counts.size)
        if counts.min() >= 2 and counts.size <= n_held:
            if n_rows - n_held < counts.size:  # scikit-learn's split would refuse it naming train_size
                msg = (f"`validation_fraction`={fraction} holds out {n_held} of the {n_rows} rows, leaving "
                       f"{n_rows - n_held} to train on for {counts.size} classes: lower `validation_fraction`")
                raise ValueError(msg)
            stratify = labels
    if n_rows > LARGE_SPLIT_ROWS and not every_class:
        held = _held_out_sample(n_rows, n_held, seed, stratify)
        keep = np.ones(n_rows, dtype=bool)
        keep[held] = False
        return np.flatnonzero(keep), held
    train, held = train_test_split(np.arange(n_rows), test_size=n_held, random_state=seed % 2**32,
                                   stratify=stratify)
    return np.sort(train), np.sort(held)


def _held_out_sample(n_rows, n_held, seed, labels):
    """``n_held`` sorted row indices drawn without replacement, each class in proportion to its
    rows (largest remainders) when ``labels`` are given: the held-out rows of a large split in
    O(n_held) draws and O(n) memory (a stratified shuffle of every row would permute them all)."""
    rng = np.random.default_rng(seed % 2**32)
    if labels is None:
        return np.sort(rng.choice(n_rows, size=n_held, replace=False))
    labels = np.asarray(labels)
    if labels.dtype.kind in "iu" and labels.min() >= 0:  # class indices: counted without a sorted copy
        counts = np.bincount(labels)
        classes = np.flatnonzero(counts)
        counts = counts[classes]
    else:
        classes, counts = np.unique(labels, return_counts=True)
    share = counts * (n_held / n_rows)
    take = np.floor(share).astype(np.int64)
    take[np.argsort(take - share)[: n_held - int(take.sum())]] += 1  # the largest remainders first
    picked = []
    for c, k in zip(classes, take):
        rows = np.flatnonzero(labels == c)
        picked.append(rows[rng.choice(rows.size, size=k, replace=False)])
    return np.sort(np.concatenate(picked))


def check_class_weight(class_weight, classes):
    """``class_weight`` (None, "balanced" or ``{label: weight}`` of known labels, each
    weight positive) as the fits use it."""
    if class_weight is None or class_weight == "balanced":
        return class_weight
    if isinstance(class_weight, dict):
        out = {}
        for label, value in class_weight.items():
            if label not in set(classes.tolist()):
                msg = f"`class_weight` names label {label!r}, which is not in `y` (classes {classes.tolist()})"
                raise ValueError(msg)
            out[label] = check_nonneg_float(f"class_weight[{label!r}]", value, positive=True)
        return out
    msg = f"`class_weight` must be None, 'balanced' or a dict {{label: weight}}, got {class_weight!r}"
    raise ValueError(msg)


def class_row_weights(class_weights, classes, y_index, sample_weight):
    """Per-row weights ``s_i = c_{y_i} w_i`` (class weight times sample weight, as
    scikit-learn combines them), scaled to mean 1 over the rows (so ``lam`` keeps its
    meaning and a weight k acts as k copies of the row).

    "balanced": ``W / (n_classes W_c)``, W_c the class's total sample weight (for two
    classes Eq. (46) halved, scikit-learn's convention); a dict gives each label its
    weight (1 if absent)."""
    n = y_index.shape[0]
    if class_weights is None:
        per_class = np.ones(classes.size)
    elif class_weights == "balanced":
        counts = np.bincount(y_index, weights=sample_weight, minlength=classes.size)
        per_class = sample_weight.sum() / (classes.size * np.where(counts > 0, counts, 1.0))
    else:
        per_class = np.array([class_weights.get(c, 1.0) for c in classes.tolist()], dtype=np.float64)
    w = per_class[y_index] * sample_weight
    return w * (n / w.sum())


def jsonable_weights(class_weight):
    """``class_weight`` as a model's JSON parameters keep it (labels as strings)."""
    if isinstance(class_weight, dict):
        return {str(k): float(v) for k, v in class_weight.items()}
    return class_weight
