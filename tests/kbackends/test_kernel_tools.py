"""kbackends.kernel_tools, the public kit for kernels registered outside kbackends: every
name it lists is the very object the built-in kernels use, and importing it imports
neither Numba nor Numba-CUDA."""

import subprocess
import sys

import pytest

from kbackends import kernel_tools
from kbackends.testing import kernel_module


def test_every_listed_name_is_the_built_in_kernels_object():
    homes = {"cuda_launch": kernel_module(None, "cuda_launch"), "cuda_math": kernel_module(None, "cuda_math")}
    assert kernel_tools.run_kernel is homes["cuda_launch"].run_kernel
    assert kernel_tools.grid_2d(10, 40) == homes["cuda_launch"].grid_2d(10, 40)
    assert kernel_tools.cos is homes["cuda_math"].cos  # Numba's cuda overload is keyed on this object
    for name in kernel_tools.__all__:
        assert getattr(kernel_tools, name) is not None, name
    assert set(kernel_tools.__all__) <= set(dir(kernel_tools))
    assert sorted(kernel_tools.__all__) == sorted(kernel_tools._HOME)  # the list is the table


def test_an_unknown_name_raises_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        kernel_tools.nope  # noqa: B018


def test_importing_it_imports_no_compiler():
    code = ("import sys, kbackends.kernel_tools as k; k.grid_1d(5); "
            "print(any(m == 'numba' or m.startswith('numba.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
