"""The preconditioned block step with its systems built ahead, K iterations at a time.

The preconditioner of an iteration (:func:`steps._block_step`) is the float64 system

    C = sum_s w_s / B_s [phi_s, 1]^T [phi_s, 1] + ridge * mean(diag C[:F, :F]) * I_F

of the batch's features ``phi_s = rff_features(X_s[rows], omega_b, phase_b)``: it
depends on the rows drawn and the block updated, never on the model. Both are drawn
ahead (:class:`draws.BlockPlan`), so every ``K`` iterations :class:`SystemsAhead`
computes the next ``K`` iterations' features, their Gram matrices as one batched
product, and the ``K`` inverses (:func:`kbackends.ops.gn_inverses`: on a GPU by one
batched Cholesky factorisation, where the eager step runs a dependent chain of
cuSOLVER kernels every iteration). An iteration then only takes its right-hand
side ``[phi, 1]^T g / B`` and one product with the stored inverse. Off by default
(:data:`AUTO_BACKENDS`: measured slower than the eager Cholesky solve on an H100); an
engine run takes it with ``EngineSettings.systems_ahead`` = K. The sums run in another order than the eager kernels' (cuBLAS's
batched products, the solve by an explicit inverse): the models agree with the eager
path's within float32 rounding, not to the bit (docs/architecture.md, "The engine").
"""

from __future__ import annotations

from kbackends import ops

from .._boundary.sparse import batch_rows
from .steps import gauss_newton_eta, gauss_newton_weight

SYSTEMS_AHEAD = 64  # iterations whose systems are built at once, at most
SYSTEMS_BYTES = 256 * 2**20  # the stored features of those iterations, at most
# Engines where "auto" builds ahead: none. Measured on an H100 (docs/benchmarks.md, "GPU"):
# the batched inverse (cuBLAS getrfBatched + getriBatched) costs 0.10 ms a system and an
# iteration's right-hand side and product ~10 CuPy calls, against the eager Cholesky
# solve's 0.20 ms: DSG on ijcnn1 took 0.256 s built ahead, 0.159 s eager. Batched
# Cholesky factors (7.5 us a system there) and one kernel for the right-hand side and
# the triangular solves are what would make it pay.
AUTO_BACKENDS = ()


