"""S3GD's loop (:mod:`algorithms.s3gd`; ``fit`` in ``_fit``): each binary problem's
anchor products (Eq. 22), then segments of outer loops, one call of the
``prox_sgd_run`` kernel each, with a checkpoint between two (the early stop on the
training objective, the clock, the progress bar, the callback's diagnostics)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kbackends import ops, sync_free, to_numpy
from kbackends.losses import PSI_CODES, dpsi, psi

from .._boundary.sparse import is_sparse
from .._engine.loop import BLOCK_BUDGET_BYTES
from .._engine.progress import progress_bar
from . import _setup as setup


@dataclass
class Loop:
    """What every binary problem's loop shares: the data and row weights on the
    backend, the anchor graph (None but for S3GD), the loop kernel and the batch
    sampler, the method's settings, the schedule of outer loops and checkpoints,
    the training clock, the progress bar and the callback."""

    bk: Any
    xp: Any
    X: Any
    sw: Any  # the row weights s_i, (n,) in X's dtype
    row_scale: Any  # the importance weights of the rows' terms, (n,) in X's dtype, or None (all 1)
    graph: Any  # (anchors Z, neighbour indices, graph weights), or None
    run: Any  # the prox_sgd_run kernel
    sampler: Any
    method: str
    loss: str
    beta: float
    step: float
    l1: float
    l2: float
    tol: Any
    inner_iter: int
    batch_size: int
    n_outer_total: int  # outer loops of a whole fit (max_epochs)
    outer_per_segment: int  # outer loops between two checkpoints
    clock: Any
    bar: Any
    callback: Any
    max_time: Any
    setup_time: float = 0.0

    @classmethod
    def schedule(cls, X, bk, sw_host, sampling, graph, run, rng, *, method, loss, beta, step, l1, l2, tol, inner_iter,
                 batch_size, max_epochs, checkpoint, n_problems, clock, callback, max_time, verbose):
        """The loop of a fit: its outer loops (``max_epochs`` of steps, rounded up to whole
        outer loops) cut into segments of ``checkpoint`` epochs, the batch sampler on
        ``sampling``'s host draw weights (with its importance weights or None) and the
        progress bar over all problems' outer loops."""
        n = X.shape[0]
        n_steps_total = max(1, math.ceil(max_epochs * n / batch_size))
        n_outer_total = max(1, math.ceil(n_steps_total / inner_iter))
        outer_per_segment = max(1, math.ceil(checkpoint * n / batch_size / inner_iter))
        _check_draw_budget(min(outer_per_segment, n_outer_total), inner_iter, batch_size)  # a segment as drawn
        draw, row_scale = sampling
        sampler = setup.Sampler(rng, draw)
        sw = bk.xp.asarray(bk.asarray(sw_host), dtype=X.dtype)
        row_scale = None if row_scale is None else bk.xp.asarray(bk.asarray(row_scale), dtype=X.dtype)
        bar = progress_bar(verbose, n_outer_total * n_problems, method, unit="outer it")
        return cls(bk=bk, xp=bk.xp, X=X, sw=sw, row_scale=row_scale, graph=graph, run=run, sampler=sampler, method=method, loss=loss,
                   beta=beta, step=step, l1=l1, l2=l2, tol=tol, inner_iter=inner_iter, batch_size=batch_size,
                   n_outer_total=n_outer_total, outer_per_segment=outer_per_segment, clock=clock, bar=bar,
                   callback=callback, max_time=max_time)

    def solve(self, problem, cls):
        """Problem ``problem`` (rows of ``cls`` 1 against 0): its anchor products, then
        segments until the schedule ends or a checkpoint stops it. Returns (w with the
        intercept last: the best iterate under ``tol``, the last one else; epochs run;
        whether the schedule's end (``max_epochs``) stopped it before ``tol``'s test did)."""
        X, xp = self.X, self.xp
        anchors = anchor_products(X, cls, self.sw, self.graph, xp, self.bk)
        w = xp.zeros((X.shape[1] + 1,), dtype=X.dtype)
        if problem == 0:  # the setup time: the first problem's products included
            self.bk.synchronize()
            self.setup_time = self.clock.read()
        stopper = _EarlyStop(self.tol, X, cls, self.sw, self.loss, self.beta, self.l1, self.l2, xp)
        state = _Progress(problem=problem, cls=cls, anchors=anchors, w=w, stopper=stopper)
        while state.outer_done < self.n_outer_total:
            n_outer = min(self.outer_per_segment, self.n_outer_total - state.outer_done)
            self._segment(state, n_outer)
            state.outer_done += n_outer
            if self._checkpoint(state):
                break
        capped = self.tol is not None and state.outer_done >= self.n_outer_total and not state.stopper.stopped
        return state.stopper.best(state.w), self._epochs(state.outer_done), capped

    def close(self):
        """Close the progress bar (if any)."""
        if self.bar is not None:
            self.bar.close()

    def _epochs(self, outer_done):
        """Passes of sampled rows over the data after ``outer_done`` outer loops."""
        return outer_done * self.inner_iter * self.batch_size / self.X.shape[0]

    def _segment(self, state, n_outer):
        """``n_outer`` outer loops from ``state.w`` on fresh batches, one kernel call; it keeps
        the gradient and iterate it records in the middle of its last outer loop."""
        inner_iter, xp = self.inner_iter, self.xp
        Z, G, idx, gw = state.anchors
        batches = self.bk.asarray(self.sampler.draw(n_outer * inner_iter, self.batch_size))
        record_step = (n_outer - 1) * inner_iter + inner_iter // 2
        # The outer and inner steps of a segment make no device -> host transfer; the
        # checkpoint after it synchronises (the clock; the callback's diagnostics).
        with sync_free():
            state.w, state.g_rec, state.w_rec = self.run(
                self.X, state.cls, state.w, batches, self.sw, Z, G, idx, gw, xp=xp, method=self.method,
                loss=self.loss, beta=self.beta, eta=self.step, l1=self.l1, l2=self.l2, k_in=inner_iter,
                n_outer=n_outer, record_step=record_step, row_scale=self.row_scale,
            )

    def _checkpoint(self, state):
        """After a segment, the host waits for the device: the early stop's test, the
        progress bar, the clock, the callback (first problem only), ``max_time``. True: stop."""
        epoch = self._epochs(state.outer_done)
        stop = state.stopper.converged(state.w, epoch)
        self.bk.synchronize()
        if self.bar is not None:
            self.bar.update(state.problem * self.n_outer_total + state.outer_done, epoch=round(epoch, 2))
        self.clock.stop()
        if self.callback is not None and state.problem == 0:
            stop = self._report(state, epoch) or stop
        if self.max_time is not None and self.clock.elapsed >= self.max_time:
            stop = True
        self.clock.start()
        return stop

    def _report(self, state, epoch):
        """The callback with the checkpoint's figures (the clock stopped): the iterate, and
        the correlation of the recorded semi-stochastic gradient with the exact one."""
        exact = _smooth_gradient(self.X, state.cls, self.sw, state.w_rec, self.loss, self.beta, self.xp)
        info = {
            "epoch": epoch,
            "time": self.clock.elapsed,
            "coef": state.w,
            "grad_corr": setup.pearson(to_numpy(state.g_rec), to_numpy(exact)),
            "outer_iterations": state.outer_done,
            "setup_time": self.setup_time,
        }
        return bool(self.callback(info))


