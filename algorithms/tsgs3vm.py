"""TSGS3VM: semi-supervised SVM by triply stochastic functional gradients.

Geng, Gu, Li, Shi, Zheng, Huang, "Scalable Semi-Supervised SVM via Triply
Stochastic Gradients" (IJCAI 2019). Objective, Eq. (1):

    (1/2) ||f||^2 + C * mean_labeled hinge(f(x), y) + C_star * E_{x ~ P(x)} u(f(x))

with u one of the non-convex unlabeled losses of Table 2 ("shg": max(0, 1 - |f|),
"sshg", "ramp", "da"). Each iteration draws a labeled batch, an unlabeled batch
and a block of random features (the three sources of randomness) and runs one
step of the shared functional-gradient engine with two data sources.

Class balance (on by default, ``balance=False`` reproduces the paper): before
each step the intercept is shifted so that the mean prediction on the
unlabeled batch equals the labeled mean of y (2 p_+ - 1), the balance
constraint of Chapelle & Zien (2005) and Collobert et al. (2006) that keeps an
S3VM from putting every unlabeled point in one class.

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import load_breast_cancer
>>> from algorithms import tsgs3vm
>>> X, y = load_breast_cancer(return_X_y=True)
>>> X = (X - X.mean(0)) / X.std(0)
>>> y_semi = np.where(np.random.default_rng(0).random(len(y)) < 0.1, y, -1)  # 10% labeled
>>> model = tsgs3vm.fit(X, y_semi, random_state=0)
>>> float((tsgs3vm.predict(model, X) == y).mean()) > 0.9
True
"""

from __future__ import annotations

import math

import numpy as np

from kbackends import resolve
from kbackends._xp_utils import to_numpy
from kbackends.random import KERNELS

from . import _engine, distributed
from ._losses import HINGE, UNLABELED_LOSSES
from ._estimator import FunctionalClassifier
from ._model import RFFModel
from ._validation import (
    check_choice,
    check_gamma,
    check_nonneg_float,
    check_positive_int,
    check_X,
    check_y_length,
    seed_from,
)
from .dsg import decision_function, predict

__all__ = ["fit", "decision_function", "predict", "TSGS3VMClassifier"]


