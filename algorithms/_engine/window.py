"""K iterations at a time with every per-iteration value in device buffers: the form of
the preconditioned iteration a CUDA graph holds, captured once and replayed each window.

A graph replays its kernels with the arguments they were captured with, so nothing
an iteration reads may come from the host or live in memory that moves. In this path
(taken where :func:`windows` says) every ``K`` iterations the host:

1. draws the window's rows and blocks (:class:`draws.BatchIndices`, :class:`draws.BlockPlan`)
   and builds their systems (:class:`ahead.SystemsAhead`: the features straight into
   the window's buffers, the inverses);
2. computes the window's schedule on the host (step lengths, shrink factors, the global
   scale after each step, each step's rows of the stored coefficients) and copies the
   schedule, the rows' indices, the inverses and the blocks' frequencies into buffers
   that stay put for the whole fit;
3. runs the window's ``K`` slots (:meth:`StaticWindows._body`), each reading its
   buffers' slot ``k``: a batch from the prediction cache, the loss derivatives, the
   right-hand side and the step as reductions (no cuBLAS or cuSOLVER call: CuPy refuses
   them under capture), the stored coefficients and intercept updated in place, the
   caches shrunk and moved by the block's change. On CuPy the body is captured once as
   a CUDA graph (:class:`kbackends.CapturedGraph`) and each later window replays it;
   elsewhere (the cpu engine, the simulator) it runs as it is, which is how the CPU
   proves the schedule and a GPU the capture.

The sums run in another order than the eager step's (reductions for cuBLAS's
products, the shrink of the cache apart from the block's change): the models agree
with the eager path's within float32 rounding. A window whose scale would underflow
(the eager loop folds it into the coefficients below 1e-30) and the iterations past
the last whole window run eagerly; so do TSGSU's fits (its derivative hook keeps host
state between iterations).
"""

from __future__ import annotations

import numpy as np

from kbackends import CapturedGraph, ops

from .ahead import changes, sum_rhs
from .steps import _check_step_ratio, gauss_newton_eta, step_size

# Engines where graph="auto" takes this path: none. On an H100 (docs/benchmarks.md, "GPU")
# windows of 16 took DSG on ijcnn1 in 0.114 s against the eager step's 0.142-0.229 s, but
# were no faster at 50,000-1,000,000 synthetic rows and hold 10-15x the device memory.
AUTO_BACKENDS = ()
SCALE_FLOOR = 1e-30  # the eager loop folds the scale into the coefficients below this


def windows(it):
    """The :class:`StaticWindows` of the run ``it`` (a loop ``_Iteration``) where its
    settings allow them, else None: ``settings.graph`` (True, or "auto" on
    :data:`AUTO_BACKENDS`), the systems built ahead, every source cached, no derivative
    hook (TSGSU's keeps host state between iterations), early stopping or average."""
    s = it.settings
    wanted = s.graph is True or (s.graph == "auto" and it.bk.name in AUTO_BACKENDS)
    if not wanted or it.systems is None or any(cache is None for cache in it.caches):
        return None
    if s.derivatives is not None or s.early_stopping is not None or s.average:
        return None
    return StaticWindows(it)