@dataclass
class _Progress:
    """One problem's loop as it goes: the labels, the anchor products, the iterate,
    the outer loops done, the early stop, the last segment's recorded gradient and iterate."""

    problem: int
    cls: Any
    anchors: tuple
    w: Any
    stopper: Any
    outer_done: int = 0
    g_rec: Any = None
    w_rec: Any = None


def anchor_products(X, cls, sw, graph, xp, bk):
    """The anchors and the products of Eq. (22) for the labels ``cls``: (Z, G, idx, gw),
    G (2, m, d + 1) one (m, d + 1) product per class; empty without a graph (prox-SVRG
    and prox-SGD)."""
    n, d = X.shape
    if graph is None:
        Z = xp.zeros((0, d), dtype=X.dtype)
        G = xp.zeros((2, 0, d + 1), dtype=X.dtype)
        idx = xp.zeros((0, 1), dtype=xp.int64)
        gw = xp.zeros((0, 1), dtype=X.dtype)
        return Z, G, idx, gw
    Z, idx, gw = graph
    # Eq. (22) split by class: row i of class c with weights s_i gamma_ij / n accumulated
    # onto anchor j + c m, so G[c] = (1 / n) sum_{i in c} s_i M_i^T [x_i, 1].
    m = Z.shape[0]
    shifted = idx + cls[:, None] * m
    scaled = gw * (sw / n)[:, None]
    G = ops.anchor_accumulate(shifted, scaled, X, 2 * m, backend=bk, check_finite=False)
    G_const = ops.anchor_accumulate(shifted, scaled, xp.ones_like(sw), 2 * m, backend=bk, check_finite=False)
    G = xp.reshape(xp.concat((G, G_const[:, None]), axis=1), (2, m, d + 1))
    return Z, G, idx, gw


