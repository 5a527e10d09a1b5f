"""TSGSU's per-point coefficients on the GPU in ONE block (the reference, ``_xp``, is the
risk object's array code: about 95 CuPy launches an iteration).

The block reads both batches' predictions (B_S + B_U values, one output): a strided
pass per thread and a fixed tree for the four means of the margin losses (the
similar points' l(f, +1), l(f, -1), the unlabeled points' the same), a second pass
for their variances (two-pass, as ``xp.var``); thread 0 forms the parts A and B
and their variances, the running averages (kept on the device in ``state``), the
margin and the correction's derivatives; then every thread writes its points'
coefficients. All in the compute dtype, the constants cast to it as NumPy casts a
Python float. TSGSU's default batches (1,000 + 1,000 points) are a few microseconds
of one SM.
"""

import math

import numpy as np
from numba import config, cuda

from kbackends.kernel_tools import contiguous, launch_context, run_kernel, tree_sum

from . import _xp

_THREADS = 32 if config.ENABLE_CUDASIM else 512  # a power of two: the trees halve it
_PART = 4 * _THREADS  # shared memory of the four sums (a literal size for Numba)
LOSSES = {"squared": 0, "logistic": 1}
CORRECTIONS = {"abs": 0, "relu": 1, "none": 2}

PTX_SIGNATURES = {
    "_su_step": [f"void({t}[:, ::1], {t}[:, ::1], int64, int64, {t}[::1], boolean, {t}[::1], {t}[:, ::1],"
                 f" {t}[:, ::1])" for t in ("float32", "float64")],
}


@cuda.jit(device=True)
def _value(z, t, code, one, half, quarter):
    """The margin loss l(z, t), t = +-1: squared (z t - 1)^2 / 4, logistic log(1 + exp(-t z))."""
    if code == 0:
        d = z * t - one
        return quarter * (d * d)
    m = -t * z
    return max(m, one - one) + math.log1p(math.exp(-abs(m)))


@cuda.jit(device=True)
def _slope(z, t, code, one, half):
    """dl/dz: squared t (z t - 1) / 2, logistic -t sigma(-t z)."""
    if code == 0:
        return half * t * (z * t - one)
    return -t * (half * (one - math.tanh(half * (t * z))))


@cuda.jit(device=True)
def _signs(means, var, k, n_s, n_u, correction, have_state, state, sign, typed, one, zero):
    """ONE thread: the parts A and B of the risk from the batch means (and with a margin
    their variances), the running averages in ``state``, the margin, and the correction's
    derivatives at A and B into ``sign`` (see :func:`_su_step`)."""
    c, ps, pp, pn = k[0], k[1], k[2], k[3]
    a = c * (ps * means[0] - pn * means[2])
    b = c * (pp * means[3] - ps * means[1])
    var_a = zero
    var_b = zero
    if k[6] > zero:
        typed[0] = n_s
        ns = typed[0]
        typed[0] = n_u
        nu = typed[0]
        var_a = k[8] * (k[9] * var[0] / ns + k[11] * var[2] / nu)
        var_b = k[8] * (k[10] * var[3] / nu + k[9] * var[1] / ns)
    if k[4] > zero:  # running averages
        if have_state:
            a = k[4] * state[0] + k[5] * a
            b = k[4] * state[1] + k[5] * b
            var_a = k[4] * state[2] + k[5] * var_a
            var_b = k[4] * state[3] + k[5] * var_b
        state[0] = a
        state[1] = b
        state[2] = var_a
        state[3] = var_b
    if k[6] > zero:
        a = a + k[6] * math.sqrt(var_a * k[7])
        b = b + k[6] * math.sqrt(var_b * k[7])
    if correction == 0:  # abs: 2 [v >= 0] - 1
        sign[0] = (one + one) * (one if a >= zero else zero) - one
        sign[1] = (one + one) * (one if b >= zero else zero) - one
    elif correction == 1:  # relu: [v > 0]
        sign[0] = one if a > zero else zero
        sign[1] = one if b > zero else zero
    else:
        sign[0] = one
        sign[1] = one


