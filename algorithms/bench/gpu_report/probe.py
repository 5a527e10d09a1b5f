"""The GPU check's probe: what one launch costs the host, what the preconditioner's
257 x 257 solve costs, what one DSG iteration costs the host against the device (eager
and as a CUDA graph), and the fused rff kernels' registers.

Five measurements, each a dict of plain figures (CuPy only: the simulator has no
device clock, and returns ``{"skipped": why}``):

- ``launch``: host microseconds of one launch of a one-thread-a-value kernel through
  kbackends' cuda.core path, through Numba's own launch, and of one CuPy element-wise
  op (2,000 each, synchronised once at the end: the host's enqueue rate);
- ``solve``: the float64 (F + 1) x (F + 1) system of the preconditioned step (F = 256)
  by getrf + getrs (``cupyx.lapack.gesv``, the engine's), Cholesky (``cupyx.lapack.posv``),
  and batched over K = 64 systems (``posv`` of the stack: potrfBatched + potrsBatched;
  ``cupy.linalg.solve``'s batched LU; ``cupy.linalg.inv`` of the stack, what the engine's
  systems built ahead run; potrfBatched alone): microseconds a system, host time of the calls and
  wall time with the device synchronised at the end of the loop;
- ``iteration``: the engine's preconditioned DSG iteration as its ops (cache_batch,
  loss_derivative, rff_features, gn_system, gn_solve, block_update, rff_predict_add)
  run eagerly, and the same sequence captured once as a CUDA graph (a private memory
  pool kept with it) and replayed: milliseconds an iteration each way, and the
  largest difference between one eager iteration and one replay from the same state;
- ``ahead_iteration``: the same iteration with the system inverted ahead and no cuBLAS or
  cuSOLVER call inside it (the fused features, CuPy reductions for the right-hand side
  and the step), the state updated in place: eager, then captured and replayed, as above;
- ``fused_resources``: registers and local memory a thread of each fused rff kernel takes;
- ``sbp_run``: SBP's one-block run (``sbp_run``) and window run (``sbp_window_run``, as it
  is and replayed as CUDA graphs) in milliseconds an iteration on synthetic rows of 2,048
  and 32,768 rows of 8 and 123 values (RBF; the cpu engine's run beside them, the launches,
  the warm bands' sizes at the end, the window run's cold levels): how the time splits
  between the work a row (grows with rows and values) and the serial steps of an
  iteration (does not), and whether the host or the device bounds the window run.
"""

from __future__ import annotations

import time

import numpy as np

import algorithms.sbp  # noqa: F401 - registers SBP's kernels (sbp_run)
from algorithms.sbp import _kernels as sbp_kernels
from kbackends import (
    get_kernel,
    launch_counts,
    launch_settings,
    losses,
    ops,
    resolve,
    to_numpy,
)
from kbackends.kernel_tools import WARM_STATE, launch_context, run_kernel
from kbackends.random import omega_block
from kbackends.testing import kernel_module

from .fits import _switched


def _per_call_us(fn, n, sync):
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    host = time.perf_counter() - start
    sync()
    wall = time.perf_counter() - start
    return {"host_us": 1e6 * host / n, "wall_us": 1e6 * wall / n}


def probe(bk):
    """The measurements of the module's docstring, for backend ``bk``."""
    if bk.name != "cuda":
        return {"skipped": f"backend {bk.name}: the probe times a device (CuPy and CUDA events)"}
    out = {}
    for name, fn in (("launch", _launch), ("solve", _solve), ("iteration", _iteration),
                     ("ahead_iteration", _ahead_iteration), ("fused_resources", _fused_resources),
                     ("sbp_run", sbp_run_costs)):
        try:
            out[name] = fn(bk)
        except Exception as exc:  # noqa: BLE001 - each measurement is its own finding
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def _fused_resources(bk):
    """Registers and local memory a thread of each fused rff kernel takes on this device
    (float32, 28 dimensions, one target, cos form: the specialisation the PTX pass
    compiles, what DSG's cache update and the ops step run); spilled registers show as
    local memory."""
    fused = kernel_module("rff", "cuda_fused")
    out = {"rows_per_thread": fused.rows_per_thread(28)}
    for name, (args, sig) in fused.SPECIALISATIONS.items():
        kernel = getattr(fused, name)(*args)
        kernel.compile(sig.format(t="float32"))
        # without a signature: {argument types: figure} over the kernel's compiled forms (here one)
        out[name] = {"registers": [int(v) for v in kernel.get_regs_per_thread().values()],
                     "local_bytes": [int(v) for v in kernel.get_local_mem_per_thread().values()]}
    return out


