"""PTX pass (no GPU needed): every Numba-CUDA kernel compiled for sm_90 by the real
NVVM compiler from the pip-installed CUDA wheels (``numba-cuda[cu13]`` brings
``nvidia-nvvm`` and ``nvidia-cuda-nvrtc``), for each dtype it is used with.

The float32 instantiations must hold no float64 instruction or conversion: the
simulator computes in NumPy and cannot see a ``phase[j] * 0`` or a ``0.0``
accumulator that turns float32 arithmetic into float64, which on a GPU runs at
a fraction of float32's rate (1/64 on consumer parts).

The modules checked: every ``kbackends/kernels/*/_cuda.py`` and the module of every
``cuda`` implementation in the kernel registry once :mod:`algorithms` is imported (which
registers the kernel families the algorithms own, e.g. ``algorithms/s3gd/_kernels``).
Convention: each such module defines ``PTX_SIGNATURES =
{kernel name: [Numba signature, ...]}`` naming every ``@cuda.jit`` kernel it
defines, float32 signatures spelled ``float32``; a kernel that computes in
float64 on purpose is named in ``PTX_FLOAT64_BY_DESIGN`` with the reason, and one
whose data are float64 in every compute dtype (and so has no float32 form) in
``PTX_FLOAT64_ONLY`` with the reason.

Without a driver, Numba cannot ask a device for its compute capability when it
compiles the device functions a kernel calls: the ``sm_90`` fixture answers
(9, 0) for it, as ``compile_ptx(..., cc=(9, 0))`` does for the kernel itself.
Runs without ``NUMBA_ENABLE_CUDASIM`` (the simulator has no compiler).
"""

import functools
import importlib
import os
import re
import types
from pathlib import Path

import pytest

import algorithms  # noqa: F401  (registers the algorithms' own kernel families)
import kbackends
from kbackends import testing

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
pytestmark = [pytest.mark.ptx, pytest.mark.skipif(SIMULATOR, reason="the PTX pass compiles; run it without the simulator")]

CC = (9, 0)  # H100 / H200
KERNEL_DIR = Path(kbackends.__file__).parent / "kernels"


def _cuda_modules():
    """kbackends' own cuda modules, and the module of every registered cuda implementation."""
    names = {f"kbackends.kernels.{p.parent.name}._cuda" for p in KERNEL_DIR.glob("*/_cuda.py")}
    names |= {testing.implementation(op, "cuda").__module__
              for op, impl in kbackends.registered_kernels() if impl == "cuda"}
    return sorted(names)


MODULES = _cuda_modules()

# A float64 instruction, conversion or register: `add.f64`, `cvt.f64.f32`, `cvt.rn.f32.f64`, `.reg .f64`.
_F64 = re.compile(r"\.f64\b")


def _signatures():
    if SIMULATOR:
        return []
    out = []
    for name in MODULES:
        module = importlib.import_module(name)
        for kernel, sigs in getattr(module, "PTX_SIGNATURES", {}).items():
            out += [pytest.param(name, kernel, sig, id=f"{name.removesuffix('._cuda')}.{kernel}[{sig}]") for sig in sigs]
    return out


@pytest.fixture(scope="module")
def sm_90():
    import numba.cuda.dispatcher as dispatcher

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dispatcher, "get_current_device", lambda: types.SimpleNamespace(compute_capability=CC))
        yield


def _kernels(module):
    from numba.cuda.dispatcher import CUDADispatcher

    return {
        name
        for name, obj in vars(module).items()
        if isinstance(obj, CUDADispatcher) and not obj.targetoptions.get("device") and obj.__module__ == module.__name__
    }


