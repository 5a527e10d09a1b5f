"""Device math for the Numba-CUDA kernels that stays in the input's precision.

libdevice's float32 ``cosf`` / ``sinf`` carry a Payne-Hanek slow path for huge
arguments written in float64 (``cvt.f64.f32``, ``mul.f64`` in the PTX): float64
instructions inside float32 kernels, on a GPU where float64 runs at a fraction
of float32's rate. :func:`cos` and :func:`sincos` therefore use, for float32,
the Cephes ``sinf`` / ``cosf`` scheme (Moshier, *Methods and Programs for
Mathematical Functions*, 1989): octant reduction by pi/4 with pi/4 split into
three float32 parts (exact products for ``|x| < 8192``, an error of order
``|x| * 2**-24`` beyond, which is the rounding error of a float32 argument of
that size anyway), then minimax polynomials on ``[-pi/4, pi/4]`` (error
< 1e-7). float64 keeps libdevice's ``cos`` / ``sin``.

On the CUDA target the choice is made per argument type at compile time
(``numba.core.extending.overload``); under the simulator the plain Python
functions below run, taking the same float32 path for ``numpy.float32``
scalars, so the simulator checks the float32 polynomial too. Constants are
``numpy.float32`` globals: Numba freezes them as float32 constants, which
combine with a float32 value into float32 and with a float64 value into float64
(a Python ``0.5`` or an integer ``2`` would turn float32 arithmetic into float64).
"""

import math

import numpy as np
from numba import config

ZERO = np.float32(0.0)
ONE = np.float32(1.0)
TWO = np.float32(2.0)
HALF = np.float32(0.5)
INF = np.float32(np.inf)

_FOUR_OVER_PI = np.float32(1.27323954473516)
_DP1 = np.float32(0.78515625)
_DP2 = np.float32(2.4187564849853515625e-4)
_DP3 = np.float32(3.77489497744594108e-8)
_C0 = np.float32(2.443315711809948e-5)
_C1 = np.float32(-1.388731625493765e-3)
_C2 = np.float32(4.166664568298827e-2)
_S0 = np.float32(-1.9515295891e-4)
_S1 = np.float32(8.3321608736e-3)
_S2 = np.float32(-1.6666654611e-1)


def sincos_f32(x):
    """``(sin(x), cos(x))`` of a float32 ``x`` in float32 arithmetic only."""
    ax = abs(x)
    j = int(ax * _FOUR_OVER_PI)  # octant
    j += j & 1  # to an even octant: the remainder lies in [-pi/4, pi/4]
    y = np.float32(j)
    z = ((ax - y * _DP1) - y * _DP2) - y * _DP3
    zz = z * z
    c = ONE - HALF * zz + zz * zz * ((_C0 * zz + _C1) * zz + _C2)
    s = z + z * zz * ((_S0 * zz + _S1) * zz + _S2)
    q = (j >> 1) & 3  # quadrant: x = q * pi/2 + z
    if q == 1 or q == 3:
        s, c = c, s
    sin_sign = ONE if q < 2 else -ONE
    cos_sign = ONE if q == 0 or q == 3 else -ONE
    if x < ZERO:
        sin_sign = -sin_sign
    return sin_sign * s, cos_sign * c


def cos(x):
    """Cosine in the argument's precision (see the module docstring)."""
    if isinstance(x, np.float32) and math.isfinite(x):
        return sincos_f32(x)[1]
    return math.cos(x)


def sincos(x):
    """``(sin(x), cos(x))`` in the argument's precision."""
    if isinstance(x, np.float32) and math.isfinite(x):
        return sincos_f32(x)
    return math.sin(x), math.cos(x)


if not config.ENABLE_CUDASIM:
    from numba import cuda, types
    from numba.core.extending import overload

    _sincos_f32_dev = cuda.jit(device=True, cache=True)(sincos_f32)

    @overload(cos, target="cuda")
    def _cos_cuda(x):
        if x == types.float32:
            return lambda x: _sincos_f32_dev(x)[1]
        return lambda x: math.cos(x)

    @overload(sincos, target="cuda")
    def _sincos_cuda(x):
        if x == types.float32:
            return lambda x: _sincos_f32_dev(x)
        return lambda x: (math.sin(x), math.cos(x))
