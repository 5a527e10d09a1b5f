"""Numba-CUDA forms of the engine's bookkeeping: each one launch of one thread an
entry, in the compute dtype (a Python float scale cast to it, as NumPy casts a
Python scalar), where the reference (``_xp``) is three or four CuPy launches."""

from numba import cuda

from .._cuda_launch import contiguous, grid_1d, grid_2d, launch_context, run_kernel
from . import _xp

PTX_SIGNATURES = {
    "_cache_batch": [f"void({t}[:, ::1], {t}[:, ::1], int64[::1], {t}[::1], boolean, {t}[:, ::1], {t}[:, ::1])"
                     for t in ("float32", "float64")],
    "_block_update": [f"void({t}[:, ::1], int64, {t}[:, ::1], {t}, {t}[::1], {t}[::1], boolean, {t}[::1], boolean,"
                      f" {t}[:, ::1], {t}, {t}[::1], {t}[::1])" for t in ("float32", "float64")],
}


@cuda.jit(cache=True)
def _cache_batch(cache, y, idx, intercept, has_y, f, yb):
    """``f[r] = cache[idx[r]] + intercept``, ``yb[r] = y[idx[r]]``; a :func:`grid_2d`
    launch, outputs on x (``y`` unread without ``has_y``)."""
    c, r0 = cuda.grid(2)
    B, k = f.shape
    if c >= k:
        return
    for r in range(r0, B, cuda.gridsize(2)[1]):
        i = idx[r]
        f[r, c] = cache[i, c] + intercept[c]
        if has_y:
            yb[r, c] = y[i, c]


@cuda.jit(cache=True)
def _block_update(stored, start, delta, scale, intercept, delta_b, fit_intercept, intercept_out, average,
                  correction, scale_sum, intercept_sum, intercept_sum_out):
    """``stored[start + r] += delta[r] / scale``, ``intercept_out = intercept + delta_b``;
    with ``average`` also ``correction[start + r] += delta[r] / scale * scale_sum`` and
    ``intercept_sum_out = intercept_sum + intercept_out``; one thread an entry (F k + k
    of them)."""
    e = cuda.grid(1)
    F, k = delta.shape
    if e < F * k:
        r = e // k
        c = e % k
        step = delta[r, c] / scale
        stored[start + r, c] = stored[start + r, c] + step
        if average:
            correction[start + r, c] = correction[start + r, c] + step * scale_sum
    elif e < F * k + k:
        c = e - F * k
        b = intercept[c] + delta_b[c] if fit_intercept else intercept[c]
        if fit_intercept:
            intercept_out[c] = b
        if average:
            intercept_sum_out[c] = intercept_sum[c] + b


def cache_batch(cache, y, idx, intercept, *, xp):
    """The signature and results of ``_xp.cache_batch``."""
    has_y = y is not None
    if (cache.ndim != 2 or intercept.dtype != cache.dtype or idx.dtype != xp.int64
            or (has_y and (y.dtype != cache.dtype or y.shape[1:] != cache.shape[1:]))):
        return _xp.cache_batch(cache, y, idx, intercept, xp=xp)
    cache, idx, intercept = contiguous(xp, cache, idx, intercept)
    (y,) = contiguous(xp, y) if has_y else (cache,)  # unread without targets
    B, k = idx.shape[0], cache.shape[1]
    f = xp.empty((B, k), dtype=cache.dtype)
    # without targets a stand-in that is never written (not ``f``: the simulator copies
    # every array argument back from its device, and an aliased copy would overwrite f)
    yb = xp.empty((B, k) if has_y else (1, 1), dtype=cache.dtype)
    if B and k:
        grid, block = grid_2d(B, k, block=(1, 128))
        with launch_context(xp) as stream:
            run_kernel(_cache_batch, grid, block, stream, cache, y, idx, intercept, has_y, f, yb)
    return f, yb if has_y else None


def block_update(stored, delta, intercept, delta_b, correction, intercept_sum, *, xp, start, scale, fit_intercept,
                 scale_sum):
    """The signature and results of ``_xp.block_update``."""
    F, k = delta.shape
    average = correction is not None
    arrays = (stored, correction) if average else (stored,)
    if any(not getattr(getattr(a, "flags", None), "c_contiguous", False) or a.dtype != delta.dtype for a in arrays):
        return _xp.block_update(stored, delta, intercept, delta_b, correction, intercept_sum, xp=xp, start=start,
                                scale=scale, fit_intercept=fit_intercept, scale_sum=scale_sum)
    delta, intercept, delta_b = contiguous(xp, delta, intercept, delta_b)
    dt = delta.dtype
    intercept_out = xp.empty((k,), dtype=dt) if fit_intercept else intercept
    # stand-ins never written without the average (not aliases: the simulator copies
    # every array argument back from its device)
    if average:
        (intercept_sum,) = contiguous(xp, intercept_sum)
        intercept_sum_out = xp.empty((k,), dtype=dt)
    else:
        correction, intercept_sum, intercept_sum_out = (xp.empty((1, 1), dtype=dt), xp.empty((1,), dtype=dt),
                                                        xp.empty((1,), dtype=dt))
    blocks, threads = grid_1d(F * k + k)
    with launch_context(xp) as stream:
        run_kernel(_block_update, blocks, threads, stream, stored, int(start), delta, dt.type(scale), intercept,
                   delta_b, bool(fit_intercept), intercept_out, average, correction, dt.type(scale_sum),
                   intercept_sum, intercept_sum_out)
    return intercept_out, intercept_sum_out if average else None
