"""Numba-CUDA form of the engine's preconditioned block step (the reference is
``_xp``: about 30 array calls, each a CuPy launch of 10-20 us of host time).

``gn_system``: the Gram matrix ``phi^T phi`` on cuBLAS (``xp.matmul``, float32
products as the reference), then ONE launch, :func:`_columns`, of ``n_cols``
blocks: block ``j < F`` reduces column ``j`` of ``phi`` over the batch (its sum,
the intercept's entries ``C[j, F] = C[F, j]``, and ``phi_j . g`` for the right-hand
side) and writes row ``j`` of the Gram matrix in float64 times ``weight / B``;
block ``F`` (the intercept) reduces ``g`` itself. A block's sums are a strided
pass per thread then a fixed tree in shared memory, so they repeat bit for bit.
No concatenated ``[phi, 1]`` is formed.

``gn_solve``: :func:`_regularise` (one block: the mean of the features' diagonal,
added times the ridge in place), cuSOLVER's Cholesky solve (:func:`_solve_in_place`),
:func:`_changes` (``-eta * step`` cast to the compute dtype). The cuda engine's fits build
these systems ahead instead (algorithms._engine.ahead); this step serves CDSG and fits
with a callback.

Cost at DSG's defaults (B = 4,096 rows, F = 256 features, one output): the Gram
matrix is 0.5 GFLOP on cuBLAS; :func:`_columns` reads ``phi`` once (4 MB,
uncoalesced down a column: ~32 MB of 32-byte sectors, ~10 us at 3.35 TB/s); the
(257 x 257) float64 Cholesky is cuSOLVER's. Each is a few to tens of microseconds of
device time; what they replace is ~30 launches of host time.
"""

from numba import config, cuda, float64

from ..._xp_utils import is_cupy_namespace
from .._cuda_block import tree_sum
from .._cuda_launch import contiguous, grid_1d, launch_context, run_kernel
from .._cuda_math import ONE, ZERO

_THREADS = 32 if config.ENABLE_CUDASIM else 256  # a power of two: the trees halve it
_GROUP = 4  # sums (the column's, then one per output) a pass over the batch, in registers
_PART = _THREADS * _GROUP  # shared memory of a block's trees (a literal size for Numba)

_SIGS = {
    "_columns": "void({f}[:, ::1], {f}[:, ::1], {f}[:, ::1], float64, float64, boolean, boolean, float64[:, ::1],"
    " float64[:, ::1])",
    "_regularise": "void(float64[:, ::1], int64, float64)",
    "_changes": "void(float64[:, ::1], float64, boolean, {f}[:, ::1], {f}[::1])",
}
PTX_SIGNATURES = {name: sorted({sig.format(f="float32"), sig.format(f="float64")}) for name, sig in _SIGS.items()}
PTX_FLOAT64_ONLY = {"_regularise": "the system is float64 in every compute dtype"}
PTX_FLOAT64_BY_DESIGN = {
    "_columns": "the step's system is float64 by design (see the reference, _xp): each sum is formed in the "
    "compute dtype and converted once, as the reference casts cuBLAS's float32 products",
    "_changes": "reads the float64 solution and the step length; writes the compute dtype",
}


@cuda.jit
def _columns(phi, gram, g, weight_over_b, n_rows, fit_intercept, add, cov, rhs):
    """Block ``j``: row ``j`` of the float64 system (see the module docstring)."""
    part = cuda.shared.array(_PART, phi.dtype)
    acc = cuda.local.array(_GROUP, phi.dtype)
    j = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    B, F = phi.shape
    k = g.shape[1]
    # sums t = 0 (the column's: the intercept's entries) and t = 1 + c (phi_j . g_c)
    for t0 in range(0, k + 1, _GROUP):
        for q in range(_GROUP):
            acc[q] = ZERO
        for i in range(tid, B, _THREADS):
            v = phi[i, j] if j < F else ONE  # block F: the constant feature
            for q in range(_GROUP):
                t = t0 + q
                if t == 0:
                    acc[q] += v
                elif t <= k:
                    acc[q] += v * g[i, t - 1]
        for q in range(_GROUP):
            part[q * _THREADS + tid] = acc[q]
        tree_sum(part, tid, _THREADS, _GROUP)
        if tid == 0:
            for q in range(_GROUP):
                t = t0 + q
                if t == 0 and fit_intercept:
                    s = float64(part[0]) * weight_over_b
                    if add:
                        cov[j, F] += s
                        if j < F:
                            cov[F, j] += s
                    else:
                        cov[j, F] = s
                        if j < F:
                            cov[F, j] = s
                elif 0 < t <= k:
                    r = float64(part[q * _THREADS]) / n_rows
                    if add:
                        rhs[j, t - 1] += r
                    else:
                        rhs[j, t - 1] = r
        cuda.syncthreads()  # part is read by thread 0 before the next group overwrites it
    if j < F:
        for col in range(tid, F, _THREADS):
            c = float64(gram[j, col]) * weight_over_b
            if add:
                cov[j, col] += c
            else:
                cov[j, col] = c


