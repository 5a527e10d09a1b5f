"""The engine's data: its sources, settings, result and resumable state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from kbackends.losses import Loss
from kbackends.random import check_features

from .._boundary.params import SCHEDULES  # noqa: F401 (the engine's schedules: one list, the parameters')
from .steps import EarlyStopping


VARIANTS = ("dsg", "udsg", "cdsg")


@dataclass
class Source:
    """One data source of the objective.

    Attributes
    ----------
    X : array of shape (n_rows, n_dims)
        Rows on the engine's backend, validated.
    y : array of shape (n_rows,) or (n_rows, n_outputs), or None
        Targets as the loss expects them; None for unlabeled sources whose loss
        ignores ``y``.
    loss : Loss
    weight : float
        Multiplier of this source's mean loss.
    batch_size : int
        Rows drawn per iteration (with replacement).
    curvature : float or None
        Weight of the source in the preconditioned step's covariance; None: ``weight``.
    sample_weight : numpy array of shape (n_rows,) or None
        Relative weights of the rows (positive, on the host). The mini-batches draw
        row ``i`` with probability ``w_i / sum(w)``, so weight ``k`` is the row
        repeated ``k`` times in distribution (see :meth:`draw`); None: uniform.
    rows : numpy int64 array or None
        The rows of ``X`` (and ``y``) the source draws from, on the host: a source
        on part of an array without copying it (the training rows of an early-stopping
        split); ``sample_weight`` is then one weight per entry of ``rows``. None: every row.
    """

    X: object
    y: object
    loss: Loss
    weight: float
    batch_size: int
    # Weight of this source's rows in the preconditioner's curvature (default: weight),
    # for losses whose curvature in f is not their weight (TSGSU's similar points: 0).
    curvature: float | None = None
    sample_weight: object = None
    rows: object = None
    _cdf: object = field(default=None, init=False, repr=False)

    def draw(self, rng):
        """Host indices of one mini-batch (with replacement).

        Uniform without weights (``rng.integers``, the stream of an unweighted fit);
        with weights, inverse-CDF sampling proportional to them. Sampling, rather than
        multiplying the loss derivatives by the weights, keeps the per-row gradient
        scale (so the step schedule and the preconditioner's curvature need no
        change) and has the lower variance for skewed weights.
        """
        n = self.n_rows
        if self.sample_weight is None:
            drawn = rng.integers(0, n, size=self.batch_size)
        else:
            if self._cdf is None:
                self._cdf = np.cumsum(self.sample_weight, dtype=np.float64)
            u = rng.random(self.batch_size) * self._cdf[-1]
            drawn = np.minimum(np.searchsorted(self._cdf, u, side="right"), n - 1)
        return drawn if self.rows is None else self.rows[drawn]

    @property
    def n_rows(self):
        """The rows the source draws from."""
        return self.X.shape[0] if self.rows is None else self.rows.shape[0]


@dataclass
class Batch:
    """One source's mini-batch in one iteration."""

    source: Source
    X: object  # (batch, n_dims) rows
    y: object  # their targets, or None
    f: object  # f on them, (batch, n_outputs)
    g: object = None  # weighted loss derivatives at f


def sampling_seed(seed):
    """The seed of the mini-batch draws of a fit seeded with ``seed``.

    ``seed`` itself keys the random features (``omega_block``); XOR with a fixed odd
    constant (0x5DEECE66D, the multiplier of Java's 48-bit LCG) gives the row draws
    a stream of their own, the same on every backend.
    """
    return seed ^ 0x5DEECE66D