def _launch(bk):
    import cupy as cp  # CuPy and Numba-CUDA: only where a device is probed
    from numba import cuda


    @cuda.jit
    def add_one(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] += 1.0

    x = cp.zeros(4096, dtype=cp.float32)

    def fast():
        with launch_context(cp) as stream:
            run_kernel(add_one, 32, 128, stream, x)

    def numba():
        with launch_settings(fast=False), launch_context(cp) as stream:
            run_kernel(add_one, 32, 128, stream, x)

    def cupy_op():
        x.__iadd__(1.0)

    sync = bk.synchronize
    result = {name: _per_call_us(fn, 2000, sync) for name, fn in
              (("fast_launch", fast), ("numba_launch", numba), ("cupy_op", cupy_op))}
    result["counts_right"] = bool(float(x[0].get()) == float(x[-1].get()))
    return result


def _solve(bk, F=256, K=64):
    import cupy as cp
    from cupyx import lapack

    rng = np.random.default_rng(0)
    phi = rng.standard_normal((4096, F + 1))
    a = phi.T @ phi / 4096 + 0.1 * np.eye(F + 1)
    b = rng.standard_normal((F + 1, 1))
    A, Bv = cp.asarray(a), cp.asarray(b)
    ref = np.linalg.solve(a, b)
    sync = bk.synchronize
    result = {}
    scratch_a, scratch_b = cp.empty_like(A), cp.empty_like(Bv)

    def copies():
        scratch_a[...] = A
        scratch_b[...] = Bv

    def gesv():
        copies()
        return lapack.gesv(scratch_a, scratch_b)

    def posv():
        copies()
        return lapack.posv(scratch_a, scratch_b)

    result["copies_only"] = _per_call_us(copies, 200, sync)
    for name, fn in (("getrf_getrs", gesv), ("cholesky_posv", posv)):
        timing = _per_call_us(fn, 200, sync)
        x = fn()
        sync()
        x = cp.asnumpy(scratch_b if x is None else x)
        timing["rel_err"] = float(np.linalg.norm(x - ref) / np.linalg.norm(ref))
        result[name] = timing

    As = cp.asarray(np.broadcast_to(a, (K, F + 1, F + 1)).copy())
    Bs = cp.asarray(np.broadcast_to(b, (K, F + 1, 1)).copy())

    def posv_batched():  # potrfBatched + potrsBatched
        return lapack.posv(As, Bs)

    def lu_batched():  # getrfBatched + getrsBatched
        return cp.linalg.solve(As, Bs)

    def inv_batched():  # the engine's systems built ahead: cuBLAS getrfBatched + getriBatched
        return cp.linalg.inv(As)

    def cholesky_batched():  # potrfBatched alone
        return cp.linalg.cholesky(As)

    for name, fn in (("cholesky_posv_batched", posv_batched), ("lu_solve_batched", lu_batched),
                     ("inverse_batched", inv_batched), ("cholesky_factor_batched", cholesky_batched)):
        timing = {k: v / K for k, v in _per_call_us(fn, 10, sync).items()}  # per system
        x = cp.asnumpy(fn()[-1])
        if name == "inverse_batched":
            x = x @ b
        elif name == "cholesky_factor_batched":
            x = np.linalg.solve(x.T, np.linalg.solve(x, b))
        timing["rel_err"] = float(np.linalg.norm(x - ref) / np.linalg.norm(ref))
        result[name + "_per_system"] = timing
    return result


def _iteration(bk, n=50_000, d=28, B=4096, F=256, n_iter=200):
    """The DSG iteration's ops on fixed arrays, eager and as a replayed CUDA graph."""
    import cupy as cp


    rng = np.random.default_rng(0)
    X = cp.asarray(rng.standard_normal((n, d), dtype=np.float32))
    y = cp.asarray(np.where(rng.random(n) < 0.5, 1.0, -1.0).astype(np.float32))[:, None]
    idx = cp.asarray(rng.integers(0, n, B))
    omega, phase = omega_block(0, 0, F, d, gamma=0.1, dtype="float32", backend=bk)
    n_blocks = 64
    state = {"cache": cp.asarray(rng.standard_normal((n, 1), dtype=np.float32) * 0.1),
             "stored": cp.zeros((n_blocks * F, 1), dtype=cp.float32),
             "intercept": cp.zeros((1,), dtype=cp.float32)}

    def iteration():
        Xb = cp.take(X, idx, axis=0)
        f, yb = ops.cache_batch(state["cache"], y, idx, state["intercept"], backend=bk)
        g = ops.loss_derivative(f, yb, loss=losses.HINGE, weight=1.0, backend=bk)
        phi = ops.rff_features(Xb, omega, phase, backend=bk, check_input=False)
        cov, rhs = ops.gn_system(phi, g, None, None, weight=1.0, fit_intercept=True, backend=bk)
        delta, delta_b = ops.gn_solve(cov, rhs, ridge=0.1, eta=0.5, n_features=F, fit_intercept=True,
                                      dtype=X.dtype, backend=bk)
        intercept, _ = ops.block_update(state["stored"], delta, state["intercept"], delta_b, None, None, start=0,
                                        scale=1.0, fit_intercept=True, scale_sum=0.0, backend=bk)
        state["intercept"][...] = intercept
        state["cache"][...] = ops.rff_predict_add(X, omega, phase, delta, state["cache"], shrink=0.999, backend=bk)

    return {"shape": f"n={n}, d={d}, batch={B}, block={F}", **_eager_then_graph(bk, iteration, state, n_iter)}


