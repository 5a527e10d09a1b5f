"""A float64 exponential that Numba's loops vectorise: ``exp(x)`` inside an ``@njit`` loop.

The C library's ``exp`` is a call LLVM cannot vectorise (without Intel's SVML), so a
loop of exponentials runs one value at a time. Here: Cody-Waite reduction by ln 2,
``x = k ln2 + r`` with ``|r| <= ln2 / 2`` (ln 2 split in two parts, the first with 32
significant bits so ``k * LN2_HI`` is exact), the Taylor polynomial of ``exp(r)`` to
degree 13 (truncation below 0.05 ulp), and the scale ``2^k`` built from the exponent's
bits in two factors so that subnormal results round once. Every step is arithmetic,
selects and bit casts, all of which LLVM vectorises. Error: at most 1 ulp against
NumPy's ``exp`` on [-745.2, 709.8] (tests/kbackends/test_numba_exp.py); 0 below
(the true value underflows), inf above, NaN for NaN.
"""

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_LN2_HI = 6.93147180369123816490e-01  # ln 2 to 32 bits: 0x3fe62e42fee00000
_LN2_LO = 1.90821492927058770002e-10  # ln 2 - _LN2_HI
_INV_LN2 = 1.44269504088896338700e00
_SHIFTER = 6755399441055744.0  # 1.5 * 2^52: x + _SHIFTER rounds x to an integer held in the low bits
_SHIFTER_BITS = 0x4338000000000000
_X_MAX = 709.782712893384  # exp overflows above
_X_MIN = -745.1332191019412  # exp rounds to 0 below
_TAYLOR = tuple(1.0 / f for f in (
    1.0, 1.0, 2.0, 6.0, 24.0, 120.0, 720.0, 5040.0, 40320.0, 362880.0, 3628800.0, 39916800.0, 479001600.0,
    6227020800.0))
T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13 = _TAYLOR

# No "reassoc": with it, LLVM folds (x + _SHIFTER) - _SHIFTER into x and the
# reduction's two products into one (as in kbackends/kernels/rff/_numba.py).
_NO_REASSOC = {"contract", "nsz", "arcp"}


@intrinsic
def _float_bits(typingctx, value):
    """The int64 whose bits are the float64 ``value``'s."""
    if value != types.float64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _bits_float(typingctx, bits):
    """The float64 whose bits are the int64 ``bits``."""
    if bits != types.int64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@njit(fastmath=_NO_REASSOC)
def fast_exp(x):
    """``exp(x)`` for float64 ``x`` to 1 ulp, vectorisable inside an ``@njit`` loop."""
    xc = min(max(x, _X_MIN - 1.0), _X_MAX + 1.0)
    shifted = xc * _INV_LN2 + _SHIFTER
    k = _float_bits(shifted) - _SHIFTER_BITS  # the nearest integer to x / ln2
    kf = shifted - _SHIFTER
    r = (xc - kf * _LN2_HI) - kf * _LN2_LO
    p = ((((((T13 * r + T12) * r + T11) * r + T10) * r + T9) * r + T8) * r + T7) * r + T6
    p = ((((((p * r + T5) * r + T4) * r + T3) * r + T2) * r + T1) * r) + T0
    k1 = k >> 1  # 2^k as 2^k1 * 2^(k - k1), both normal, for k down to -1076
    y = p * _bits_float((k1 + 1023) << 52) * _bits_float((k - k1 + 1023) << 52)
    y = 0.0 if x < _X_MIN else y
    y = float("inf") if x > _X_MAX else y
    return x + x if x != x else y
