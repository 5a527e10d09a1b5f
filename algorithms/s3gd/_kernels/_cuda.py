"""Numba-CUDA inner loops of S3GD / prox-SVRG / prox-SGD: one single-block launch per run.

Same arithmetic as ``_xp`` (see there for the equations). The inner steps are
sequential and tiny (a9a: a batch of 10 rows of 124 weights, ~2,500 flops), so
launching the ~20 array ops of a step from the host would cost ~20 launches per
step for microseconds of work. Instead ONE block runs the steps, with
``__syncthreads`` between the phases of a step:

- (a) scores: 16 lanes per batch row, a fixed-order tree per row; one lane per
  row then forms the loss derivative minus the control variate (the anchor
  correction gathered from the row's k neighbours, or the snapshot's own
  derivative);
- (b) each thread owns weights: g_c = H_c + sum_b coef_b x_bc, the record, the
  soft threshold and the shrink.

S3GD's snapshot (D = psi'(anchors w~), H = D_0 G_0 + D_1 G_1: O(m d), a few
hundred multiply-adds per thread) is computed by the same block at each outer
loop, so a whole S3GD or SGD run (all outer loops of a checkpoint segment) is
one launch. SVRG's snapshot is the exact gradient over all n rows, a job for
the whole GPU: it goes through ``xp.matmul`` (cuBLAS) and the block runs one
outer loop per launch.

Launches: an S3GD or SGD call is the kernel plus 6 small CuPy ones (the
weights' copy, five zeroed buffers): on a9a at batch 10 and the default
checkpoint (41 outer loops of 20 steps a call) that is ~0.009 launches per
inner step. An SVRG call adds about a dozen per outer loop of 50 steps (two
GEMVs, the loss derivative, a sum, the kernel). Per step the block runs 7 barriers (phase a: one round
of 16 rows, a 4-level tree; phase b) and ~5 dependent global loads (batch row,
X, neighbour index, D; then batch row and X again).

One block because a step's work is a few thousand flops: more blocks would
need a grid-wide barrier per step. The GPU runs a step in a few microseconds
(latency of the dependent loads and barriers, not flops), so small batches do
not beat a CPU core by much; larger ones use more of the block's 256 threads.
float32 in, float32 arithmetic (the constants are typed, no float64).

CSR X (cupyx.scipy.sparse on a GPU; scipy.sparse under the simulator): the same
kernel reads the batch rows through ``(data, indices, indptr)`` (``sparse=1``)
instead of gathering them dense. Phase (a) strides the lanes over the row's
non-zeros (``w`` gathered at their columns); phase (b) first writes
``g = H`` (plus the intercept's ``sum_b coef_b``) to a scratch vector, then adds
the batch rows one after the other, the block's threads over one row's
non-zeros (a canonical row's columns are distinct: no two threads write one
entry; a barrier between rows, so a row drawn twice or two rows sharing a
column add in batch order, the dense path's order: no atomics, the same bits
every run), then the record and the prox per weight as before. Bytes per step:
``2 p nnz_row (itemsize + 4)`` for the rows (values and int32 columns, read in
phase (a) and again in (b)) plus ``p nnz_row itemsize`` gathered from ``w`` and
``3 (d + 1) itemsize`` for the scratch and the prox, against
``2 p d itemsize + 2 (d + 1) itemsize`` dense: a9a at p = 10 (nnz_row 14,
d 123) ~3.4 KB + 1.5 KB against 9.8 KB + 1 KB; news20 (nnz_row ~450,
d 1.36 M) the O(d) prox dominates both, and the dense copy would not fit.
Rejected: gathering each launch's drawn rows densified into a block (the dense
loop unchanged) moves ``p d itemsize`` per step besides the rows: no saving
from sparsity, and a launch's block is ``steps p d`` values (41 x 20 x 10 rows
of news20: 45 GB in float32), so the launch would have to be cut by a memory
budget. SVRG's exact gradient on CSR X is ``X @ w`` and ``X.T @ a`` through the
sparse library (the transposed product is cuSPARSE's ``op(A) = A^T``, which
NVIDIA does not promise to repeat bit for bit).
"""


import numpy as np
from numba import config, cuda

