"""A NumPy array dressed as a CuPy one, for the launch path's packing on the CPU."""

import types

import numpy as np


class DeviceLike:
    """The attributes of a CuPy ndarray that :func:`pack_arguments` reads, over a NumPy array."""

    def __init__(self, a):
        self.a = a
        self.dtype, self.ndim, self.size, self.itemsize = a.dtype, a.ndim, a.size, a.itemsize
        self.shape, self.strides = a.shape, a.strides
        self.flags = types.SimpleNamespace(c_contiguous=a.flags.c_contiguous)
        self.data = types.SimpleNamespace(ptr=a.ctypes.data)


def argument_for(numba_type):
    """A value Numba would type as ``numba_type`` (an array as a :class:`DeviceLike`, C-ordered)."""
    from numba.cuda import types as nt

    if isinstance(numba_type, nt.Array):
        dtype = np.dtype(str(numba_type.dtype))
        return DeviceLike(np.zeros((2,) * numba_type.ndim, dtype=dtype))
    if isinstance(numba_type, nt.BaseTuple):
        return tuple(argument_for(t) for t in numba_type.types)
    if numba_type == nt.boolean:
        return True
    return np.dtype(str(numba_type)).type(1)
