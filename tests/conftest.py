"""Shared fixtures: the backends every kernel is checked on, and the dtypes.

Both come from :mod:`kbackends.testing` (public, so a third-party backend's suite
builds the same fixtures):

- ``backend``: ``cpu`` (NumPy + Numba kernels), ``array_api_strict`` (the pure
  ``xp`` reference path on a strict namespace), ``cudasim`` (the Numba-CUDA
  kernels on the CPU; only in a run started with ``NUMBA_ENABLE_CUDASIM=1``, a
  separate pytest call, ``-m cuda``) and ``cuda`` (CuPy + Numba-CUDA on a real
  GPU, when one is present), each a resolved :class:`kbackends.Backend`;
- ``dtype_name``: ``"float32"`` and ``"float64"``, whose tolerances against the
  oracles are ``kbackends.testing.TOLERANCE``.

Tests of the kbackends package live in tests/kbackends, those of the algorithms,
their estimators, the CLI and the bench in tests/algorithms (with their own
conftest.py for the data they share).
"""

import os

import pytest

import kbackends
from kbackends import testing

if testing.simulator_enabled():
    # The switch interval (the simulator's threads take turns 4x faster) and a lock
    # around the simulator's shared-array lookup (two threads of a block could get
    # two arrays): kbackends.testing.prepare_simulator.
    testing.prepare_simulator()


@pytest.fixture(params=testing.backend_params())
def backend(request):
    """A resolved :class:`kbackends.Backend`."""
    return testing.make_backend(request.param)


@pytest.fixture(params=testing.DTYPES)
def dtype_name(request):
    return request.param


@pytest.fixture
def gpu():
    """The cuda backend: the simulator when the run enabled it, else a real GPU (skip otherwise)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return kbackends.resolve("cudasim")
    if "cuda" not in kbackends.available_backends():
        pytest.skip("no CUDA GPU here and the simulator is off")
    return kbackends.resolve("cuda")