def fit(
    X,
    y,
    X_unlabeled=None,
    *,
    C=1.0,
    C_star=None,
    unlabeled_loss="shg",
    kernel="rbf",
    gamma="median",
    n_iter=None,
    batch_size=256,
    block_size=256,
    step=1.0,
    precondition=0.1,
    balance=True,
    feature_budget=None,
    unlabeled_label=-1,
    random_state=None,
    backend="auto",
    dtype=None,
    callback=None,
):
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
    kernel, gamma, block_size, step, precondition, random_state, backend, dtype, callback
        As in :func:`algorithms.dsg.fit`.
    n_iter : int, optional
        Iterations; default one pass over the unlabeled data (n_unlabeled / batch_size).
    batch_size : int, default 256
        Rows drawn from each of the labeled and the unlabeled data per iteration.
    balance : bool, default True
        Keep the mean prediction on unlabeled batches at the labeled class balance.
    feature_budget : int, "sqrt" or None, default None
        At most this many random features (rounded up to whole blocks); once
        reached, each iteration updates an old block drawn at random, so the
        cost of an iteration stops growing and a pass is linear in its length.
        "sqrt" is sqrt(n_unlabeled), the paper's setting. None: a new block
        every iteration (cost quadratic in the number of iterations).

    Returns
    -------
    RFFModel
        ``algorithm="tsgs3vm"``; predict with :func:`predict`.
    """
    if distributed.is_dask_array(X):  # data-parallel on the current dask.distributed Client
        return distributed.fit(fit, "tsgs3vm", **locals())
    bk = resolve(backend, X, y, X_unlabeled)
    xp = bk.xp
    X = check_X(X, bk, dtype)
    check_choice("unlabeled_loss", unlabeled_loss, tuple(UNLABELED_LOSSES))
    check_choice("kernel", kernel, KERNELS)
    C = check_nonneg_float("C", C, positive=True)
    batch_size = check_positive_int("batch_size", batch_size)
    block_size = check_positive_int("block_size", block_size)
    step = check_nonneg_float("step", step, positive=True)
    if precondition is not None:
        precondition = check_nonneg_float("precondition", precondition, positive=True)

    y_host = to_numpy(y) if hasattr(y, "__array_namespace__") else np.asarray(y)
    if y_host.ndim != 1 or y_host.shape[0] != X.shape[0]:
        check_y_length(bk.asarray(y_host), X)
    if X_unlabeled is None:
        unlabeled = y_host == unlabeled_label
        rows_l, rows_u = np.flatnonzero(~unlabeled), np.flatnonzero(unlabeled)
        X_l = xp.take(X, bk.asarray(rows_l), axis=0)
        X_u = xp.take(X, bk.asarray(rows_u), axis=0)
        y_l = y_host[rows_l]
    else:
        X_l, y_l = X, y_host
        X_u = check_X(X_unlabeled, bk, X.dtype, name="X_unlabeled")
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
        C_star = C * n_l / n_u if n_u else 0.0
    C_star = check_nonneg_float("C_star", C_star)
    n_iter = math.ceil(max(n_u, n_l) / batch_size) if n_iter is None else check_positive_int("n_iter", n_iter)

    if feature_budget == "sqrt":
        feature_budget = max(1, math.ceil(math.sqrt(max(n_u, 1))))
    if feature_budget is not None:
        feature_budget = check_positive_int("feature_budget", feature_budget)
    max_blocks = None if feature_budget is None else math.ceil(feature_budget / block_size)

    seed = seed_from(random_state)
    gamma = check_gamma(gamma, xp.concat((X_l, X_u), axis=0), bk, seed)
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
    settings = _engine.EngineSettings(
        n_iter=n_iter,
        block_size=block_size,
        kernel=kernel,
        gamma=gamma,
        seed=seed,
        lam=1.0 / C,
        step=step,
        schedule="auto",
        ridge=precondition,
        n_outputs=targets.shape[1],
        balance=(1, balance_target) if balance and use_unlabeled else None,
        max_blocks=max_blocks,
        callback=callback,
        sampling_seed=seed ^ 0x5DEECE66D,
    )
    result = _engine.run(sources, bk, settings, X.dtype)
    params = {
        "C": C, "C_star": C_star, "unlabeled_loss": unlabeled_loss, "n_iter": n_iter,
        "batch_size": batch_size, "step": step, "precondition": precondition, "balance": bool(balance),
        "n_labeled": n_l, "n_unlabeled": n_u, "lam": 1.0 / C, "loss": "hinge",
        "feature_budget": feature_budget,
    }
    return RFFModel.from_engine(
        result, settings, bk, X, algorithm="tsgs3vm", task=task, classes=classes, params=params
    )


class TSGS3VMClassifier(FunctionalClassifier):
    """Semi-supervised SVM (TSGS3VM) as a scikit-learn estimator.

    ``fit(X, y)`` with unlabeled rows marked ``y == -1`` (scikit-learn's
    semi-supervised convention, as in ``SelfTrainingClassifier``); parameters
    as in :func:`algorithms.tsgs3vm.fit`.
    """

    _fit = staticmethod(fit)
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)

    def __init__(self, *, C=1.0, C_star=None, unlabeled_loss="shg", kernel="rbf", gamma="median",
                 n_iter=None, batch_size=256, block_size=256, step=1.0, precondition=0.1, balance=True,
                 feature_budget=None, random_state=None, backend="auto", dtype=None):
        self.C = C
        self.C_star = C_star
        self.unlabeled_loss = unlabeled_loss
        self.kernel = kernel
        self.gamma = gamma
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.block_size = block_size
        self.step = step
        self.precondition = precondition
        self.balance = balance
        self.feature_budget = feature_budget
        self.random_state = random_state
        self.backend = backend
        self.dtype = dtype

    def fit(self, X, y):
        """Fit on (X, y) with unlabeled rows marked ``y == -1``; CuPy in, model on the GPU."""
        return super().fit(X, y)
