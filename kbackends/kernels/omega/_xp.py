"""Reference generation of omega blocks in any array-API namespace.

The same Philox rounds as the compiled targets, on whole uint64 arrays; the
float maps mirror ``_core`` (computed in float64, cast once at the end).
"""

import math

from ._core import (
    INV_2_32,
    KERNEL_CODES,
    MASK32,
    PHASE_COUNTER,
    PHILOX_M0,
    PHILOX_M1,
    PHILOX_W0,
    PHILOX_W1,
    TWO_PI,
    philox4x32_10,
)


def _open_unit(xp, w):
    return (xp.astype(w, xp.float64) + 0.5) * INV_2_32


def omega_block(*, xp, seed, block, n_features, n_dims, kernel, scale, dtype, device=None):
    u64 = xp.uint64
    kw = {} if device is None else {"device": device}

    def const(v):
        return xp.asarray(v, dtype=u64, **kw)

    consts = tuple(const(c) for c in (PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1, MASK32, 32))
    key0, key1 = const(seed & MASK32), const(seed >> 32)
    block0, block1 = const(block & MASK32), const(block >> 32)
    n_quads = (n_dims + 3) // 4
    rows = xp.reshape(xp.arange(n_features, dtype=u64, **kw), (n_features, 1))
    quads = xp.reshape(xp.arange(n_quads, dtype=u64, **kw), (1, n_quads))
    rows_q = rows + xp.zeros_like(quads)
    quads_r = quads + xp.zeros_like(rows)
    w0, w1, w2, w3 = philox4x32_10(rows_q, quads_r, block0, block1, key0, key1, consts)
    if KERNEL_CODES[kernel] == 0:
        draws = []
        for a, b in ((w0, w1), (w2, w3)):
            radius = xp.sqrt(-2.0 * xp.log(_open_unit(xp, a)))
            angle = TWO_PI * _open_unit(xp, b)
            draws += [radius * xp.cos(angle), radius * xp.sin(angle)]
    else:
        draws = [xp.tan(math.pi * (_open_unit(xp, w) - 0.5)) for w in (w0, w1, w2, w3)]
    # (n_features, n_quads, 4) -> (n_features, 4 * n_quads), column 4*q + t from draw t.
    omega = xp.reshape(xp.stack(draws, axis=2), (n_features, 4 * n_quads))[:, :n_dims]
    omega = scale * omega
    p0, _, _, _ = philox4x32_10(
        xp.arange(n_features, dtype=u64, **kw), const(PHASE_COUNTER), block0, block1, key0, key1, consts
    )
    phase = TWO_PI * _open_unit(xp, p0)
    return xp.astype(omega, dtype), xp.astype(phase, dtype)
