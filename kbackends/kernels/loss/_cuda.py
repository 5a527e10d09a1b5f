"""Numba-CUDA loss derivatives: one thread an entry of the (B, k) batch, the loss
chosen by an integer code (:data:`CODES`); a loss without a code runs the
reference (``_xp``) on CuPy. Each expression is the reference's, in the input's
dtype (the weight cast to it, as NumPy casts a Python float)."""

import math

from numba import config, cuda

from .._cuda_block import tree_sum
from .._cuda_launch import contiguous, grid_2d, launch_context, run_kernel

from . import _xp

CODES = {"hinge": 0, "squared_hinge": 1, "logistic": 2, "squared": 3}
UNLABELED_CODES = {"shg": 4, "sshg": 5, "da": 6}  # S3VMs' losses of f alone (Table 2), y unread

PTX_SIGNATURES = {
    "_derivative": [f"void({t}[:, ::1], {t}[:, ::1], int64, {t}, {t}[:, ::1])" for t in ("float32", "float64")],
    "_mean_value": [f"void({t}[:, ::1], {t}[:, ::1], {t}[::1], int64, {t}[::1])" for t in ("float32", "float64")],
}
_THREADS = 32 if config.ENABLE_CUDASIM else 256  # the mean's block (a power of two: the tree halves it)


@cuda.jit(cache=True)
def _derivative(f, y, code, weight, g):
    """``g = dl/df(f, y) * weight``; a :func:`grid_2d` launch, outputs on x."""
    c, r = cuda.grid(2)
    n, k = f.shape
    if c >= k:
        return
    # constants in the input's dtype (a float32 literal would promote a float64 libm result
    # to float32 under the simulator's NumPy scalars, unlike the compiled kernel)
    typed = cuda.local.array(1, f.dtype)
    typed[0] = 1
    one = typed[0]
    zero = one - one
    two = one + one
    half = one / two
    ten = (two + two + one) * two
    for i in range(r, n, cuda.gridsize(2)[1]):
        fv = f[i, c]
        yv = y[i, c]
        if code == 0:  # hinge: -y where y f < 1
            d = -yv if yv * fv < one else zero * yv
        elif code == 1:  # squared hinge: -2 y max(1 - y f, 0)
            d = -two * yv * max(one - yv * fv, zero)
        elif code == 2:  # logistic: -y sigma(-y f), sigma(-m) = (1 - tanh(m / 2)) / 2
            d = -yv * (half * (one - math.tanh(half * (yv * fv))))
        elif code == 3:  # squared: f - y
            d = fv - yv
        elif code == 6:  # da: -10 f exp(-5 f^2)
            d = -ten * fv * math.exp(-(ten * half) * fv * fv)
        else:  # shg: -sign(f) [|f| < 1];  sshg: -sign(f) max(1 - |f|, 0)
            sign = one if fv > zero else (-one if fv < zero else fv)  # sign(0) = 0, sign(nan) = nan
            a = abs(fv)
            d = -sign * ((one if a < one else zero) if code == 4 else max(one - a, zero * a))
        g[i, c] = d * weight


def loss_derivative(f, y, *, xp, loss, weight):
    """The signature and results of ``_xp.loss_derivative``."""
    code = (CODES if y is not None else UNLABELED_CODES).get(loss.name)
    if code is None or f.ndim != 2 or (y is not None and (y.shape != f.shape or y.dtype != f.dtype)):
        return _xp.loss_derivative(f, y, xp=xp, loss=loss, weight=weight)
    f, y = contiguous(xp, f, f if y is None else y)  # an unlabeled loss reads no y: f stands in
    g = xp.empty(f.shape, dtype=f.dtype)
    if f.size:
        grid, block = grid_2d(f.shape[0], f.shape[1], block=(1, 128))
        with launch_context(xp) as stream:
            run_kernel(_derivative, grid, block, stream, f, y, code, f.dtype.type(weight), g)
    return g


@cuda.jit(cache=True)
def _mean_value(f, y, intercept, code, out):
    """ONE block: ``out[0]`` = the mean over rows of ``sum_c loss(f[i, c] + intercept[c], y[i, c])``
    for the supervised losses (codes 0-3): a strided pass per thread, a fixed tree."""
    part = cuda.shared.array(_THREADS, f.dtype)
    typed = cuda.local.array(1, f.dtype)
    typed[0] = 1
    one = typed[0]
    zero = one - one
    half = one / (one + one)
    tid = cuda.threadIdx.x
    n, k = f.shape
    acc = zero
    for i in range(tid, n, _THREADS):
        for c in range(k):
            fv = f[i, c] + intercept[c]
            yv = y[i, c]
            if code == 0:  # hinge
                acc += max(one - yv * fv, zero)
            elif code == 1:  # squared hinge
                h = max(one - yv * fv, zero)
                acc += h * h
            elif code == 2:  # logistic: logaddexp(0, -y f)
                m = -yv * fv
                acc += max(m, zero) + math.log1p(math.exp(-abs(m)))
            else:  # squared
                d = fv - yv
                acc += half * (d * d)
    part[tid] = acc
    tree_sum(part, tid, _THREADS, 1)
    if tid == 0:
        typed[0] = n
        out[0] = part[0] / typed[0]


def mean_loss(f, y, intercept, weights, *, xp, loss):
    """The signature and results of ``_xp.mean_loss``."""
    code = CODES.get(loss.name)
    if (code is None or weights is not None or y is None or f.ndim != 2 or y.shape != f.shape
            or y.dtype != f.dtype or intercept.dtype != f.dtype or f.shape[0] == 0):
        return _xp.mean_loss(f, y, intercept, weights, xp=xp, loss=loss)
    f, y, intercept = contiguous(xp, f, y, intercept)
    out = xp.empty((1,), dtype=f.dtype)
    with launch_context(xp) as stream:
        run_kernel(_mean_value, 1, _THREADS, stream, f, y, intercept, code, out)
    return xp.reshape(out, ())