@dataclass
class EngineSettings:
    """Hyper-parameters of one engine run (already validated)."""

    n_iter: int
    block_size: int
    kernel: str
    gamma: float
    seed: int
    lam: float
    step: float
    schedule: str
    ridge: float | None  # relative ridge of the preconditioner; None: plain gradient steps
    variant: str = "dsg"
    udsg_new: int = 1  # UDSG's G
    udsg_old: int = 1  # UDSG's U
    average: bool = False
    fit_intercept: bool = True
    n_outputs: int = 1
    cache_predictions: str | bool = "auto"
    # (source index, target): before each step, shift the intercept so the mean of
    # f over that source's batch is the target (the S3VM class-balance constraint).
    balance: tuple | None = None
    # Feature budget: at most this many blocks; once reached, each iteration updates
    # an old block drawn uniformly (UDSG's step) so an iteration's cost stops growing.
    max_blocks: int | None = None
    callback: Callable | None = None
    sampling_seed: int = 0  # seeds the mini-batch draws: sampling_seed(seed)
    # Objectives that are not a plain sum of per-source mean losses (TSGSU's
    # non-negative risk correction, which weighs each source's derivatives by the
    # sign of a risk term summed over the batches of several sources): called as
    # ``derivatives(batches, xp, bk)`` after the predictions, it sets every batch's
    # ``g`` (weighted loss derivatives) in place of ``loss.derivative * weight``.
    derivatives: Callable | None = None
    # Stop when the loss on a held-out source stops improving (steps.EarlyStopping);
    # its loss is read ``lag`` iterations late, so an iteration never waits for the host.
    early_stopping: EarlyStopping | None = None
    # verbose >= 1: a progress bar on stderr (algorithms._engine.progress; no host sync per iteration).
    verbose: int = 0
    label: str | None = None  # the bar's name (default: the variant)
    features: str = "monte_carlo"  # how a block's frequencies are placed (kbackends.random.FEATURES)
    # The preconditioner's systems built this many iterations ahead at once ("auto": where
    # algorithms._engine.ahead.AUTO_BACKENDS says, today nowhere; 0: each iteration solves its own).
    systems_ahead: int | str = "auto"
    # The systems-ahead iterations a window at a time on device buffers, replayed as a CUDA
    # graph on CuPy (algorithms._engine.window; "auto": where window.AUTO_BACKENDS says, today nowhere).
    graph: bool | str = "auto"


@dataclass
class EngineResult:
    """What a run leaves: the coefficients of every block and the intercept."""

    coef: object  # array (n_blocks * block_size, n_outputs)
    intercept: object  # array (n_outputs,)
    n_blocks: int
    n_iter_done: int
    state: object = None  # the EngineState to resume from (see ``run``)
    validation_loss: list | None = None  # early stopping's held-out loss after each iteration read
    best_iteration: int | None = None  # early stopping: the iteration whose iterate ``coef`` is


@dataclass
class EngineState:
    """The loop's variables between two iterations, so a run can be resumed from them
    (the distributed fit runs the engine in rounds of local steps; see
    :mod:`algorithms.distributed`). ``stored * scale`` are the coefficients."""

    stored: object  # (capacity, n_outputs), rows past n_blocks * block_size are zero
    n_blocks: int
    scale: float
    intercept: object
    beta: object  # numpy (n_blocks,), CDSG's per-block scalars (stored units)
    averager: object  # _Averager or None
    intercept_sum: object
    rng: object  # numpy Generator of the mini-batches and the block choices
    t: int  # iterations done
    pending: object = None  # CDSG's lagged rule: the last iteration's derivative on its way, block, factor


# Engine settings that an algorithm's table holds under the same name (precondition: ridge).
_ENGINE_FIELDS = ("n_iter", "block_size", "kernel", "features", "lam", "step", "schedule", "average", "fit_intercept",
                  "callback", "verbose")


def engine_settings(values, *, gamma, seed, **fields):
    """The shared engine's settings from a table's validated ``values`` (in a ``fit``
    under :meth:`ParamTable.entry`, its ``locals()``: the arguments arrive validated).

    Every engine field the table has is taken from ``values`` (``precondition`` is the
    engine's ``ridge``); ``gamma`` and ``seed`` are the resolved width and seed; the
    sampler's seed is :func:`sampling_seed`; ``fields`` add the algorithm's own settings or
    override (a derived ``n_iter``, TSGS3VM's ``lam = 1 / C``, ...).

    Returns
    -------
    algorithms._engine.EngineSettings
    """
    shared = {name: values[name] for name in _ENGINE_FIELDS if name in values}
    check_features(shared.get("features", "monte_carlo"), shared.get("kernel", "rbf"))  # before any work
    if "precondition" in values:
        shared["ridge"] = values["precondition"]
    return EngineSettings(**{"schedule": "auto", **shared, "gamma": gamma, "seed": seed,
                             "sampling_seed": sampling_seed(seed), **fields})
