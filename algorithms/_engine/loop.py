"""The stochastic functional-gradient engine shared by DSG, UDSG, CDSG, TSGS3VM and TSGSU.

Model: ``f(x) = intercept + sum_b coef_b . cos(omega_b x + phase_b)``, with block
``b``'s frequencies regenerated from ``(seed, b)`` by
:func:`kbackends.random.omega_block`. The objective is a sum of data-source
risks plus the RKHS penalty,

    (lam / 2) ||f||^2 + sum_s weight_s * mean_{x in source s} loss_s(f(x), y),

minimised by doubly stochastic functional gradients (Dai et al. 2014, as
restated in Li & Poczos 2016, Algorithms 1-4). One iteration:

1. draw a mini-batch from every source and evaluate ``f`` on it (from a cache
   of ``f`` on the source's rows when that is cheaper, else ``rff_predict``
   over all blocks);
2. take the loss derivatives ``g`` there;
3. choose the block to update: a new one (DSG), a new one or an old one in a
   fixed pattern (UDSG: ``G`` new, then ``U`` old drawn uniformly), or the old
   block that passes the checking rule (8) with the largest expected
   line-search step (9) (CDSG);
4. step on that block: ``-eta * g @ features / batch`` (``rff_weighted_sum``),
   optionally preconditioned by the mini-batch feature covariance plus a ridge
   (a Gauss-Newton step on the block, as the DSG authors' code does);
5. shrink every older block by ``(1 - eta * lam)`` through one global scale
   factor (O(1); folded into the coefficients before it underflows);
6. with early stopping, update ``f`` on the held-out rows the same way and start
   its mean loss to the host; stop once the loss read ``lag`` iterations later has
   not improved for ``n_iter_no_change`` iterations (:class:`steps.EarlyStopping`).

Polyak averaging of the iterates is optional and costs O(1) per event (see
:class:`_Averager`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from kbackends import get_kernel, sync_free, to_host_async
from kbackends.losses import Loss
from kbackends.random import omega_block, omega_blocks

from .._boundary.finite import check_finite_fit
from .draws import AHEAD, BatchIndices
from .progress import engine_bar
from .steps import EarlyStopping, _Averager, _block_step, _cdsg_step, _check_step_ratio, _Monitor, step_size
from .._boundary.sparse import batch_rows
from .threads import single_threaded_blas

SCHEDULES = ("auto", "theta_over_t", "constant", "inverse_scaling")
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
    _cdf: object = field(default=None, init=False, repr=False)

    def draw(self, rng):
        """Host indices of one mini-batch (with replacement).

        Uniform without weights (``rng.integers``, the stream of an unweighted fit);
        with weights, inverse-CDF sampling proportional to them. Sampling, rather than
        multiplying the loss derivatives by the weights, keeps the per-row gradient
        scale (so the step schedule and the preconditioner's curvature need no
        change) and has the lower variance for skewed weights.
        """
        n = self.X.shape[0]
        if self.sample_weight is None:
            return rng.integers(0, n, size=self.batch_size)
        if self._cdf is None:
            self._cdf = np.cumsum(self.sample_weight, dtype=np.float64)
        u = rng.random(self.batch_size) * self._cdf[-1]
        return np.minimum(np.searchsorted(self._cdf, u, side="right"), n - 1)


@dataclass
class _Batch:
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


def _kernel(op, bk):
    """The registered kernel of ``op`` on ``bk``, called directly: the engine's arrays are
    validated once at the fit's entry (and predictions' at predict's), so the loop skips
    the public ops' per-call checks of namespaces, shapes and dtypes (issue 16)."""
    return get_kernel(op, bk)