from kbackends.kernel_tools import contiguous, launch_context, run_kernel
from kbackends.losses import PSI_CODES, dpsi, dpsi_typed

from ._xp import METHODS

# Under the simulator every thread and barrier is a Python thread switch: the
# same kernel runs with a smaller block (the code does not depend on the width).
_THREADS = 16 if config.ENABLE_CUDASIM else 256
_LANES = 4 if config.ENABLE_CUDASIM else 16  # threads per batch row in the score phase
_GROUPS = _THREADS // _LANES  # batch rows scored at once

_SIG = ("void({f}[:, ::1], int64[::1], int64[:, ::1], int64, int64, int64, {f}[:, ::1], {f}[:, :, ::1], {f}[:, ::1],"
        " int64[:, ::1], {f}[:, ::1], {f}[::1], {f}[::1], {f}[::1], {f}[::1], {f}[::1], int64, int64, {f}, {f}, {f},"
        " {f}, {f},"
        " int64, {f}[::1], {f}[::1], int64, {f}[::1], int32[::1], int32[::1], {f}[::1])")
PTX_SIGNATURES = {"_steps": [_SIG.format(f="float32"), _SIG.format(f="float64")]}


@cuda.jit(device=True)
def _snapshot(w, anchors, G, D, H, loss, beta, one, zero):
    """S3GD's snapshot, by the whole block: ``D[c, j] = psi'(z_j . w~; y_c)`` for every
    anchor, then ``H = D_0 G_0 + D_1 G_1``."""
    tid = cuda.threadIdx.x
    d = w.shape[0] - 1
    m = anchors.shape[0]
    for j in range(tid, m, _THREADS):
        s = w[d]
        for c in range(d):
            s += anchors[j, c] * w[c]
        D[0, j] = dpsi_typed(s, -one, loss, beta, one)
        D[1, j] = dpsi_typed(s, one, loss, beta, one)
    cuda.syncthreads()
    for c in range(tid, d + 1, _THREADS):
        h0 = zero
        h1 = zero
        for j in range(m):
            h0 += D[0, j] * G[0, j, c]
            h1 += D[1, j] * G[1, j, c]
        H[c] = h0 + h1
    cuda.syncthreads()


@cuda.jit(device=True)
def _row_score(X, i, w, sparse, data, indices, indptr, lane, zero):
    """This lane's share of row ``i``'s score ``x_i . w`` (no intercept)."""
    acc = zero
    if sparse:
        for q in range(indptr[i] + lane, indptr[i + 1], _LANES):
            acc += data[q] * w[indices[q]]
    else:
        for c in range(lane, X.shape[1], _LANES):
            acc += X[i, c] * w[c]
    return acc


@cuda.jit(device=True)
def _batch_coefficients(X, cls, batches, t, D, nbr_idx, nbr_w, row_scale, u_ref, w, coef, code, loss, beta, inv_p,
                        sparse, data, indices, indptr, part, one, zero):
    """Step ``t``'s coefficient of every batch row, by the whole block (``_LANES`` threads
    a row): its score, the loss derivative and the control variate (S3GD's anchors,
    SVRG's snapshot score), times the row's importance weight (``row_scale``; empty:
    1), over ``p``: ``coef[b]``."""
    tid = cuda.threadIdx.x
    lane = tid % _LANES
    grp = tid // _LANES
    p = batches.shape[1]
    d = w.shape[0] - 1
    for b0 in range(0, p, _GROUPS):  # the same trip count in every thread: barriers inside
        b = b0 + grp
        acc = zero
        i = 0
        if b < p:
            i = batches[t, b]
            acc = _row_score(X, i, w, sparse, data, indices, indptr, lane, zero)
        part[tid] = acc
        cuda.syncthreads()
        step = _LANES // 2
        while step:
            if lane < step:
                part[tid] += part[tid + step]
            cuda.syncthreads()
            step //= 2
        if lane == 0 and b < p:
            y = one if cls[i] else -one
            a = dpsi_typed(part[tid] + w[d], y, loss, beta, one)
            if code == 1:
                ci = cls[i]
                for q in range(nbr_idx.shape[1]):
                    a -= nbr_w[i, q] * D[ci, nbr_idx[i, q]]
            elif code == 2:
                a -= dpsi_typed(u_ref[i], y, loss, beta, one)
            if row_scale.shape[0]:
                a *= row_scale[i]
            coef[b] = a * inv_p
    cuda.syncthreads()