def systems_ahead(settings, bk, sources):
    """Iterations to build ahead at once (0: the eager step) for ``settings.systems_ahead``:
    an int, or "auto" (on :data:`AUTO_BACKENDS`, up to :data:`SYSTEMS_AHEAD` within
    :data:`SYSTEMS_BYTES` of stored features; elsewhere 0). Only preconditioned DSG, UDSG,
    TSGS3VM and TSGSU fits without a callback know their blocks ahead."""
    s = settings
    if s.ridge is None or s.variant == "cdsg" or s.callback is not None:
        return 0
    k = s.systems_ahead
    if k == "auto":
        if bk.name not in AUTO_BACKENDS:
            return 0
        per_iteration = sum(src.batch_size for src in sources) * (s.block_size + 1) * 4
        k = min(SYSTEMS_AHEAD, SYSTEMS_BYTES // max(1, per_iteration))
    return max(0, int(k))


class SystemsAhead:
    """The inverses and features of the next iterations' systems (see the module docstring)."""

    def __init__(self, k, sources, bk, settings, dtype, block):
        self.k, self.sources, self.bk, self.xp, self.s, self.dtype = k, sources, bk, bk.xp, settings, dtype
        self.block = block  # b -> (omega, phase), the engine's own regeneration
        self.first = self.stop = 0  # iterations [first, stop) are built
        self.inverses = self.features = self.blocks = None
        self.features_out = None  # (K, B, F) buffers a source to build the features into, if given

    def step(self, t, g_by_source, eta):
        """The block's change and the intercept's at iteration ``t`` (built ahead), from the
        batches' weighted loss derivatives ``g_by_source`` (one (B, k) array per source)."""
        xp, s = self.xp, self.s
        j = t - self.first
        rhs = sum_rhs(xp, [(phi[j, ...], g) for phi, g in zip(self.features, g_by_source)], s.fit_intercept)
        step = xp.matmul(self.inverses[j, ...], rhs)
        delta, delta_b = changes(xp, step, gauss_newton_eta(eta, self.sources), s.block_size, self.dtype)
        return delta, delta_b if s.fit_intercept else xp.zeros((step.shape[1],), dtype=self.dtype)

    def ready(self, t):
        return self.first <= t < self.stop

    def build(self, upcoming):
        """The systems of ``upcoming`` iterations: ``(t, row indices per source, target block)``."""
        xp, s = self.xp, self.s
        self.first, self.stop = upcoming[0][0], upcoming[-1][0] + 1
        self.blocks = blocks = [self.block(target) for _, _, target in upcoming]  # (omega, phase) each
        self.features = []
        cov = None
        for i, src in enumerate(self.sources):
            phis = [ops.rff_features(batch_rows(src.X, indices[i], self.bk), omega, phase, backend=self.bk,
                                     check_input=False) for (_, indices, _), (omega, phase) in zip(upcoming, blocks)]
            if self.features_out is None:
                P = xp.stack(phis)  # (K, B, F)
            else:  # written once, into buffers that stay put (window.StaticWindows)
                P = self.features_out[i][: len(phis), ...]
                for j, phi in enumerate(phis):
                    P[j, ...] = phi
            self.features.append(P)
            weight = gauss_newton_weight(src)
            part = _gram(xp, P, weight, s.fit_intercept)
            cov = part if cov is None else cov + part
        self.inverses = ops.gn_inverses(_regularised(xp, cov, s.ridge, s.block_size), backend=self.bk)


def sum_rhs(xp, pairs, fit_intercept, reduce=False):
    """The step's right-hand side ``sum_s [P_s, 1]^T g_s / B_s`` (float64) over the
    sources' ``(P, g)``: each product by ``matmul`` (cuBLAS on a GPU) or, with
    ``reduce``, as a sum of element-wise products (no cuBLAS: a CUDA graph can hold it)."""
    rhs = None
    for P, g in pairs:
        B = P.shape[0]
        g = xp.astype(g, P.dtype, copy=False)
        product = xp.sum(P[:, :, None] * g[:, None, :], axis=0) if reduce else xp.matmul(xp.matrix_transpose(P), g)
        part = xp.astype(product, xp.float64) / B
        if fit_intercept:
            part = xp.concat([part, xp.astype(xp.sum(g, axis=0, keepdims=True), xp.float64) / B], axis=0)
        rhs = part if rhs is None else rhs + part
    return rhs


def changes(xp, step, eta, F, dtype):
    """The block's change ``-eta step[:F]`` and, where ``step`` has the intercept's row, its
    change ``-eta step[F]`` (else None), in ``dtype``; ``eta`` a float or a 0-d array."""
    delta = xp.astype(-eta * step[:F, :], dtype)
    return delta, xp.astype(-eta * step[F, :], dtype) if step.shape[0] > F else None


def _gram(xp, P, weight, fit_intercept):
    """``weight / B [P_k, 1]^T [P_k, 1]`` for every k of the stack ``P`` (K, B, F), float64."""
    K, B, _ = P.shape
    f = xp.float64
    gram = xp.astype(xp.matmul(xp.matrix_transpose(P), P), f) * (weight / B)
    if not fit_intercept:
        return gram
    sums = xp.astype(xp.sum(P, axis=1), f) * (weight / B)  # (K, F): the intercept's column
    top = xp.concat([gram, sums[:, :, None]], axis=2)
    corner = xp.full((K, 1), float(weight), dtype=f)
    return xp.concat([top, xp.concat([sums, corner], axis=1)[:, None, :]], axis=1)


def _regularised(xp, cov, ridge, F):
    """``cov + ridge * mean(diag(cov)[:F]) * I`` on the features' diagonal (the intercept's unpenalised)."""
    n = cov.shape[-1]
    diag = xp.linalg.diagonal(cov)[:, :F]
    penalty = ridge * xp.mean(diag, axis=1)  # (K,)
    mask = xp.astype(xp.arange(n) < F, xp.float64)
    return cov + penalty[:, None, None] * (xp.eye(n, dtype=xp.float64) * mask)[None, :, :]