def _eager_then_graph(bk, iteration, state, n_iter):
    """``iteration()`` (updating the arrays of ``state`` in place) timed eagerly, then
    captured once as a CUDA graph (a private memory pool kept with it) and replayed:
    milliseconds an iteration each way, and the largest difference between the state
    after one eager iteration and after one replay from the same state; what refused
    the capture where it failed."""
    import cupy as cp

    iteration()  # compile and type every kernel outside the timers and the capture
    bk.synchronize()
    start = time.perf_counter()
    for _ in range(n_iter):
        iteration()
    host = time.perf_counter() - start
    bk.synchronize()
    eager = time.perf_counter() - start
    result = {"eager_host_ms": 1e3 * host / n_iter, "eager_wall_ms": 1e3 * eager / n_iter}
    saved = {k: v.copy() for k, v in state.items()}
    iteration()
    eager_out = {k: v.copy() for k, v in state.items()}
    for k, v in saved.items():
        state[k][...] = v
    stream = cp.cuda.Stream(non_blocking=True)
    pool = cp.cuda.MemoryPool()  # the graph's buffers: kept with it, never handed to other work
    bk.synchronize()
    try:
        with cp.cuda.using_allocator(pool.malloc), stream:
            stream.begin_capture(mode=cp.cuda.runtime.streamCaptureModeRelaxed)
            try:
                iteration()
            finally:
                graph = stream.end_capture()
    except Exception as exc:  # noqa: BLE001 - what refuses capture is the finding (CuPy 14: cuBLAS)
        result["graph_error"] = f"{type(exc).__name__}: {exc}"
        return result
    stream.synchronize()
    for k, v in saved.items():  # capture ran nothing; a replay starts from the saved state
        state[k][...] = v
    bk.synchronize()
    with stream:
        graph.launch()
    stream.synchronize()
    result["replay_max_abs_diff"] = float(max(float(cp.max(cp.abs(state[k] - eager_out[k]))) for k in state))
    start = time.perf_counter()
    with stream:
        for _ in range(n_iter):
            graph.launch()
    host = time.perf_counter() - start
    stream.synchronize()
    replay = time.perf_counter() - start
    result.update({"graph_host_ms": 1e3 * host / n_iter, "graph_wall_ms": 1e3 * replay / n_iter,
                   "graph_speedup": eager / replay, "pool_bytes": int(pool.total_bytes())})
    return result


def _ahead_iteration(bk, n=50_000, d=28, B=4096, F=256, n_iter=200):
    """The iteration a graph can hold: the preconditioner's system inverted ahead (outside
    the iteration), the batch's features by the fused kernel, the right-hand side and the
    step by CuPy reductions (no cuBLAS or cuSOLVER call, which CuPy refuses under capture),
    the state updated in place. Timed eagerly, then captured once and replayed; the
    replay of one iteration against the eager one from the same state."""
    import cupy as cp

    rng = np.random.default_rng(1)
    X = cp.asarray(rng.standard_normal((n, d), dtype=np.float32))
    y = cp.asarray(np.where(rng.random(n) < 0.5, 1.0, -1.0).astype(np.float32))[:, None]
    idx = cp.asarray(rng.integers(0, n, B))
    omega, phase = omega_block(0, 0, F, d, gamma=0.1, dtype="float32", backend=bk)
    phi = ops.rff_features(cp.take(X, idx, axis=0), omega, phase, backend=bk, check_input=False)
    phi1 = cp.concatenate([phi, cp.ones((B, 1), dtype=phi.dtype)], axis=1).astype(cp.float64)
    system = phi1.T @ phi1 / B
    system += 0.1 * cp.mean(cp.diag(system)) * cp.eye(F + 1)
    inverse = cp.linalg.inv(system).astype(cp.float32)  # built ahead: the batch and omega alone decide it
    state = {"cache": cp.asarray(rng.standard_normal((n, 1), dtype=np.float32) * 0.1),
             "stored": cp.zeros((64 * F, 1), dtype=cp.float32), "intercept": cp.zeros((1,), dtype=cp.float32)}
    eta = np.float32(0.5)

    def iteration():
        Xb = cp.take(X, idx, axis=0)
        f, yb = ops.cache_batch(state["cache"], y, idx, state["intercept"], backend=bk)
        g = ops.loss_derivative(f, yb, loss=losses.HINGE, weight=1.0, backend=bk)
        phi = ops.rff_features(Xb, omega, phase, backend=bk, check_input=False)
        rhs = cp.concatenate([cp.sum(phi * g, axis=0), cp.sum(g, axis=0)]) / B
        step = -eta * cp.sum(inverse * rhs[None, :], axis=1)
        delta, delta_b = step[:F, None], step[F:]
        intercept, _ = ops.block_update(state["stored"], delta, state["intercept"], delta_b, None, None, start=0,
                                        scale=1.0, fit_intercept=True, scale_sum=0.0, backend=bk)
        state["intercept"][...] = intercept
        state["cache"][...] = ops.rff_predict_add(X, omega, phase, delta, state["cache"], shrink=0.999, backend=bk)

    return {"shape": f"n={n}, d={d}, batch={B}, block={F}", **_eager_then_graph(bk, iteration, state, n_iter)}