def test_there_are_modules_to_check():
    assert "kbackends.kernels.rff._cuda" in MODULES and len(MODULES) >= 4
    # the families the algorithms own are found through the registry
    assert {"algorithms.s3gd._kernels._cuda", "algorithms.sbp._kernels._cuda",
            "algorithms.tsgsu._kernels._cuda"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_every_kernel_is_listed_with_float32_and_float64(name):
    module = importlib.import_module(name)
    listed = getattr(module, "PTX_SIGNATURES", None)
    assert listed is not None, f"{name} defines no PTX_SIGNATURES"
    assert set(listed) == _kernels(module), f"{name}: PTX_SIGNATURES must name exactly its @cuda.jit kernels"
    only64 = getattr(module, "PTX_FLOAT64_ONLY", {})
    assert set(only64) <= set(listed), f"{name}: PTX_FLOAT64_ONLY names a kernel PTX_SIGNATURES does not"
    for kernel, sigs in listed.items():
        assert any("float64" in s for s in sigs), kernel
        assert any("float32" in s for s in sigs) != (kernel in only64), kernel


@functools.lru_cache(maxsize=None)
def _ptx(name, kernel, sig):
    from numba import cuda

    module = importlib.import_module(name)
    ptx, _ = cuda.compile_ptx(getattr(module, kernel).py_func, sig, cc=CC)
    return ptx


@pytest.mark.parametrize("name, kernel, sig", _signatures())
def test_compiles_for_sm_90_and_float32_stays_float32(sm_90, name, kernel, sig):
    module = importlib.import_module(name)
    ptx = _ptx(name, kernel, sig)
    assert ".target sm_90" in ptx
    if "float32" not in sig or kernel in getattr(module, "PTX_FLOAT64_BY_DESIGN", {}):
        return
    code = [line.strip() for line in ptx.splitlines() if not line.strip().startswith("//")]
    f64 = [line for line in code if _F64.search(line)]
    assert not f64, f"{kernel} {sig}: float64 in the float32 PTX: {f64[:8]}"


_FUSED = ("predict_kernel", "weighted_kernel", "features_kernel")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("factory", _FUSED)
def test_the_fused_rff_kernels_compile_into_registers(sm_90, factory, dtype):
    """The fused random-feature kernels are made per row width (``_cuda_fused``), so
    the discovery above does not see them: each compiles for sm_90, its float32 form
    holds no float64, and its rows stay in registers (no local-memory array: the
    loops over the width ran to a constant and unrolled)."""
    from numba import cuda

    fused = testing.kernel_module("rff", "cuda_fused")
    assert set(fused.SPECIALISATIONS) == set(_FUSED)
    (D, R, *rest), sig = fused.SPECIALISATIONS[factory]
    if dtype == "float64":
        R = fused.rows_per_thread(D, 8)
    kernel = getattr(fused, factory)(D, R, *rest)
    ptx, _ = cuda.compile_ptx(kernel.py_func, sig.format(t=dtype), cc=CC)
    code = [line.strip() for line in ptx.splitlines() if not line.strip().startswith("//")]
    assert ".target sm_90" in ptx
    if dtype == "float32":
        assert not [line for line in code if _F64.search(line)]
        assert not [line for line in code if ".local" in line]
    # every multiply-add of the D-wide products unrolled: at least R * D of them
    assert sum(line.startswith("fma.") for line in code) >= R * D


def test_the_check_sees_float64(sm_90):
    """The planted fault: a float64 literal in a float32 kernel is caught."""
    from numba import cuda

    def promoted(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = x[i] * 0.1  # a float64 literal: the bug the pass exists for

    ptx, _ = cuda.compile_ptx(promoted, "void(float32[::1], float32[::1])", cc=CC)
    assert any(_F64.search(line) for line in ptx.splitlines())


# The kernel's parameters as PTX declares them: `.param .u64 name_param_0`, `.param .u8 ...`.
_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.[bsuf](8|16|32|64)\b")


def _width(value):
    """Bytes cuda.core passes for a packed parameter (a Python int: a pointer-sized integer)."""
    import numpy as np

    return 8 if isinstance(value, (int, float)) else np.asarray(value).dtype.itemsize


@pytest.mark.parametrize("name, kernel, sig", _signatures())
def test_the_fast_launch_packs_the_kernels_parameters(sm_90, name, kernel, sig):
    """kbackends.kernels._cuda_launch.run_kernel launches a compiled kernel through
    cuda.core with the parameters laid out by ``pack_arguments``: their number and
    widths must be the compiled entry's, for every kernel and signature we launch."""
    from numba.cuda.core.sigutils import normalize_signature

    from _device_like import DeviceLike, argument_for

    launch = importlib.import_module("kbackends.kernels._cuda_launch")
    ptx = _ptx(name, kernel, sig)
    entry = ptx[ptx.index(".entry"):]
    declared = [int(bits) // 8 for bits in _PARAM.findall(entry[: entry.index(")")])]
    argtypes, _ = normalize_signature(sig)
    params, key = launch.pack_arguments(tuple(argument_for(t) for t in argtypes), DeviceLike)
    assert key is not None
    assert [_width(p) for p in params] == declared
    for k, t in zip(key, argtypes):  # layouts aside ('A' or 'C': the same parameters), Numba's types
        expected = launch.expected_numba_type(k)
        assert expected == (t.copy(layout="C", readonly=False) if hasattr(t, "layout") else t)
