"""Shared fixtures: the backends every kernel is checked on, dtypes and tolerances.

Backends:
- ``cpu``: NumPy + Numba kernels;
- ``array_api_strict``: the pure ``xp`` reference path on a strict namespace;
- ``cudasim``: the Numba-CUDA kernels on the CPU; only when the run was started
  with ``NUMBA_ENABLE_CUDASIM=1`` (a separate pytest call, ``-m cuda``);
- ``cuda``: CuPy + Numba-CUDA on a real GPU, when one is present.
"""

import os

import numpy as np
import pytest

import kbackends
from kbackends import to_numpy

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"

# Absolute tolerances, per dtype, for a kernel against its xp oracle, scaled by the
# magnitude of what is summed (see ``close``).
TOLERANCE = {"float32": 2e-5, "float64": 1e-11}


def _backend_params():
    cuda_ok = "cuda" in kbackends.available_backends() and not SIMULATOR
    return [
        pytest.param("cpu", id="cpu"),
        pytest.param("array_api_strict", id="array_api_strict"),
        pytest.param(
            "cudasim",
            id="cudasim",
            marks=[
                pytest.mark.cuda,
                pytest.mark.skipif(not SIMULATOR, reason="run with NUMBA_ENABLE_CUDASIM=1"),
            ],
        ),
        pytest.param(
            "cuda",
            id="cuda",
            marks=[pytest.mark.cuda, pytest.mark.skipif(not cuda_ok, reason="no CUDA GPU here")],
        ),
    ]


def make_backend(name):
    if name == "array_api_strict":
        import array_api_strict

        return kbackends.resolve(array_api_strict)
    return kbackends.resolve(name)


@pytest.fixture(params=_backend_params())
def backend(request):
    """A resolved :class:`kbackends.Backend`."""
    return make_backend(request.param)


@pytest.fixture(params=["float32", "float64"])
def dtype_name(request):
    return request.param


def on(bk, a, dtype_name=None):
    """NumPy array ``a`` as an array of backend ``bk`` (optionally cast)."""
    a = np.asarray(a) if dtype_name is None else np.asarray(a, dtype=dtype_name)
    return bk.asarray(a)


def host(a):
    return to_numpy(a)


def close(actual, expected, dtype_name, scale=1.0):
    """Assert ``actual`` matches ``expected`` within the dtype's tolerance times ``scale``."""
    actual = np.asarray(host(actual), dtype=np.float64)
    expected = np.asarray(host(expected), dtype=np.float64)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE[dtype_name] * scale)