def sbp_run_costs(bk, shapes=((2048, 8), (2048, 123), (32768, 8), (32768, 123)), n_iter=400, nu=0.011):
    """SBP's runs on ``bk`` and on the cpu engine, ``n_iter`` iterations of RBF on each
    (rows, values) shape: two overlapping float32 classes with 10% of the labels flipped,
    gamma 1 / values, the volume ``nu`` times the rows (a9a's fit: 32,561 x 123, nu 0.011).
    On the device the one-block run (``sbp_run``) and the window run (``sbp_window_run``)
    as it is and with its windows replayed as CUDA graphs (its cold levels counted): the
    window run's two times apart say whether the host or the device bounds it. A first
    call of 10 iterations compiles outside the timer."""
    window = get_kernel("sbp_window_run", bk)
    rows = []
    rng = np.random.default_rng(0)
    for n, d in shapes:
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0).astype(np.float32)
        X = (rng.standard_normal((n, d)) + 0.5 * y[:, None]).astype(np.float32)
        y[rng.random(n) < 0.1] *= -1
        row = {"rows": n, "values": d}
        for label, engine, run, graph in (("device", bk, get_kernel("sbp_run", bk), False),
                                          ("window", bk, window, False), ("window_graph", bk, window, True),
                                          ("cpu", resolve("cpu"), get_kernel("sbp_run", resolve("cpu")), False)):
            with _switched(((sbp_kernels, "WINDOW_GRAPH", graph),), engine):
                ms, launches, bands, scratch = _sbp_run_once(engine, run, X, y, n_iter, nu)
            row[f"{label}_ms_an_iteration"] = ms
            if label == "device":
                row["launches"], row["bands_at_end"] = launches, bands
            elif label.startswith("window"):
                row[f"{label}_launches"], row[f"{label}_cold_levels"] = launches, scratch["window"].cold_levels
        rows.append(row)
    return {"rows": rows}


def _sbp_run_once(bk, run, X, y, n_iter, nu):
    n, d = X.shape
    C, C_bar = bk.asarray(np.zeros(n, dtype=X.dtype)), bk.asarray(np.zeros(n))
    Y, ones, X_d = bk.asarray(y), bk.asarray(np.ones(n)), bk.asarray(X)
    idx_log, s_log = bk.asarray(np.zeros(n_iter + 10, dtype=np.int64)), bk.asarray(np.zeros(n_iter + 10))
    uniforms = bk.asarray(np.random.default_rng(1).random(n_iter + 10))
    scalars, warm, scratch = np.array([1.0, 0.0, 0.0, 0.0, 0.0]), np.zeros(WARM_STATE), {}
    args = {"xp": bk.xp, "eta0": 1.0, "volume": nu * n, "kernel_code": 0, "gamma": 1.0 / d,
            "renormalise_below": 1e-3, "scratch": scratch}
    if bk.name != "cpu":  # the rows' squared norms, as the loop gives the cuda engine's response update
        args["sq_norms"] = bk.xp.sum(X_d * X_d, axis=1)
    run(X_d, Y, C, C_bar, ones, uniforms[:10], scalars, idx_log, s_log, warm, t0=0, **args)
    bk.synchronize()
    before = launch_counts()
    start = time.perf_counter()
    run(X_d, Y, C, C_bar, ones, uniforms[10:], scalars, idx_log, s_log, warm, t0=10, **args)
    bk.synchronize()
    ms = 1e3 * (time.perf_counter() - start) / n_iter
    after = launch_counts()
    c, t_pos, t_neg, d_pos, d_neg = np.asarray(to_numpy(C), dtype=np.float64), *warm[:4]
    bands = [int(np.sum((y > 0) & (np.abs(c - t_pos) <= d_pos))), int(np.sum((y < 0) & (np.abs(c - t_neg) <= d_neg)))]
    return ms, {k: after[k] - before[k] for k in after}, bands, scratch
