"""The engine's step rules and iterate bookkeeping: step-size schedules, the step
ratio check, CDSG's expected line search (Li & Poczos 2016, rules (8)-(9)) and the
O(1) Polyak average of the iterates."""

from __future__ import annotations

import numpy as np


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
    the scales so far. ``correction`` accumulates the second term; a rescaling
    of ``stored`` folds the average so far into it.
    """

    def __init__(self, xp, coef_shape, dtype):
        self.xp = xp
        self.correction = xp.zeros(coef_shape, dtype=dtype)
        self.scale_sum = 0.0
        self.count = 0

    def record(self, rows, delta):
        self.correction[rows, :] = self.correction[rows, :] + delta * self.scale_sum

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