@cuda.jit
def _regularise(cov, n_features, ridge):
    """``cov[j, j] += ridge * mean(diag(cov)[:F])`` for ``j < F``; one block."""
    part = cuda.shared.array(_THREADS, float64)
    tid = cuda.threadIdx.x
    acc = float64(0.0)
    for j in range(tid, n_features, _THREADS):
        acc += cov[j, j]
    part[tid] = acc
    tree_sum(part, tid, _THREADS, 1)
    penalty = part[0] / n_features * ridge
    for j in range(tid, n_features, _THREADS):
        cov[j, j] += penalty


@cuda.jit
def _changes(step, eta, fit_intercept, delta, delta_b):
    """``delta = -eta step[:F]``, ``delta_b = -eta step[F]`` (0 without the intercept),
    cast to the compute dtype; one thread an entry."""
    i = cuda.grid(1)
    F, k = delta.shape
    if i < F * k:
        delta[i // k, i % k] = -eta * step[i // k, i % k]
    elif i < F * k + k:
        c = i - F * k
        delta_b[c] = -eta * step[F, c] if fit_intercept else 0.0


def gn_system(phi, g, cov, rhs, *, xp, weight, fit_intercept):
    """The signature and results of ``_xp.gn_system``."""
    B, F = phi.shape
    k = g.shape[1]
    n_cols = F + (1 if fit_intercept else 0)
    if g.dtype != phi.dtype:
        g = xp.astype(g, phi.dtype)
    phi, g = contiguous(xp, phi, g)
    add = cov is not None
    if not add:
        cov = xp.empty((n_cols, n_cols), dtype=xp.float64)
        rhs = xp.empty((n_cols, k), dtype=xp.float64)
    gram = xp.matmul(phi.T, phi)  # cuBLAS, in the compute dtype
    with launch_context(xp) as stream:
        run_kernel(_columns, n_cols, _THREADS, stream, phi, gram, g, float(weight) / B, float(B),
                   bool(fit_intercept), add, cov, rhs)
    return cov, rhs


def _solve_in_place(cov, rhs, xp):
    """``cov^-1 rhs``. On CuPy, cuSOLVER's Cholesky factorisation and solve (potrf / potrs
    through ``cupyx.lapack.posv``, which returns the solution): the system is symmetric
    positive definite (a Gram matrix plus a positive ridge on the features' diagonal, the
    intercept's entry the source weights' sum), and on an H100 the Cholesky solve of the
    257 x 257 system took 0.20 ms against getrf / getrs's 0.61 ms (docs/benchmarks.md,
    "GPU"). NumPy (the simulator): ``linalg.solve``."""
    if is_cupy_namespace(xp):
        from cupyx import lapack

        return lapack.posv(cov, rhs)
    return xp.linalg.solve(cov, rhs)  # the simulator's NumPy


def gn_solve(cov, rhs, *, xp, ridge, eta, n_features, fit_intercept, dtype):
    """The signature and results of ``_xp.gn_solve``; ``cov`` and ``rhs`` are overwritten
    (the regularisation, then the factors and the solution)."""
    F = n_features
    k = rhs.shape[1]
    with launch_context(xp) as stream:
        run_kernel(_regularise, 1, _THREADS, stream, cov, int(F), float(ridge))
        (step,) = contiguous(xp, _solve_in_place(cov, rhs, xp))
        delta = xp.empty((F, k), dtype=dtype)
        delta_b = xp.empty((k,), dtype=dtype)
        blocks, threads = grid_1d(F * k + k)
        run_kernel(_changes, blocks, threads, stream, step, float(eta), bool(fit_intercept), delta, delta_b)
    return delta, delta_b


def gn_inverses(systems, *, xp):
    """``_xp.gn_inverses`` by the systems' Cholesky factors: ``A^-1 = L^-T L^-1`` with
    ``L`` from one batched factorisation (cuSOLVER's potrfBatched: 7.4 us a 257 x 257
    system on an H100, against 101 us for cuBLAS's batched LU inverse,
    docs/benchmarks.md "GPU"), ``L^-1`` by one batched triangular solve (CuPy's
    ``solve_triangular`` takes stacks: cuBLAS's trsmBatched; a call a system cost 200
    calls and a sixth of a profiled window fit's host time), the product batched.
    NumPy (the simulator): the same steps, SciPy's triangular solve a system."""
    L = xp.linalg.cholesky(systems)
    eye = xp.eye(systems.shape[-1], dtype=systems.dtype)
    if is_cupy_namespace(xp):
        from cupyx.scipy.linalg import solve_triangular

        L_inv = solve_triangular(L, xp.broadcast_to(eye, L.shape), lower=True)
    else:
        from scipy.linalg import solve_triangular

        L_inv = xp.stack([solve_triangular(L[k, ...], eye, lower=True) for k in range(L.shape[0])])
    return xp.matmul(xp.matrix_transpose(L_inv), L_inv)
