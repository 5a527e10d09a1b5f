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
from sklearn.base import BaseEstimator, ClassifierMixin

from kbackends._xp_utils import to_numpy
from kbackends.random import KERNELS

from . import _engine
from ._losses import HINGE, UNLABELED_LOSSES
from ._model import RFFModel
from ._validation import (
    check_choice,
    check_gamma,
    check_nonneg_float,
    check_positive_int,
    check_X,
    check_y_length,
    resolve_backend,
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
        Two class labels; when ``X_unlabeled`` is None, rows whose label equals
        ``unlabeled_label`` are the unlabeled data (scikit-learn's convention).
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

    Returns
    -------
    RFFModel
        ``algorithm="tsgs3vm"``; predict with :func:`predict`.
    """
    bk = resolve_backend(backend, X, y, X_unlabeled)
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
    if classes.size != 2:
        msg = (
            f"TSGS3VM needs labeled rows of exactly 2 classes, got {classes.size} "
            f"({classes[:5].tolist()}); unlabeled rows carry `unlabeled_label`={unlabeled_label!r}"
        )
        raise ValueError(msg)
    if X_u.shape[0] == 0:
        msg = "no unlabeled rows: pass `X_unlabeled` or mark rows of `y` with `unlabeled_label`"
        raise ValueError(msg)
    n_l, n_u = X_l.shape[0], X_u.shape[0]
    C_star = C * n_l / n_u if C_star is None else check_nonneg_float("C_star", C_star)
    n_iter = math.ceil(n_u / batch_size) if n_iter is None else check_positive_int("n_iter", n_iter)

    seed = seed_from(random_state)
    gamma = check_gamma(gamma, xp.concat((X_l, X_u), axis=0), bk, seed)
    y_pm = bk.asarray(np.where(y_l == classes[1], 1.0, -1.0).reshape(-1, 1))
    y_pm = xp.astype(y_pm, X.dtype)
    balance_target = float(np.mean(np.where(y_l == classes[1], 1.0, -1.0)))

    # Objective (1) divided by C: lam = 1/C, labeled weight 1, unlabeled C_star / C.
    sources = [
        _engine.Source(X=X_l, y=y_pm, loss=HINGE, weight=1.0, batch_size=batch_size),
        _engine.Source(X=X_u, y=None, loss=UNLABELED_LOSSES[unlabeled_loss], weight=C_star / C,
                       batch_size=batch_size),
    ]
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
        n_outputs=1,
        balance=(1, balance_target) if balance else None,
        callback=callback,
        sampling_seed=seed ^ 0x5DEECE66D,
    )
    result = _engine.run(sources, bk, settings, X.dtype)
    params = {
        "C": C, "C_star": C_star, "unlabeled_loss": unlabeled_loss, "n_iter": n_iter,
        "batch_size": batch_size, "step": step, "precondition": precondition, "balance": bool(balance),
        "n_labeled": n_l, "n_unlabeled": n_u, "lam": 1.0 / C, "loss": "hinge",
    }
    return RFFModel.from_engine(
        result, settings, bk, X, algorithm="tsgs3vm", task="binary", classes=classes, params=params
    )


class TSGS3VMClassifier(ClassifierMixin, BaseEstimator):
    """Semi-supervised SVM (TSGS3VM) as a scikit-learn estimator.

    ``fit(X, y)`` with unlabeled rows marked ``y == -1`` (scikit-learn's
    semi-supervised convention, as in ``SelfTrainingClassifier``); parameters
    as in :func:`algorithms.tsgs3vm.fit`.
    """

    def __init__(self, *, C=1.0, C_star=None, unlabeled_loss="shg", kernel="rbf", gamma="median",
                 n_iter=None, batch_size=256, block_size=256, step=1.0, precondition=0.1, balance=True,
                 random_state=None, backend="auto", dtype=None):
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
        self.random_state = random_state
        self.backend = backend
        self.dtype = dtype

    def fit(self, X, y):
        self.model_ = fit(X, y, **self.get_params())
        self.classes_ = np.asarray(self.model_.classes)
        self.n_features_in_ = self.model_.n_features_in
        return self

    def decision_function(self, X):
        return decision_function(self.model_, X)

    def predict(self, X):
        return predict(self.model_, X)
