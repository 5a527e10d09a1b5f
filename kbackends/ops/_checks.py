"""Argument checks shared by the ops: one wording for each kind of error.

Every check names the argument in backticks and says what was expected and what
arrived; ValueError for values and shapes, TypeError for dtypes. ``xp`` is the
resolved backend's namespace; the arrays are already on it.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def is_float(xp, a) -> bool:
    """Whether ``a`` has ``xp``'s float32 or float64 dtype."""
    return a.dtype in (xp.float32, xp.float64)


def check_float(xp, a, name: str) -> None:
    """TypeError unless ``a`` is float32 or float64."""
    if not is_float(xp, a):
        msg = f"`{name}` must have a float32 or float64 dtype, got {a.dtype}"
        raise TypeError(msg)


def check_ndim(a, name: str, ndim: int, *, show_shape: bool = True) -> None:
    """ValueError unless ``a`` has ``ndim`` dimensions (the message adds the shape
    when ``show_shape``)."""
    if a.ndim != ndim:
        shape = f" (shape {tuple(a.shape)})" if show_shape else ""
        msg = f"`{name}` must be {ndim}-D, got ndim={a.ndim}{shape}"
        raise ValueError(msg)


def check_float_array(xp, a, name: str, ndim: int) -> None:
    """``a`` is ``ndim``-D (ValueError) and float32 / float64 (TypeError)."""
    check_ndim(a, name, ndim)
    check_float(xp, a, name)


def check_same_columns(xp, a, name: str, X) -> None:
    """ValueError unless ``a`` has the columns and the dtype of ``X``."""
    if a.shape[1] != X.shape[1] or a.dtype != X.dtype:
        msg = (f"`{name}` {tuple(a.shape)} {a.dtype} and `X` {tuple(X.shape)} {X.dtype} "
               "must have the same number of columns and dtype")
        raise ValueError(msg)


def _finite(xp, a) -> bool:
    if isinstance(a, (int, float)):
        return math.isfinite(a)
    return bool(xp.all(xp.isfinite(a)))


def check_all_finite(xp, enabled: bool, arrays: dict, *, together: bool = False) -> None:
    """ValueError if an array of ``arrays`` (name -> array or float) holds NaN or inf.

    Scans in order and stops at the first bad one (each scan of a device array
    synchronises). The message names that array, or with ``together`` all of
    them ("`c` or `volume` contains ..."). Nothing is scanned unless ``enabled``.
    """
    if not enabled:
        return
    for name, a in arrays.items():
        if not _finite(xp, a):
            names = [f"`{n}`" for n in arrays] if together else [f"`{name}`"]
            listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
            msg = f"{listed} contains NaN or infinite values"
            raise ValueError(msg)


def is_int(value) -> bool:
    """An integer (Python or NumPy) that is not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


# Counts size allocations: beyond the platform's index range NumPy fails with a
# message that names nothing, so the bound is part of the check.
_MAX_COUNT = int(np.iinfo(np.intp).max)


def check_int(name: str, value, low: int, high: int | None = None, high_name: str | None = None) -> int:
    """ValueError unless ``value`` is an integer in ``[low, high]`` (``>= low`` and
    within the platform's index range without ``high``); ``high_name`` says what
    bounds it, as in ``[1, n_anchors=5]``. Returns it as a Python int."""
    if high is None:
        high, high_name = _MAX_COUNT, "intp max"
    if not is_int(value) or value < low or value > high:
        bound = f"in [{low}, {high_name}={high}]" if high_name else f"in [{low}, {high}]"
        msg = f"`{name}` must be an integer {bound}, got {value!r}"
        raise ValueError(msg)
    return int(value)


def check_real(name: str, value, *, low: float = -math.inf, strict: bool = False) -> float:
    """The float of a finite real scalar ``value`` above ``low`` (``> low`` when
    ``strict``, else ``>=``): TypeError for a non-number (str, None, bool, complex),
    ValueError for NaN, inf or out of range. Returns the float."""
    if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
        msg = f"`{name}` must be a real number, got {type(value).__name__} {value!r}"
        raise TypeError(msg)
    out = float(value)
    if not (math.isfinite(out) and (out > low if strict else out >= low)):
        bound = f"{'>' if strict else '>='} {low}" if low > -math.inf else "finite"
        msg = f"`{name}` must be a finite number {bound}, got {value!r}"
        raise ValueError(msg)
    return out


def check_positive(name: str, value) -> float:
    """The float of ``value`` if it is a finite real number > 0 (see :func:`check_real`)."""
    return check_real(name, value, low=0.0, strict=True)


def check_signs(xp, y, name: str = "y") -> None:
    """ValueError unless every entry of ``y`` is +1 or -1 (NaN, 0/1 labels rejected)."""
    if not bool(xp.all((y == 1) | (y == -1))):
        msg = f"`{name}` must hold only +1 and -1"
        raise ValueError(msg)


def check_index(xp, idx, n: int, message: str) -> None:
    """ValueError(``message``) unless every entry of ``idx`` is in ``[0, n)``."""
    if math.prod(idx.shape) and not (bool(xp.all(idx >= 0)) and bool(xp.all(idx < n))):
        raise ValueError(message)
