"""The engine's step rules and iterate bookkeeping: step-size schedules, the step
ratio check, the block step (plain or preconditioned), CDSG's expected line search
(Li & Poczos 2016, rules (8)-(9)), the O(1) Polyak average of the iterates and the
early-stopping monitor of a held-out source."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from kbackends import ops, to_host_async


def step_size(schedule: str, theta: float, lam: float, t: int) -> float:
    """Step of iteration ``t`` (1-based).

    ``"theta_over_t"``: theta / t (Dai et al. 2014; the paper's choice),
    ``"constant"``: theta, ``"inverse_scaling"``: theta / (1 + lam * theta * t).
    """
    if schedule == "theta_over_t":
        return theta / t
    if schedule == "constant":
        return theta
    return theta / (1.0 + lam * theta * t)


class _Averager:
    """Running Polyak average of the coefficient iterates in O(1) per change.

    With coefficients ``scale_t * stored_t`` after iteration t and changes
    ``delta_e`` to ``stored`` at iterations ``t_e``, the sum over iterations is
    ``stored_T * S_T - sum_e delta_e * S_{t_e - 1}`` where ``S_t`` is the sum of
    the scales so far. ``correction`` accumulates the second term (the engine's
    ``block_update`` kernel adds ``delta_e * S_{t_e - 1}`` with the change itself);
    a rescaling of ``stored`` folds the average so far into it.
    """

    def __init__(self, xp, coef_shape, dtype):
        self.xp = xp
        self.correction = xp.zeros(coef_shape, dtype=dtype)
        self.scale_sum = 0.0
        self.count = 0

    def end_iteration(self, scale: float):
        self.scale_sum += scale
        self.count += 1

    def rescale(self, stored, factor: float):
        """``stored`` is about to be multiplied by ``factor`` (scale divided by it)."""
        partial = stored * self.scale_sum - self.correction
        self.correction = -partial
        self.scale_sum = 0.0
        return stored * factor

    def average(self, stored):
        return (stored * self.scale_sum - self.correction) / max(self.count, 1)


def _check_step_ratio(eta: float, lam: float):
    if eta * lam >= 1.0:
        msg = (
            f"step {eta:g} times lam {lam:g} is >= 1: old blocks would be shrunk to zero or "
            "flipped; lower `step` or `lam`"
        )
        raise ValueError(msg)


def _cdsg_step(beta, g_mean, gamma_t, bound, batch_size):
    """Expected line search (9) for every old block at once (host scalars).

    Finds, per block k, the most negative eta with
    ``2 (beta_k + eta g)^2 + 2 (eta M sigma)^2 / B^2 <= beta_k^2 + (gamma_t g)^2``
    (sigma = 1: the features' products have variance about one). Returns
    ``(k, |eta_k|)`` of the largest step, or ``(None, 0)`` when no block passes
    the checking rule (8), i.e. beats the step of a new block.
    """
    if beta.size == 0 or g_mean == 0.0:
        return None, 0.0
    c = (bound / batch_size) ** 2
    a = 2.0 * g_mean**2 + 2.0 * c
    b = 4.0 * beta * g_mean
    c0 = beta**2 - (gamma_t * g_mean) ** 2
    disc = b * b - 4.0 * a * c0
    with np.errstate(invalid="ignore"):
        lower = np.where(disc >= 0, (-b - np.sqrt(np.maximum(disc, 0.0))) / (2.0 * a), 0.0)
    steps = np.where(lower < 0, -lower, 0.0)
    k = int(np.argmax(steps))
    if steps[k] <= gamma_t:
        return None, 0.0
    return k, float(steps[k])


def gauss_newton_weight(src):
    """A source's weight in the preconditioner's system: its Gauss-Newton curvature, or its weight."""
    return src.weight if src.curvature is None else src.curvature


def gauss_newton_eta(eta, sources):
    """The preconditioned step's length: ``eta`` over the largest curvature of the sources' losses."""
    return eta / max(src.loss.curvature for src in sources)


def _block_step(batches, omega, phase, bk, s, eta: float, F: int):
    """Coefficient change of one block (F, n_outputs) and of the intercept (n_outputs,).

    Plain step (``ridge`` None): the doubly stochastic gradient with the paper's
    features sqrt(2) cos, averaged over the block: ``-eta * (2 / F) * g @ cos(...) / B``.
    Preconditioned: ``-eta * (C + ridge * mean(diag C) * I)^-1 g @ [cos(...), 1] / B``,
    C the mini-batch covariance of ``[cos(...), 1]`` summed over the sources, the
    intercept's column unpenalised.
    """
    xp = bk.xp
    if s.ridge is None:
        grad = grad_b = None
        for batch in batches:
            B = batch.X.shape[0]
            part = ops.rff_weighted_sum(batch.X, omega, phase, batch.g.T, backend=bk, check_input=False).T
            grad = part / B if grad is None else grad + part / B
            gb = xp.mean(batch.g, axis=0)
            grad_b = gb if grad_b is None else grad_b + gb
        return -eta * (2.0 / F) * grad, -eta * grad_b

    # The system and its solve are loop ops (kbackends.ops.steps): on a GPU
    # a few launches where the array calls would be about 30 (docs/benchmarks.md, "GPU").
    cov = rhs = None
    for batch in batches:
        phi = ops.rff_features(batch.X, omega, phase, backend=bk, check_input=False)
        src = batch.source
        weight = gauss_newton_weight(src)
        cov, rhs = ops.gn_system(phi, batch.g, cov, rhs, weight=weight, fit_intercept=s.fit_intercept, backend=bk)
    eta = gauss_newton_eta(eta, [batch.source for batch in batches])
    return ops.gn_solve(cov, rhs, ridge=s.ridge, eta=eta, n_features=F, fit_intercept=s.fit_intercept,
                        dtype=batches[0].X.dtype, backend=bk)


@dataclass
class EarlyStopping:
    """Early stopping on a held-out source (:attr:`EngineSettings.early_stopping`).

    Attributes
    ----------
    source : Source
        The held-out rows, their targets and loss (its ``batch_size`` is unused);
        their ``sample_weight``, if any, weighs the mean loss.
    n_iter_no_change : int
        Stop when the held-out loss has not improved for this many iterations.
    tol : float
        Relative improvement that counts: ``loss < best * (1 - tol)``.
    lag : int
        Iterations between starting a loss to the host and reading it (>= 1): the
        stop decision of iteration ``t`` reads the loss after iteration ``t - lag``.
    """

    source: object
    n_iter_no_change: int = 10
    tol: float = 1e-3
    lag: int = 1


class _Monitor:
    """The held-out loss of every iterate, with no host synchronisation in an iteration.

    ``f`` on the held-out rows is cached like the training caches: after each step
    it is shrunk by ``1 - eta lam`` and the block's change added (``rff_predict`` of
    the block's delta, O(n_held_out x block_size)). The mean loss is a 0-d device
    array started to the host by ``to_host_async`` and read ``lag`` iterations later
    (as CDSG's rule reads its derivative): on cuda the host never waits for the
    device's current iteration. Each pending loss keeps the iterate it measures
    (a device copy of the coefficients: no transfer), so the iterate with the best
    held-out loss is known when the fit stops (``best``).
    """

    def __init__(self, spec: EarlyStopping, bk, f0):
        self.spec, self.bk, self.f = spec, bk, f0
        w = spec.source.sample_weight
        self.weights = None if w is None else bk.asarray((w / w.sum()).astype(np.float64))
        self.pending = deque()
        self.best = math.inf
        self.best_iterate = None  # what ``record`` was given with the best loss so far
        self.stale = 0
        self.losses = []  # the held-out losses read so far, one per iteration

    def record(self, omega, phase, delta, shrink, intercept, iterate=None):
        """After a step: update ``f`` and start its mean loss to the host; ``iterate``
        (anything: the engine's copy of the model) is kept with it."""
        src = self.spec.source
        self.f = ops.rff_predict_add(src.X, omega, phase, delta, self.f, shrink=shrink, backend=self.bk)
        loss = ops.mean_loss(self.f, src.y, intercept, self.weights, loss=src.loss, backend=self.bk)
        self.pending.append((to_host_async(loss), iterate))

    def stop(self) -> bool:
        """Read the losses that are ``lag`` iterations old; True when none improved
        on the best for ``n_iter_no_change`` iterations."""
        while len(self.pending) > self.spec.lag:
            future, iterate = self.pending.popleft()
            value = float(future.get())
            self.losses.append(value)
            if value < self.best:
                self.best_iterate = iterate
            if value < self.best - self.spec.tol * abs(self.best) or self.best == math.inf:
                self.stale = 0
            else:
                self.stale += 1
            self.best = min(self.best, value)
        return self.stale >= self.spec.n_iter_no_change