@cuda.jit(device=True)
def _sparse_gradient(batches, t, H, coef, data, indices, indptr, gbuf):
    """Step ``t``'s gradient for CSR rows into ``gbuf``, by the whole block: ``H`` and the
    intercept's sum, then the batch rows' non-zeros row by row."""
    tid = cuda.threadIdx.x
    d = gbuf.shape[0] - 1
    p = batches.shape[1]
    for c in range(tid, d + 1, _THREADS):
        g = H[c]
        if c == d:
            for b in range(p):
                g += coef[b]
        gbuf[c] = g
    cuda.syncthreads()
    for b in range(p):
        i = batches[t, b]
        cb = coef[b]
        for q in range(indptr[i] + tid, indptr[i + 1], _THREADS):
            gbuf[indices[q]] += cb * data[q]
        cuda.syncthreads()


@cuda.jit(device=True)
def _prox_update(X, batches, t, H, coef, w, eta, l1, shrink, record_step, record_g, record_w, sparse, gbuf, zero):
    """Step ``t``'s update of every weight, by the whole block: its gradient (dense rows
    summed here, CSR rows from ``gbuf``), the record at ``record_step``, the gradient
    step, the l1 prox (soft threshold ``eta l1``) and the l2 shrink."""
    tid = cuda.threadIdx.x
    d = w.shape[0] - 1
    p = batches.shape[1]
    thr = eta * l1
    for c in range(tid, d + 1, _THREADS):
        if sparse:
            g = gbuf[c]
        else:
            g = H[c]
            if c < d:
                for b in range(p):
                    g += coef[b] * X[batches[t, b], c]
            else:
                for b in range(p):
                    g += coef[b]
        if t == record_step:
            record_g[c] = g
            record_w[c] = w[c]
        v = w[c] - eta * g
        if l1 > zero:
            if v > thr:
                v -= thr
            elif v < -thr:
                v += thr
            else:
                v = zero
        w[c] = v * shrink
    cuda.syncthreads()


@cuda.jit
def _steps(X, cls, batches, t0, n_outer, k_in, anchors, G, D, nbr_idx, nbr_w, row_scale, u_ref, H, w, coef, code, loss,
           beta, eta, l1, shrink, inv_p, record_step, record_g, record_w, sparse, data, indices, indptr, gbuf):
    """``n_outer`` outer loops of ``k_in`` steps from step ``t0``, one block; ``w``
    updated in place. S3GD's snapshot (D, H) is computed here at each outer loop;
    SVRG's (``u_ref``, ``H``) comes from the caller, one outer loop per launch.
    ``sparse``: X's rows are the CSR ``(data, indices, indptr)`` (``X`` is then an
    empty (0, d) array giving d), ``gbuf`` a (d + 1,) scratch gradient. Every step is
    a device function that the whole block runs (they hold barriers)."""
    part = cuda.shared.array(_THREADS, X.dtype)
    typed = cuda.local.array(1, X.dtype)
    typed[0] = 1
    one = typed[0]
    zero = one - one
    for outer in range(n_outer):
        if code == 1:
            _snapshot(w, anchors, G, D, H, loss, beta, one, zero)
        for inner in range(k_in):
            t = t0 + outer * k_in + inner
            # (a) per batch row: score, derivative, control variate -> coef[b]
            _batch_coefficients(X, cls, batches, t, D, nbr_idx, nbr_w, row_scale, u_ref, w, coef, code, loss, beta,
                                inv_p, sparse, data, indices, indptr, part, one, zero)
            # (b) per weight: gradient, record, proximal step
            if sparse:
                _sparse_gradient(batches, t, H, coef, data, indices, indptr, gbuf)
            _prox_update(X, batches, t, H, coef, w, eta, l1, shrink, record_step, record_g, record_w, sparse, gbuf,
                         zero)