class StaticWindows:
    """The buffers of a window and its body (see the module docstring)."""

    def __init__(self, it):
        xp, s, F = it.xp, it.settings, it.F
        self.it, self.xp, self.k, self.F = it, xp, it.systems.k, F
        K, f64, d = self.k, xp.float64, it.n_dims
        it.stored = _grown(xp, it.stored, it.max_blocks * F)  # the whole budget now: it never moves again
        self.idx = [xp.zeros((K, src.batch_size), dtype=xp.int64) for src in it.sources]
        self.features = [xp.zeros((K, src.batch_size, F), dtype=it.dtype) for src in it.sources]
        self.inverses = xp.zeros((K, F + 1 if s.fit_intercept else F, F + 1 if s.fit_intercept else F), dtype=f64)
        self.omega = xp.zeros((K, F, d), dtype=it.dtype)
        self.phase = xp.zeros((K, F), dtype=it.dtype)
        self.eta = xp.zeros((K,), dtype=f64)  # the preconditioned step's length
        self.shrink = xp.zeros((K,), dtype=it.dtype)
        self.scale = xp.zeros((K,), dtype=f64)  # the global scale after each step
        self.rows = xp.zeros((K, F), dtype=xp.int64)  # each step's rows of the stored coefficients
        self.stored, self.intercept = it.stored, xp.asarray(it.intercept, copy=True)
        self.caches = [xp.asarray(cache, copy=True) for cache in it.caches]
        self.loss = xp.zeros((), dtype=f64)  # the window's last batch loss (the progress bar's)
        it.systems.features_out = self.features  # the systems' features built straight into them
        self.graph = CapturedGraph(self._body, xp)

    def fits(self, t):
        """Whether iterations ``t .. t + K - 1`` run as a window: all of them in the run
        and the scale above :data:`SCALE_FLOOR` throughout."""
        it = self.it
        if t + self.k - 1 > it.last:
            return False
        scale = it.scale
        for u in range(t, t + self.k):
            scale *= 1.0 - step_size(it.schedule, it.settings.step, it.settings.lam, u) * it.settings.lam
        return scale >= SCALE_FLOOR

    def run(self, t):
        """Iterations ``t .. t + K - 1``: the host's part, then the body (replayed)."""
        it, xp, K, F = self.it, self.xp, self.k, self.F
        s = it.settings
        it.indices.fill(t, K)
        upcoming = it.indices.upcoming()[:K]
        it.systems.build(upcoming)
        eta, shrink, scale, rows = np.empty(K), np.empty(K), np.empty(K), np.empty((K, F), dtype=np.int64)
        for j, (u, _, target) in enumerate(upcoming):
            step = step_size(it.schedule, s.step, s.lam, u)
            _check_step_ratio(step, s.lam)
            eta[j], shrink[j] = gauss_newton_eta(step, it.sources), 1.0 - step * s.lam
            it.scale *= shrink[j]
            scale[j] = it.scale
            rows[j] = target * F + np.arange(F)
            if target == it.n_blocks:
                it._add_block()
        self._copy_in(upcoming, eta, shrink, scale, rows)
        for u in range(t, t + K):
            it.indices.take(u)  # the window's draws are consumed
        self.graph.run()
        it.stored, it.intercept, it.caches = self.stored, self.intercept, list(self.caches)
        it.t_done = t + K - 1

    def batch_loss(self):
        return self.loss

    def _copy_in(self, upcoming, eta, shrink, scale, rows):
        """The window's values into the fixed buffers (and the loop's state, where an
        eager iteration replaced an array, back into them)."""
        it, xp = self.it, self.xp
        for i in range(len(it.sources)):
            self.idx[i][...] = xp.stack([indices[i] for _, indices, _ in upcoming])
            if it.caches[i] is not self.caches[i]:
                self.caches[i][...] = it.caches[i]
        self.inverses[...] = it.systems.inverses
        self.omega[...] = xp.stack([omega for omega, _ in it.systems.blocks])
        self.phase[...] = xp.stack([phase for _, phase in it.systems.blocks])
        for buffer, values in ((self.eta, eta), (self.shrink, shrink), (self.scale, scale), (self.rows, rows)):
            buffer[...] = xp.astype(it.bk.asarray(values), buffer.dtype)
        if it.stored is not self.stored:  # an eager iteration folded the scale into a new array
            self.stored[...] = it.stored
        if it.intercept is not self.intercept:
            self.intercept[...] = it.intercept

    def _body(self):
        """The window's ``K`` iterations on the fixed buffers, slot ``k`` each (see the module docstring)."""
        it, xp, F = self.it, self.xp, self.F
        f64, bk, fit_intercept = xp.float64, it.bk, it.settings.fit_intercept
        for k in range(self.k):
            loss = None
            batches = [ops.cache_batch(self.caches[i], src.y, self.idx[i][k, :], self.intercept, backend=bk)
                       for i, src in enumerate(it.sources)]
            if it.settings.balance is not None:  # the intercept shifted first (loop.draw_batches)
                source, target = it.settings.balance
                shift = target - xp.mean(batches[source][0], axis=0)
                self.intercept[...] = self.intercept + shift
                batches = [(f + shift, yb) for f, yb in batches]
            pairs = []
            for i, (src, (f, yb)) in enumerate(zip(it.sources, batches)):
                g = ops.loss_derivative(f, yb, loss=src.loss, weight=src.weight, backend=bk)
                pairs.append((self.features[i][k, ...], g))
                if k == self.k - 1:
                    term = xp.astype(xp.mean(src.loss.value(f, yb, xp)), f64) * src.weight
                    loss = term if loss is None else loss + term
            rhs = sum_rhs(xp, pairs, fit_intercept, reduce=True)
            step = xp.sum(self.inverses[k, :, :, None] * rhs[None, :, :], axis=1)
            delta, delta_b = changes(xp, step, self.eta[k], F, it.dtype)
            rows = self.rows[k, :]
            self.stored[rows, :] = self.stored[rows, :] + xp.astype(delta / self.scale[k], it.dtype)
            if delta_b is not None:
                self.intercept[...] = self.intercept + delta_b
            for i, src in enumerate(it.sources):
                self.caches[i] *= self.shrink[k]
                self.caches[i][...] = ops.rff_predict_add(src.X, self.omega[k, ...], self.phase[k, :], delta,
                                                          self.caches[i], shrink=1.0, backend=bk)
        self.loss[...] = loss


def _grown(xp, stored, rows):
    """``stored`` with ``rows`` rows (the added ones zero), or itself when it has them."""
    if stored.shape[0] >= rows:
        return stored
    out = xp.zeros((rows, stored.shape[1]), dtype=stored.dtype)
    out[: stored.shape[0], :] = stored
    return out