class _EarlyStop:
    """The training objective F(w) = (1/n) sum_i s_i psi_i + R(w) once per whole epoch:
    ``converged`` is True when an epoch lowered it by less than ``tol`` (relative to the
    best so far); ``best`` is the iterate of the lowest F seen (the last one without
    ``tol``). Without an l1 term the mean of the epoch's checkpoint iterates is a
    candidate too (it averages out much of a constant step's noise; l1 would lose its
    zeros). Two passes over X (O(nnz)) and one host sync per epoch."""

    def __init__(self, tol, X, cls, sw, loss, beta, l1, l2, xp):
        self.tol, self.X, self.sw, self.code, self.beta, self.l1, self.l2, self.xp = (
            tol, X, sw, PSI_CODES[loss], beta, l1, l2, xp)
        self.signs = xp.astype(cls, X.dtype) * 2.0 - 1.0
        self.f_best, self.w_best, self.next_epoch = math.inf, None, 1
        self.total, self.count = None, 0
        self.stopped = False  # the test said stop (converged, or a non-finite objective)

    def value(self, w):
        xp = self.xp
        u = self.X @ w[:-1] + w[-1]
        data = xp.mean(self.sw * psi(u, self.signs, self.code, self.beta, xp))
        return float(data + self.l2 * xp.sum(w * w) + self.l1 * xp.sum(xp.abs(w)))

    def converged(self, w, epoch):
        if self.tol is None:
            return False
        if self.l1 == 0.0:
            self.total = w if self.total is None else self.total + w
            self.count += 1
        if epoch + 1e-9 < self.next_epoch:
            return False
        self.next_epoch = math.floor(epoch + 1e-9) + 1
        f, w_f = self.value(w), w
        if self.count > 1:
            mean = self.total / self.count
            f_mean = self.value(mean)
            if f_mean < f or not math.isfinite(f):
                f, w_f = f_mean, mean
        self.total, self.count = None, 0
        if not math.isfinite(f):
            self.stopped = True
            return True
        improved = self.f_best - f
        if f < self.f_best:
            self.f_best, self.w_best = f, self.xp.asarray(w_f, copy=True)
        self.stopped = improved < self.tol * abs(self.f_best)
        return self.stopped

    def best(self, w):
        return w if self.w_best is None else self.w_best


def _smooth_gradient(X, cls, sw, w, loss, beta, xp):
    """Exact gradient of the smooth part (1/n) sum_i s_i psi_i at w (w[-1]: the intercept)."""
    signs = xp.astype(cls, X.dtype) * 2.0 - 1.0
    a = sw * dpsi(X @ w[:-1] + w[-1], signs, PSI_CODES[loss], beta, xp) / X.shape[0]
    return xp.concat((X.T @ a if is_sparse(X) else a @ X, xp.sum(a)[None]))


def _check_draw_budget(n_outer, inner_iter, batch_size):
    """Refuse a segment whose drawn row indices (int64, ``n_outer * inner_iter`` steps of
    ``batch_size``) exceed :data:`BLOCK_BUDGET_BYTES` before drawing them: a huge
    ``inner_iter`` surfaced as a raw MemoryError (a segment runs whole outer loops)."""
    nbytes = n_outer * inner_iter * batch_size * 8
    if nbytes > BLOCK_BUDGET_BYTES:
        msg = (f"a segment's batches ({n_outer} outer loop(s) of `inner_iter` {inner_iter} steps x `batch_size` "
               f"{batch_size} row indices) would take {nbytes / 2**30:.1f} GiB, over the "
               f"{BLOCK_BUDGET_BYTES / 2**30:.0f} GiB a segment may use: lower `inner_iter` (or `batch_size`)")
        raise ValueError(msg)