def prox_sgd_run(X, cls, w, batches, sample_weight, anchors, G, nbr_idx, nbr_w, *, xp, method, loss, beta,
                 eta, l1, l2, k_in, n_outer, record_step, row_scale=None):
    """``n_outer`` outer loops of ``k_in`` steps (the signature of ``_xp.prox_sgd_run``).

    Returns
    -------
    w, record_g, record_w : arrays of shape (d + 1,)
        The last iterate, and the gradient and weights at step ``record_step``.
    """
    code, lcode = METHODS[method], PSI_CODES[loss]
    dt = X.dtype
    typed = np.dtype(str(dt)).type
    n = X.shape[0]
    d = X.shape[1] + 1
    p = batches.shape[1]
    sparse = hasattr(X, "tocsr")  # canonical CSR: its arrays go to the kernel as they are
    if sparse:
        csr = (X.data, X.indices, X.indptr, xp.empty((d,), dtype=dt))
        X_csr = X  # SVRG's snapshot products
        X = xp.zeros((0, d - 1), dtype=dt)  # gives the kernel d
    else:
        csr = (xp.zeros((1,), dtype=dt), xp.zeros((1,), dtype=xp.int32), xp.zeros((1,), dtype=xp.int32),
               xp.zeros((1,), dtype=dt))
    # no copy where the dtype already fits (the kernel only reads these): a call's
    # launches besides the kernel are the few allocations below (see the module docstring)
    X, cls, batches, nbr_idx, nbr_w = contiguous(
        xp, X, xp.astype(cls, xp.int64, copy=False), xp.astype(batches, xp.int64, copy=False),
        xp.astype(nbr_idx, xp.int64, copy=False), xp.astype(nbr_w, dt, copy=False))
    w = xp.astype(w, dt, copy=True)  # updated in place: the caller's stays as it was
    record_g = xp.zeros((d,), dtype=dt)
    record_w = xp.zeros((d,), dtype=dt)
    coef = xp.empty((p,), dtype=dt)  # written in every step before it is read
    H = xp.zeros((d,), dtype=dt)
    D = xp.zeros((2, 1), dtype=dt)
    u_ref = xp.zeros((1,), dtype=dt)
    scalars = (code, lcode, typed(beta), typed(eta), typed(l1), typed(1.0 / (1.0 + 2.0 * eta * l2)), typed(1.0 / p))
    args = (X, cls, batches)
    row_scale = (xp.zeros((0,), dtype=dt) if row_scale is None
                 else xp.ascontiguousarray(xp.astype(xp.asarray(row_scale), dt, copy=False)))
    tail = (nbr_idx, nbr_w, row_scale)
    if code != 2:  # S3GD computes its snapshot in the kernel, SGD has none: the whole run in one launch
        anchors, G = contiguous(xp, xp.astype(anchors, dt, copy=False), xp.astype(G, dt, copy=False))
        D = xp.empty((2, anchors.shape[0]), dtype=dt)  # S3GD's is written at each outer loop before use
        with launch_context(xp) as stream:
            run_kernel(_steps, 1, _THREADS, stream, *args, 0, n_outer, k_in, anchors, G, D, *tail, u_ref, H, w, coef,
                       *scalars, record_step, record_g, record_w, int(sparse), *csr)
        return w, record_g, record_w
    none = xp.zeros((0, X.shape[1]), dtype=dt), xp.zeros((2, 0, d), dtype=dt)
    signs = xp.astype(cls, dt) * 2.0 - 1.0
    for outer in range(n_outer):  # SVRG: the exact gradient at the snapshot through cuBLAS (cuSPARSE)
        u_ref = xp.ascontiguousarray((X_csr @ w[:-1] if sparse else xp.matmul(X, w[:-1])) + w[-1])
        a = sample_weight * dpsi(u_ref, signs, lcode, beta, xp) / n
        H = xp.ascontiguousarray(xp.concat((X_csr.T @ a if sparse else xp.matmul(a, X), xp.sum(a)[None])))
        with launch_context(xp) as stream:
            run_kernel(_steps, 1, _THREADS, stream, *args, outer * k_in, 1, k_in, *none, D, *tail, u_ref, H, w, coef,
                       *scalars, record_step, record_g, record_w, int(sparse), *csr)
    return w, record_g, record_w
