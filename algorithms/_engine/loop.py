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
:class:`steps._Averager`). Each step is a method of :class:`_Iteration`.
"""

from __future__ import annotations

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from kbackends import ops, sync_free, to_host_async
from kbackends.random import omega_block

from .._boundary.finite import check_finite_fit
from .._boundary.warn import warn_user
from .._boundary.sparse import batch_rows
from .ahead import SystemsAhead, systems_ahead
from .blocks import evaluate_blocks, grow
from .draws import AHEAD, BatchIndices, BlockPlan
from .progress import engine_bar
from .state import Batch, EngineResult, EngineSettings, EngineState, Source
from .steps import _Averager, _block_step, _cdsg_step, _check_step_ratio, _Monitor, step_size
from .threads import single_threaded_blas
from .window import windows


def run(sources: list[Source], bk, settings: EngineSettings, dtype, *, resume=None, stop=None) -> EngineResult:
    """Run the engine; see the module docstring. Inputs are validated by the caller.

    ``resume`` (an EngineState, prediction caches off) continues a run after its
    ``resume.t`` iterations; ``stop`` ends it after that iteration instead of
    ``settings.n_iter``. The result's ``state`` resumes it again.
    """
    check_block_budget(sources, settings, dtype)
    with single_threaded_blas(bk):
        result = _run(sources, bk, settings, dtype, resume, stop)
    check_result(result, sources, bk)
    return result


# The largest buffer one block step may allocate: a batch's features, a block's
# frequencies, or the preconditioner's float64 system.
BLOCK_BUDGET_BYTES = 2 * 2**30


def check_block_budget(sources, settings, dtype):
    """Refuse, before anything is allocated, a block whose step needs a buffer over
    :data:`BLOCK_BUDGET_BYTES`, naming the parameters that size it."""
    F, d = settings.block_size, sources[0].X.shape[1]
    size = 8 if "64" in str(dtype) else 4  # float32 or float64, whatever the namespace's dtype object
    batch = max(src.batch_size for src in sources)
    needs = {
        f"the batch's features (`batch_size` {batch} x `block_size` {F})": batch * F * size,
        f"a block's frequencies (`block_size` {F} x {d} features)": F * d * size,
    }
    if settings.ridge is not None:
        needs[f"the preconditioner's system (`block_size` + 1 = {F + 1} squared, float64)"] = (F + 1) ** 2 * 8
    what, nbytes = max(needs.items(), key=lambda kv: kv[1])
    if nbytes > BLOCK_BUDGET_BYTES:
        lower = "`block_size` or `batch_size`" if "batch_size" in what else "`block_size`"
        msg = (f"{what} would take {nbytes / 2**30:.1f} GiB, over the {BLOCK_BUDGET_BYTES / 2**30:.0f} GiB a block "
               f"step may use: lower {lower}")
        raise ValueError(msg)


def check_result(result, sources, bk):
    """Refuse a run whose coefficients or intercept are not finite (a step too long)."""
    check_finite_fit({"coefficients": result.coef, "intercept": result.intercept}, sources[0].X, bk.xp,
                     algorithm="the fit", hint="lower `step` (or `gamma`)")


def _run(sources, bk, settings, dtype, resume=None, stop=None):
    """The loop: one :class:`_Iteration` step after another (steps 1-6 of the module
    docstring), in a region with no device -> host transfer (:func:`kbackends.sync_free`);
    only a user callback may read (it runs in a hole)."""
    it = _Iteration(sources, bk, settings, dtype, resume, stop)
    stopped = False
    with sync_free():
        t = it.t_done + 1
        while t <= it.last:
            if it.windows is not None and it.windows.fits(t):  # K iterations on fixed buffers (window.py)
                it.windows.run(t)
                t = it.t_done + 1
                if it.bar is not None:
                    it.bar.step(it.t_done, it.n_blocks, it.windows.batch_loss)
                continue
            eta = step_size(it.schedule, settings.step, settings.lam, t)
            _check_step_ratio(eta, settings.lam)
            batches = it.draw_batches(t)  # 1
            it.take_derivatives(batches)  # 2
            target = it.choose_block(t, batches, eta)  # 3
            omega, phase, delta = it.step_block(t, target, batches, eta)  # 4-5
            it.update_predictions(t, omega, phase, delta, eta)  # the caches and 6
            it.end_iteration(t)
            if it.report(t, batches, eta, target) or (it.monitor is not None and it.monitor.stop()):
                stopped = True
                break
            t += 1
    if it.monitor is not None and not stopped and it.t_done >= settings.n_iter:
        _warn_not_converged(settings.n_iter)
    return it.result()


def _warn_not_converged(n_iter):
    """scikit-learn's ConvergenceWarning: the iterations ran out while the held-out loss still improved."""
    msg = (f"the fit ran its {n_iter} iterations (`n_iter`) before early stopping ended it: the held-out loss was "
           "still improving; raise `n_iter` for a better model")
    warn_user(msg, ConvergenceWarning)