def evaluate_blocks(bk, X, coef, *, seed, block_size, n_blocks, n_dims, kernel, gamma):
    """``sum over blocks b < n_blocks of cos(X omega_b^T + phase_b) @ coef_b``, shape (n, k).

    Blocks are evaluated in groups of up to :func:`group_features` features per
    ``rff_predict`` call: wider calls read ``X`` fewer times and amortise the
    per-call work. A group's omega is also held under ``GROUP_BYTES``: with many
    input dimensions (sparse text data, d = 50,000) 4096 features of omega would
    be 800 MB. A finished group's stacked omega is one cache entry (``omega_blocks``);
    only the last, growing group is stacked from its blocks, so an iteration's host
    work grows by a lookup per group, not per block (byte-budgeted caches).
    """
    xp = bk.xp
    F = block_size
    out = xp.zeros((X.shape[0], coef.shape[1]), dtype=X.dtype)
    group = min(group_features(bk), GROUP_BYTES // max(1, n_dims * np.dtype(_dtype_name(X)).itemsize))
    per_group = max(1, group // F)
    same = {"kernel": kernel, "gamma": gamma, "dtype": X.dtype, "backend": bk}
    for start in range(0, n_blocks, per_group):
        stop = min(n_blocks, start + per_group)
        omega, phase = omega_blocks(seed, start, stop, F, n_dims, keep=stop - start == per_group, **same)
        out = out + _kernel("rff_predict", bk)(X, omega, phase, coef[start * F : stop * F, :], xp=xp, form="cos")
    return out


GROUP_FEATURES = 4096
# On a GPU an rff_predict call costs ~1 ms of host time (launches) against ~0.1 ms of
# device time for 4096 features x 4096 rows (H100, docs/benchmarks.md "GPU").
GROUP_FEATURES_DEVICE = 16384
GROUP_BYTES = 64 * 2**20


def group_features(bk):
    """Features per ``rff_predict`` call in :func:`evaluate_blocks` on ``bk``."""
    return GROUP_FEATURES_DEVICE if bk.name in ("cuda", "cudasim") else GROUP_FEATURES


def _dtype_name(X):
    return "float32" if "float32" in str(X.dtype) else "float64"


def run(sources: list[Source], bk, settings: EngineSettings, dtype, *, resume=None, stop=None) -> EngineResult:
    """Run the engine; see the module docstring. Inputs are validated by the caller.

    ``resume`` (an EngineState, prediction caches off) continues a run after its
    ``resume.t`` iterations; ``stop`` ends it after that iteration instead of
    ``settings.n_iter``. The result's ``state`` resumes it again.
    """
    with single_threaded_blas(bk):
        result = _run(sources, bk, settings, dtype, resume, stop)
    check_result(result, sources, bk)
    return result


def check_result(result, sources, bk):
    """Refuse a run whose coefficients or intercept are not finite (a step too long)."""
    check_finite_fit({"coefficients": result.coef, "intercept": result.intercept}, sources[0].X, bk.xp,
                     algorithm="the fit", hint="lower `step` (or `gamma`)")


def _run(sources, bk, settings, dtype, resume=None, stop=None):
    xp = bk.xp
    s = settings
    F = s.block_size
    k_out = s.n_outputs
    n_dims = sources[0].X.shape[1]
    rng = np.random.default_rng(s.sampling_seed)

    def block(b):
        return omega_block(s.seed, b, F, n_dims, kernel=s.kernel, gamma=s.gamma, dtype=dtype, backend=bk)

    def predict_all(Xb):
        return evaluate_blocks(bk, Xb, stored[: n_blocks * F, :], seed=s.seed, block_size=F,
                               n_blocks=n_blocks, n_dims=n_dims, kernel=s.kernel, gamma=s.gamma)

    # An upper bound: every iteration adds at most one block, and never past the budget.
    max_blocks = s.n_iter if s.max_blocks is None else min(s.n_iter, s.max_blocks)
    stored = xp.zeros((0, k_out), dtype=dtype)  # grown by doubling
    n_blocks = 0
    scale = 1.0
    intercept = xp.zeros((k_out,), dtype=dtype)
    beta = np.zeros(0)  # CDSG's per-block scalars beta_k (in stored units)
    averager = _Averager(xp, (0, k_out), dtype) if s.average else None
    intercept_sum = xp.zeros((k_out,), dtype=dtype)

    caches = []
    for src in sources:
        use_cache = s.cache_predictions
        if use_cache == "auto":
            # Keeping f on all rows costs n_rows per block update; evaluating the batch
            # over all blocks costs about batch * n_blocks / 2 per iteration.
            use_cache = src.X.shape[0] <= src.batch_size * max_blocks / 2
        caches.append(xp.zeros((src.X.shape[0], k_out), dtype=dtype) if use_cache else None)

    schedule = s.schedule
    if schedule == "auto":
        schedule = "inverse_scaling" if s.ridge is not None else "theta_over_t"

    t_done = 0
    last = s.n_iter if stop is None else stop
    bar = engine_bar(s.verbose, last, s.label or s.variant, initial=resume.t if resume is not None else 0)
    # CDSG: the previous iteration's mean derivative on its way to the host, the block it
    # moves and its factor in beta (see the rule below).
    pending = None
    if resume is not None:
        r = resume
        stored, n_blocks, scale, intercept, beta = r.stored, r.n_blocks, r.scale, r.intercept, r.beta
        averager, intercept_sum, rng, t_done, pending = r.averager, r.intercept_sum, r.rng, r.t, r.pending
    monitor = None
    if s.early_stopping is not None:
        held_out = s.early_stopping.source.X
        monitor = _Monitor(s.early_stopping, bk, predict_all(held_out) * scale if n_blocks else
                           xp.zeros((held_out.shape[0], k_out), dtype=dtype))
    indices = BatchIndices(sources, rng, bk, last, ahead=1 if s.variant == "udsg" or s.callback is not None or (
        s.max_blocks is not None and s.max_blocks < s.n_iter) else AHEAD)  # ahead only where rng serves nothing else
    # No device -> host transfer inside an iteration (kbackends.sync_free): scalars stay
    # 0-d device arrays; only a user callback may read (it runs in a hole).
    with sync_free():
        for t in range(t_done + 1, last + 1):
            eta = step_size(schedule, s.step, s.lam, t)
            _check_step_ratio(eta, s.lam)

            # 1-2: batches, predictions, derivatives.
            batches = []
            for src, cache, idx in zip(sources, caches, indices.take(t)):
                Xb = batch_rows(src.X, idx, bk)  # CSR rows for sparse X (named, not gathered, on cuda)
                if cache is not None:  # cache[idx] + intercept and y[idx], one kernel
                    f, yb = _kernel("cache_batch", bk)(cache, src.y, idx, intercept, xp=xp)
                else:
                    f = predict_all(Xb) * scale + intercept if n_blocks else \
                        xp.zeros((src.batch_size, k_out), dtype=dtype) + intercept
                    yb = None if src.y is None else xp.take(src.y, idx, axis=0)
                batches.append(_Batch(source=src, X=Xb, y=yb, f=f))
            if s.balance is not None:
                source, target = s.balance
                shift = target - xp.mean(batches[source].f, axis=0)
                intercept = intercept + shift
                for batch in batches:
                    batch.f = batch.f + shift
            if s.derivatives is not None:
                s.derivatives(batches, xp, bk)
            else:
                for batch in batches:
                    batch.g = _kernel("loss_derivative", bk)(batch.f, batch.y, xp=xp, loss=batch.source.loss,
                                                             weight=batch.source.weight)

            # 3: which block.
            target = n_blocks  # a new block unless the variant says otherwise
            if n_blocks and s.variant == "udsg":
                if (t - 1) % (s.udsg_new + s.udsg_old) >= s.udsg_new:
                    target = int(rng.integers(0, n_blocks))
            if n_blocks >= max_blocks:
                target = int(rng.integers(0, n_blocks))
            g_mean = None
            if s.variant == "cdsg":
                # The rule of iteration t reads the mean derivative of iteration t - 1, started
                # to the host then (to_host_async): reading this iteration's would wait for the
                # device to finish its predictions. beta gets t - 1's change the same way.
                g_mean = None
                if pending is not None:
                    value, k_prev, factor = pending
                    g_mean = float(value.get())
                    beta[k_prev] += factor * g_mean
                pending = [to_host_async(sum(xp.mean(batch.g) for batch in batches)), None, 0.0]
                bound = max(src.loss.max_abs_derivative * src.weight for src in sources)
                k_old, _ = (None, 0.0) if g_mean is None else _cdsg_step(
                    beta[:n_blocks] * scale, g_mean, eta, bound, sources[0].batch_size)
                if k_old is not None:
                    # (9) only chooses the block; the step keeps the schedule's length. A
                    # preconditioned step is already a Gauss-Newton line search on the block
                    # (lengthening it overshoots, measured on ijcnn1); a plain step of (9)'s
                    # length, computed from the previous iteration's derivative, can point
                    # the wrong way for this one and feeds back into beta (overflow on a9a).
                    target = k_old

            # 4: the step on that block (and the intercept).
            omega, phase = block(target)
            delta, delta_b = _block_step(batches, omega, phase, bk, s, eta, F)

            # 5: shrink old blocks (scale), then add the step in stored units.
            scale *= 1.0 - eta * s.lam
            if target == n_blocks:
                if stored.shape[0] < (n_blocks + 1) * F:
                    stored = _grow(xp, stored, max((n_blocks + 1) * F, 2 * stored.shape[0]), max_blocks * F)
                    if averager is not None:
                        averager.correction = _grow(xp, averager.correction, stored.shape[0], stored.shape[0])
                beta = np.resize(beta, max(beta.size, n_blocks + 1))
                beta[n_blocks] = 0.0
                n_blocks += 1
            # stored[rows] += delta / scale in place, the intercept's change, and the average's
            # correction and intercept sum (see _steps._Averager): one kernel
            avg = averager is not None
            intercept, summed = _kernel("block_update", bk)(
                stored, delta, intercept, delta_b, averager.correction if avg else None, intercept_sum if avg else None,
                xp=xp, start=target * F, scale=scale, fit_intercept=s.fit_intercept,
                scale_sum=averager.scale_sum if avg else 0.0)
            if s.variant == "cdsg":
                pending[1:] = [target, -eta / scale]

            for i, src in enumerate(sources):
                if caches[i] is not None:  # f * (1 - eta lam) + the block's change, one kernel
                    caches[i] = _kernel("rff_predict_add", bk)(src.X, omega, phase, delta, caches[i], xp=xp,
                                                               form="cos", shrink=1.0 - eta * s.lam)
            if monitor is not None:  # the iterate measured: a device copy, no transfer
                iterate = None if averager is not None else (
                    t, n_blocks, xp.asarray(stored[: n_blocks * F, :], copy=True), scale, intercept)
                monitor.record(omega, phase, delta, 1.0 - eta * s.lam, intercept, iterate)

            if averager is not None:
                averager.end_iteration(scale)
                intercept_sum = summed
            if scale < 1e-30:  # fold the scale into the coefficients before it underflows
                if averager is not None:
                    stored = averager.rescale(stored, scale)
                else:
                    stored = stored * scale
                beta *= scale
                if pending is not None:
                    pending[2] *= scale
                scale = 1.0

            t_done = t
            if bar is not None:  # host values only (the loss a round late): no sync
                bar.step(t, n_blocks, lambda: _batch_loss(batches, xp))
            # The batch loss is computed only for a callback, and read on the host there: a
            # fit with a callback synchronises once per iteration (documented in the fits).
            if s.callback is not None:
                with sync_free(False):
                    info = {
                        "iteration": t,
                        "n_blocks": n_blocks,
                        "step": eta,
                        "block": target,
                        "batch_loss": float(_batch_loss(batches, xp)),
                    }
                    if s.callback(info):
                        break
            if monitor is not None and monitor.stop():
                break

    if bar is not None:
        bar.close()  # after the loop: reads the last loss

    coef_stored = stored[: n_blocks * F, :]
    state = EngineState(stored, n_blocks, scale, intercept, beta, averager, intercept_sum, rng, t_done, pending)
    if averager is not None:
        coef = averager.average(stored)[: n_blocks * F, :]
        intercept = intercept_sum / max(averager.count, 1)
    else:
        coef = coef_stored * scale
    best = None if monitor is None else monitor.best_iterate
    if best is not None:  # early stopping returns the iterate of the best held-out loss
        best, n_blocks, coef_stored, best_scale, intercept = best
        coef = coef_stored * best_scale
    return EngineResult(coef=coef, intercept=intercept, n_blocks=n_blocks, n_iter_done=t_done, state=state,
                        validation_loss=None if monitor is None else monitor.losses, best_iteration=best)


def _batch_loss(batches, xp):
    """The weighted mean loss of this iteration's batches: a 0-d device array."""
    return sum(xp.mean(b.source.loss.value(b.f, b.y, xp)) * b.source.weight for b in batches)


def _grow(xp, a, new_rows: int, cap: int):
    new_rows = min(new_rows, max(cap, a.shape[0]))
    out = xp.zeros((new_rows, a.shape[1]), dtype=a.dtype)
    if a.shape[0]:
        out[: a.shape[0], :] = a
    return out
