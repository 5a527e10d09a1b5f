"""tsgs3vm: the hyper-parameters, ``fit`` and prediction (see the package docstring)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from kbackends import resolve
from kbackends.ops import resolve_hint
from kbackends.losses import HINGE, UNLABELED_LOSSES

from .. import _engine, distributed
from . import _distributed
from .._models.model import RFFModel
from .._boundary.params import (
    Constraint, Param, ParamTable, boolean, common, common_tail, either, integer, none,
    options, real,
)
from .._boundary.fit_plan import budget_blocks
from .._boundary.sparse import stack_rows, take_rows
from .._boundary.precision import centre_features, compute_array, second_source
from .._boundary.validation import check_gamma, check_labels, check_X, seed_from
from ..dsg import decision_function, predict  # noqa: F401 (public here: tsgs3vm.predict)


# The hyper-parameters of fit and TSGS3VMClassifier (and the command line), once.
def _not_nan(label):
    """Whether ``label`` can mark rows: anything but a float NaN."""
    return not (isinstance(label, (float, np.floating)) and math.isnan(label))


PARAMS = ParamTable(
    Param("C", 1.0, real(0, low_open=True), "weight of the mean labeled hinge loss"),
    Param("C_star", None, either(real(0), none()), "weight of the unlabeled loss; None: C n_labeled / n_unlabeled"),
    Param("unlabeled_loss", "shg", options(*UNLABELED_LOSSES), "non-convex loss on unlabeled rows (Table 2)"),
    common("kernel"),
    common("gamma"),
    common("features"),
    Param("n_iter", None, either(integer(1), none()), "iterations; None: one pass over the unlabeled data"),
    Param("batch_size", 256, integer(1), "rows drawn from each of the labeled and unlabeled data"),
    common("block_size"),
    common("step"),
    common("precondition"),
    Param("balance", True, boolean(), "keep the mean unlabeled prediction at the labeled class balance"),
    common("feature_budget", constraint=either(options("auto", "sqrt"), integer(1), none()),
           doc="at most this many random features, then old blocks are updated; auto: DSG's rule, "
               "'sqrt': sqrt(n_unlabeled); None: no limit"),
    # NaN equals nothing, itself included: as the marker it would leave every row labelled
    Param("unlabeled_label", -1, Constraint("a label other than NaN (NaN never equals itself; mark the unlabeled "
                                            "rows with a value such as -1)", lambda v: True, _not_nan),
          "the label of unlabeled rows in y"),
    *common_tail(),
)


@PARAMS.entry
def fit(X, y, X_unlabeled=None, *, C, C_star, unlabeled_loss, kernel, gamma, features, n_iter, batch_size, block_size,
        step, precondition, balance, feature_budget, unlabeled_label, random_state, backend, dtype, callback,
        verbose):
    """Fit a semi-supervised SVM by triply stochastic gradients.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        Labeled rows, plus the unlabeled ones when ``X_unlabeled`` is None.
    y : array of shape (n_samples,)
        Class labels; when ``X_unlabeled`` is None, rows whose label equals
        ``unlabeled_label`` are the unlabeled data (scikit-learn's convention).
        More than two classes: one S3VM per class (one-vs-rest) on shared
        random features, each balanced to its class's labeled ratio. With no
        unlabeled rows (or ``C_star=0``) the fit is the supervised kernel SVM.
    X_unlabeled : array of shape (n_unlabeled, n_features), optional
        Unlabeled rows given separately; then every row of X is labeled and
        ``unlabeled_label`` is not used (so labels may be -1 / +1).
    C : float > 0, default 1.0
        Weight of the mean labeled hinge loss (the RKHS term has weight 1/2).
    C_star : float >= 0, optional
        Weight of the unlabeled loss; default ``C * n_labeled / n_unlabeled``
        (the paper's setup). 0 gives the supervised kernel SVM on the labels.
    unlabeled_loss : {"shg", "sshg", "ramp", "da"}, default "shg"
        Table 2: max(0, 1 - |f|), its square / 2, the ramp H_1 - H_s (s = -0.3),
        exp(-5 f^2).
    kernel, gamma, features, block_size, step, precondition, random_state, backend, dtype, callback,
    verbose
        As in :func:`algorithms.dsg.fit`.
    n_iter : int, optional
        Iterations; default one pass over the unlabeled data (n_unlabeled / batch_size).
    batch_size : int, default 256
        Rows drawn from each of the labeled and the unlabeled data per iteration.
    balance : bool, default True
        Keep the mean prediction on unlabeled batches at the labeled class balance.
    feature_budget : "auto", int, "sqrt" or None, default "auto"
        At most this many random features (rounded up to whole blocks); once
        reached, each iteration updates an old block drawn at random, so the
        cost of an iteration stops growing and a pass is linear in its length.
        "auto": about a million multiply-adds a row, the rule of every engine
        algorithm (:func:`algorithms._boundary.fit_plan.auto_feature_budget`);
        "sqrt" is sqrt(n_unlabeled), the paper's setting. None: a new block
        every iteration (cost quadratic in the number of iterations).

    Returns
    -------
    RFFModel
        ``algorithm="tsgs3vm"``; predict with :func:`predict`.
    """
    if precondition is None and step / C >= 1.0:
        # Plain steps start at eta = step and shrink old blocks by 1 - eta / C.
        msg = (f"`step`={step:g} with `precondition`=None needs `step` < `C` (={C:g}): old blocks would be "
               "shrunk to zero or flipped; lower `step` or raise `C`")
        raise ValueError(msg)
    if distributed.is_dask_array(X):  # data-parallel on the current dask.distributed Client
        return distributed.fit(DISTRIBUTED, **locals())
    with centre_features():  # in memory: X may be centred (the model keeps the centre)
        return _build(**locals()).solve()


def _build(X, y, X_unlabeled=None, *, C, C_star, unlabeled_loss, kernel, gamma, features, n_iter, batch_size, block_size,
          step, precondition, balance, feature_budget, unlabeled_label, random_state, backend, dtype, callback,
          verbose):
    """The engine problem of a TSGS3VM fit (:func:`fit`'s arguments, validated): the
    labelled and unlabelled sources, the settings, and the model."""
    bk = resolve(backend, resolve_hint(X), y, resolve_hint(X_unlabeled))
    xp = bk.xp
    # float32 unless it loses what float64 keeps; centred where the in-memory fit allows it,
    # the unlabelled rows on the same centre
    X, centre = compute_array(check_X(X, bk, dtype, accept_sparse=True), bk, dtype)
    y_host = check_labels(y, X.shape[0], unlabeled=unlabeled_label if X_unlabeled is None else None)
    if X_unlabeled is None:
        unlabeled = y_host == unlabeled_label
        rows_l, rows_u = np.flatnonzero(~unlabeled), np.flatnonzero(unlabeled)
        X_l = take_rows(X, bk.asarray(rows_l), xp)
        X_u = take_rows(X, bk.asarray(rows_u), xp)
        y_l = y_host[rows_l]
    else:
        X_l, y_l = X, y_host
        X_u = second_source(X_unlabeled, bk, X.dtype, centre, name="X_unlabeled")
        if X_u.shape[1] != X.shape[1]:
            msg = f"`X_unlabeled` has {X_u.shape[1]} features but `X` has {X.shape[1]}"
            raise ValueError(msg)
    classes = np.unique(y_l)
    if classes.size < 2:
        msg = (
            f"the labeled rows have only one class ({classes.tolist()}); at least 2 classes are needed "
            f"(unlabeled rows carry `unlabeled_label`={unlabeled_label!r})"
        )
        raise ValueError(msg)
    n_l, n_u = X_l.shape[0], X_u.shape[0]
    if C_star is None:
        C_star = C * n_l / n_u if n_u else 0.0  # a float, like a validated one
    n_iter = math.ceil(max(n_u, n_l) / batch_size) if n_iter is None else n_iter

    if feature_budget == "sqrt":
        feature_budget = max(1, math.ceil(math.sqrt(max(n_u, 1))))

    seed = seed_from(random_state)
    both = stack_rows((X_l, X_u), xp)
    max_blocks = budget_blocks(feature_budget, both, block_size)
    gamma = check_gamma(gamma, both, bk, seed)
    # Two classes: one output, y = +-1. More: one column per class (one-vs-rest), each
    # column its own S3VM on shared random features, balanced to its own class ratio.
    if classes.size == 2:
        targets = np.where(y_l == classes[1], 1.0, -1.0).reshape(-1, 1)
    else:
        targets = np.where(y_l[:, None] == classes[None, :], 1.0, -1.0)
    task = "binary" if classes.size == 2 else "ovr"
    y_pm = xp.astype(bk.asarray(targets), X.dtype)
    balance_target = bk.asarray(targets.mean(axis=0).astype(np.float64))
    balance_target = xp.astype(balance_target, X.dtype)

    # Objective (1) divided by C: lam = 1/C, labeled weight 1, unlabeled C_star / C.
    sources = [_engine.Source(X=X_l, y=y_pm, loss=HINGE, weight=1.0, batch_size=batch_size)]
    use_unlabeled = n_u > 0 and C_star > 0
    if use_unlabeled:
        sources.append(_engine.Source(X=X_u, y=None, loss=UNLABELED_LOSSES[unlabeled_loss],
                                      weight=C_star / C, batch_size=batch_size))
    settings = _engine.engine_settings(
        locals(), gamma=gamma, seed=seed, n_iter=n_iter, lam=1.0 / C, n_outputs=targets.shape[1],
        balance=(1, balance_target) if balance and use_unlabeled else None, max_blocks=max_blocks,
        label="tsgs3vm",
    )
    params = {
        "C": C, "C_star": C_star, "unlabeled_loss": unlabeled_loss, "n_iter": n_iter,
        "batch_size": batch_size, "step": step, "precondition": precondition, "balance": bool(balance),
        "n_labeled": n_l, "n_unlabeled": n_u, "lam": 1.0 / C, "loss": "hinge",
        "feature_budget": feature_budget,
    }

    def finish(result):
        model = RFFModel.from_engine(result, settings, bk, X, algorithm="tsgs3vm", task=task, classes=classes,
                                     params=params)
        return model if centre is None else dataclasses.replace(model, centre=centre)

    return _engine.Problem(sources, settings, bk, X.dtype, finish)


# The problem a fit runs, for a runner of one's own (checked like fit).
build = PARAMS.entry(_build)

# How TSGS3VM trains on dask arrays (algorithms.distributed): its problem, its rows.
DISTRIBUTED = distributed.Plan(name="tsgs3vm", params=PARAMS, build=_build, prepare=_distributed.prepare,
                               rows=_distributed.rows)