class _Iteration:
    """The loop's state between iterations and its steps, one method each."""

    def __init__(self, sources, bk, settings, dtype, resume, stop):
        s = self.settings = settings
        self.sources, self.bk, self.xp, self.dtype = sources, bk, bk.xp, dtype
        self.F, self.n_dims = s.block_size, sources[0].X.shape[1]
        k_out = s.n_outputs
        # An upper bound: every iteration adds at most one block, and never past the budget.
        self.max_blocks = s.n_iter if s.max_blocks is None else min(s.n_iter, s.max_blocks)
        self.last = s.n_iter if stop is None else stop
        self.schedule = s.schedule
        if self.schedule == "auto":
            self.schedule = "inverse_scaling" if s.ridge is not None else "theta_over_t"
        if resume is None:
            xp = self.xp
            self.stored = xp.zeros((0, k_out), dtype=dtype)  # grown by doubling
            self.n_blocks, self.scale, self.t_done = 0, 1.0, 0
            self.intercept = xp.zeros((k_out,), dtype=dtype)
            self.beta = np.zeros(0)  # CDSG's per-block scalars beta_k (in stored units)
            self.averager = _Averager(xp, (0, k_out), dtype) if s.average else None
            self.intercept_sum = xp.zeros((k_out,), dtype=dtype)
            self.rng = np.random.default_rng(s.sampling_seed)
            # CDSG: the previous iteration's mean derivative on its way to the host, the block
            # it moves and its factor in beta (see choose_block).
            self.pending = None
        else:
            r = resume
            self.stored, self.n_blocks, self.scale, self.intercept, self.beta = (
                r.stored, r.n_blocks, r.scale, r.intercept, r.beta)
            self.averager, self.intercept_sum, self.rng, self.t_done, self.pending = (
                r.averager, r.intercept_sum, r.rng, r.t, r.pending)
        self.caches = [self._cache(src) for src in sources]
        self.bar = engine_bar(s.verbose, self.last, s.label or s.variant, initial=self.t_done,
                              rows_per_iteration=sum(src.batch_size for src in sources),
                              n_rows=sum(src.n_rows for src in sources))
        self.monitor = None
        if s.early_stopping is not None:
            held_out = s.early_stopping.source.X
            f0 = self.predict_all(held_out) * self.scale if self.n_blocks else self.xp.zeros(
                (held_out.shape[0], k_out), dtype=dtype)
            self.monitor = _Monitor(s.early_stopping, bk, f0)
        # Rows and DSG's / UDSG's blocks drawn ahead; one iteration at a time where the
        # generator serves something else between draws (CDSG past its budget, a callback).
        self.plan = None if s.variant == "cdsg" else BlockPlan(
            self.n_blocks, self.max_blocks, (s.udsg_new, s.udsg_old) if s.variant == "udsg" else None)
        ahead = 1 if s.callback is not None or (s.variant == "cdsg" and self.max_blocks < s.n_iter) else AHEAD
        self.indices = BatchIndices(sources, self.rng, bk, self.last, ahead=ahead, plan=self.plan)
        k = systems_ahead(s, bk, sources)
        self.systems = SystemsAhead(k, sources, bk, s, dtype, self.block) if k else None
        self.windows = windows(self)  # the systems-ahead iterations as a replayed graph, where asked

    def _cache(self, src):
        """f on every row of ``src`` when that is cheaper than evaluating each batch, else None."""
        use_cache = self.settings.cache_predictions
        if use_cache == "auto":
            # Keeping f on all rows costs n_rows per block update; evaluating the batch
            # over all blocks costs about batch * n_blocks / 2 per iteration.
            use_cache = src.n_rows <= src.batch_size * self.max_blocks / 2
        return self.xp.zeros((src.X.shape[0], self.settings.n_outputs), dtype=self.dtype) if use_cache else None

    def block(self, b):
        """Block ``b``'s frequencies and phases, regenerated from ``(seed, b)``."""
        s = self.settings
        return omega_block(s.seed, b, self.F, self.n_dims, kernel=s.kernel, gamma=s.gamma, dtype=self.dtype,
                           backend=self.bk, features=s.features)

    def predict_all(self, Xb):
        """The stored blocks (unscaled) evaluated on the rows ``Xb``."""
        s = self.settings
        return evaluate_blocks(self.bk, Xb, self.stored[: self.n_blocks * self.F, :], seed=s.seed, block_size=self.F,
                               n_blocks=self.n_blocks, n_dims=self.n_dims, kernel=s.kernel, gamma=s.gamma,
                               features=s.features)

    def draw_batches(self, t):
        """Step 1: every source's mini-batch and f on it (from the cache or over all blocks),
        the intercept shifted first where the class balance is constrained."""
        xp, bk = self.xp, self.bk
        if self.systems is not None and not self.systems.ready(t):  # the next K iterations' systems
            self.indices.fill(t, self.systems.k)
            self.systems.build(self.indices.upcoming())
        batches = []
        for src, cache, idx in zip(self.sources, self.caches, self.indices.take(t)):
            Xb = batch_rows(src.X, idx, bk)  # CSR rows for sparse X (named, not gathered, on cuda)
            if cache is not None:  # cache[idx] + intercept and y[idx], one kernel
                f, yb = ops.cache_batch(cache, src.y, idx, self.intercept, backend=bk)
            else:
                f = self.predict_all(Xb) * self.scale + self.intercept if self.n_blocks else \
                    xp.zeros((src.batch_size, self.settings.n_outputs), dtype=self.dtype) + self.intercept
                yb = None if src.y is None else xp.take(src.y, idx, axis=0)
            batches.append(Batch(source=src, X=Xb, y=yb, f=f))
        if self.settings.balance is not None:
            source, target = self.settings.balance
            shift = target - xp.mean(batches[source].f, axis=0)
            self.intercept = self.intercept + shift
            for batch in batches:
                batch.f = batch.f + shift
        return batches

    def take_derivatives(self, batches):
        """Step 2: the weighted loss derivatives at f (or the objective's own hook)."""
        if self.settings.derivatives is not None:
            self.settings.derivatives(batches, self.xp, self.bk)
            return
        for batch in batches:
            batch.g = ops.loss_derivative(batch.f, batch.y, loss=batch.source.loss, weight=batch.source.weight,
                                          backend=self.bk)

    def choose_block(self, t, batches, eta):
        """Step 3: a new block, or an old one (UDSG's pattern, a reached budget, CDSG's rule)."""
        s, n_blocks = self.settings, self.n_blocks
        if self.plan is not None:  # DSG and UDSG: drawn with the rows (draws.BlockPlan)
            return self.indices.target
        target = n_blocks  # CDSG: a new block, an old one drawn past the budget, or the rule's
        if n_blocks >= self.max_blocks:
            target = int(self.rng.integers(0, n_blocks))
        if s.variant == "cdsg":
            k_old = self._cdsg_choice(batches, eta)
            if k_old is not None:
                # (9) only chooses the block; the step keeps the schedule's length. A
                # preconditioned step is already a Gauss-Newton line search on the block
                # (lengthening it overshoots, measured on ijcnn1); a plain step of (9)'s
                # length, computed from the previous iteration's derivative, can point
                # the wrong way for this one and feeds back into beta (overflow on a9a).
                target = k_old
        return target

    def _cdsg_choice(self, batches, eta):
        """CDSG's checking rule: the rule of iteration t reads the mean derivative of iteration
        t - 1, started to the host then (to_host_async): reading this iteration's would wait
        for the device to finish its predictions. beta gets t - 1's change the same way."""
        xp = self.xp
        g_mean = None
        if self.pending is not None:
            value, k_prev, factor = self.pending
            g_mean = float(value.get())
            self.beta[k_prev] += factor * g_mean
        self.pending = [to_host_async(sum(xp.mean(batch.g) for batch in batches)), None, 0.0]
        bound = max(src.loss.max_abs_derivative * src.weight for src in self.sources)
        if g_mean is None:
            return None
        k_old, _ = _cdsg_step(self.beta[: self.n_blocks] * self.scale, g_mean, eta, bound,
                              self.sources[0].batch_size)
        return k_old

    def step_block(self, t, target, batches, eta):
        """Steps 4-5: the step on block ``target`` (and the intercept), older blocks shrunk
        through the scale factor, the step added in stored units; a new block grows the buffers."""
        s, F = self.settings, self.F
        omega, phase = self.block(target)
        if self.systems is not None:  # the preconditioner built ahead (ahead.SystemsAhead)
            delta, delta_b = self.systems.step(t, [batch.g for batch in batches], eta)
        else:
            delta, delta_b = _block_step(batches, omega, phase, self.bk, s, eta, F)
        self.scale *= 1.0 - eta * s.lam
        if target == self.n_blocks:
            self._add_block()
        # stored[rows] += delta / scale in place, the intercept's change, and the average's
        # correction and intercept sum (see steps._Averager): one kernel
        avg = self.averager is not None
        self.intercept, self.summed = ops.block_update(
            self.stored, delta, self.intercept, delta_b, self.averager.correction if avg else None,
            self.intercept_sum if avg else None, start=target * F, scale=self.scale,
            fit_intercept=s.fit_intercept, scale_sum=self.averager.scale_sum if avg else 0.0, backend=self.bk)
        if s.variant == "cdsg":
            self.pending[1:] = [target, -eta / self.scale]
        return omega, phase, delta

    def _add_block(self):
        n, F = self.n_blocks, self.F
        if self.stored.shape[0] < (n + 1) * F:
            self.stored = grow(self.xp, self.stored, max((n + 1) * F, 2 * self.stored.shape[0]), self.max_blocks * F)
            if self.averager is not None:
                self.averager.correction = grow(self.xp, self.averager.correction, self.stored.shape[0],
                                                self.stored.shape[0])
        self.beta = np.resize(self.beta, max(self.beta.size, n + 1))
        self.beta[n] = 0.0
        self.n_blocks = n + 1

    def update_predictions(self, t, omega, phase, delta, eta):
        """Step 6: f on the cached rows and on early stopping's held-out rows, shrunk and
        moved by the block's change (one kernel each; the held-out iterate is a device copy)."""
        s, xp = self.settings, self.xp
        for i, src in enumerate(self.sources):
            if self.caches[i] is not None:
                self.caches[i] = ops.rff_predict_add(src.X, omega, phase, delta, self.caches[i],
                                                     shrink=1.0 - eta * s.lam, backend=self.bk)
        if self.monitor is not None:
            iterate = None if self.averager is not None else (
                t, self.n_blocks, xp.asarray(self.stored[: self.n_blocks * self.F, :], copy=True),
                self.scale, self.intercept)
            self.monitor.record(omega, phase, delta, 1.0 - eta * s.lam, self.intercept, iterate)

    def end_iteration(self, t):
        """The average's bookkeeping, and the scale folded into the coefficients before it underflows."""
        if self.averager is not None:
            self.averager.end_iteration(self.scale)
            self.intercept_sum = self.summed
        if self.scale < 1e-30:
            if self.averager is not None:
                self.stored = self.averager.rescale(self.stored, self.scale)
            else:
                self.stored = self.stored * self.scale
            self.beta *= self.scale
            if self.pending is not None:
                self.pending[2] *= self.scale
            self.scale = 1.0
        self.t_done = t

    def report(self, t, batches, eta, target):
        """The progress bar (host values only: no sync) and the user's callback, which reads
        the batch loss on the host (a fit with a callback synchronises once per iteration).
        True when the callback asks to stop."""
        if self.bar is not None:
            held_out = self.monitor.losses[-1] if self.monitor is not None and self.monitor.losses else None
            self.bar.step(t, self.n_blocks, lambda: _batch_loss(batches, self.xp), held_out)
        if self.settings.callback is None:
            return False
        with sync_free(False):
            info = {"iteration": t, "n_blocks": self.n_blocks, "step": eta, "block": target,
                    "batch_loss": float(_batch_loss(batches, self.xp))}
            return bool(self.settings.callback(info))

    def result(self):
        """The run's EngineResult: the last iterate (or the average, or early stopping's best)."""
        if self.bar is not None:
            self.bar.close()  # after the loop: reads the last loss
        F = self.F
        state = EngineState(self.stored, self.n_blocks, self.scale, self.intercept, self.beta, self.averager,
                            self.intercept_sum, self.rng, self.t_done, self.pending)
        n_blocks, intercept = self.n_blocks, self.intercept
        if self.averager is not None:
            coef = self.averager.average(self.stored)[: n_blocks * F, :]
            intercept = self.intercept_sum / max(self.averager.count, 1)
        else:
            coef = self.stored[: n_blocks * F, :] * self.scale
        best = None if self.monitor is None else self.monitor.best_iterate
        if best is not None:  # early stopping returns the iterate of the best held-out loss
            best, n_blocks, coef_stored, best_scale, intercept = best
            coef = coef_stored * best_scale
        return EngineResult(coef=coef, intercept=intercept, n_blocks=n_blocks, n_iter_done=self.t_done, state=state,
                            validation_loss=None if self.monitor is None else self.monitor.losses,
                            best_iteration=best)


def _batch_loss(batches, xp):
    """The weighted mean loss of this iteration's batches: a 0-d device array."""
    return sum(xp.mean(b.source.loss.value(b.f, b.y, xp)) * b.source.weight for b in batches)