@cuda.jit
def _su_step(f_s, f_u, code, correction, k, have_state, state, g_s, g_u):
    """``k`` = (c, pi_S, pi_+, pi_-, smoothing, 1 - smoothing, margin, shrink, c^2,
    pi_S^2, pi_+^2, pi_-^2, c pi_S) in the compute dtype; ``state`` (4,): the running
    (A, B, var A, var B), read when ``have_state`` and written when smoothing."""
    part = cuda.shared.array(_PART, f_s.dtype)  # the four sums' rows, each _THREADS wide
    sign = cuda.shared.array(2, f_s.dtype)
    typed = cuda.local.array(1, f_s.dtype)
    typed[0] = 1
    one = typed[0]
    zero = one - one
    half = one / (one + one)
    quarter = half * half
    tid = cuda.threadIdx.x
    n_s = f_s.shape[0]
    n_u = f_u.shape[0]
    means = cuda.local.array(4, f_s.dtype)  # l(f, +1), l(f, -1) on the similar batch, then the unlabeled
    var = cuda.local.array(4, f_s.dtype)
    acc = cuda.local.array(4, f_s.dtype)
    for p in range(2 if k[6] > zero else 1):  # pass 0: the means; pass 1 (a margin): the variances
        for q in range(4):
            acc[q] = zero
        for batch in range(2):
            f = f_s if batch == 0 else f_u
            for i in range(tid, f.shape[0], _THREADS):
                for side in range(2):
                    v = _value(f[i, 0], one if side == 0 else -one, code, one, half, quarter)
                    q = 2 * batch + side
                    if p == 0:
                        acc[q] += v
                    else:
                        acc[q] += (v - means[q]) * (v - means[q])
        for q in range(4):
            part[q * _THREADS + tid] = acc[q]
        tree_sum(part, tid, _THREADS, 4)
        for q in range(4):  # every thread: the sums over each batch, / its size
            typed[0] = n_s if q < 2 else n_u
            if p == 0:
                means[q] = part[q * _THREADS] / typed[0]
            else:
                var[q] = part[q * _THREADS] / typed[0]
        cuda.syncthreads()  # part is read before the next pass overwrites it
    if tid == 0:
        _signs(means, var, k, n_s, n_u, correction, have_state, state, sign, typed, one, zero)
    cuda.syncthreads()
    da = sign[0]
    db = sign[1]
    for i in range(tid, n_s, _THREADS):
        z = f_s[i, 0]
        g_s[i, 0] = k[12] * (da * _slope(z, one, code, one, half) - db * _slope(z, -one, code, one, half))
    for i in range(tid, n_u, _THREADS):
        z = f_u[i, 0]
        g_u[i, 0] = k[0] * (k[2] * db * _slope(z, -one, code, one, half) - k[3] * da * _slope(z, one, code, one, half))


def su_derivatives(f_s, f_u, *, xp, risk, state, smoothing, margin):
    """The signature and results of ``_xp.su_derivatives``; the running averages are kept
    in ``state["device"]``, a (4,) device array."""
    code, correction = LOSSES.get(risk.loss), CORRECTIONS.get(risk.correction)
    if (code is None or correction is None or state is None or f_s.ndim != 2 or f_s.shape[1] != 1
            or f_u.shape[1:] != f_s.shape[1:] or f_u.dtype != f_s.dtype or not (f_s.shape[0] and f_u.shape[0])):
        return _xp.su_derivatives(f_s, f_u, xp=xp, risk=risk, state=state, smoothing=smoothing, margin=margin)
    dt = f_s.dtype
    c, ps, pp, pn = risk.c, risk.pi_s, risk.prior, 1.0 - risk.prior
    shrink = (1.0 - smoothing) / (1.0 + smoothing)
    constants = np.array([c, ps, pp, pn, smoothing, 1.0 - smoothing, margin, shrink, c * c, ps * ps, pp * pp,
                          pn * pn, c * ps], dtype=np.float64).astype(dt)
    key = ("device", str(dt), constants.tobytes())
    if state.get("key") != key:  # the constants and the running averages' buffer, once a fit
        state["key"], state["constants"] = key, xp.asarray(constants)
        state["device"], state["have"] = xp.zeros((4,), dtype=dt), False
    have = state["have"] and smoothing > 0.0
    f_s, f_u = contiguous(xp, f_s, f_u)
    g_s, g_u = xp.empty(f_s.shape, dtype=dt), xp.empty(f_u.shape, dtype=dt)
    with launch_context(xp) as stream:
        run_kernel(_su_step, 1, _THREADS, stream, f_s, f_u, code, correction, state["constants"], have,
                   state["device"], g_s, g_u)
    state["have"] = True
    return g_s, g_u
