"""Oracle tests for any backend, in the style of :mod:`cupy.testing`.

Every op of :mod:`kbackends.ops` has a pure array-API reference kernel (impl
``"xp"``), the oracle. This module holds what the kbackends test suite uses to
check every other implementation against it, public so that a third-party
backend runs the same checks:

- :func:`backend_params` / :data:`BACKENDS`: the pytest parameters of the
  built-in backends (``cpu``, ``array_api_strict``, ``cudasim``, ``cuda``) with
  their skip marks, plus any backends you name; :func:`make_backend` resolves one.
- :data:`DTYPES` and :data:`TOLERANCE`: the float dtypes and the absolute
  tolerance of each against the oracle, scaled by the size of what is summed.
- :func:`assert_matches_oracle`: run a public op on a backend and on the oracle
  backend, compare every output; :func:`assert_same_arithmetic`: a kernel that does
  the reference's arithmetic, bit for bit but for a GPU's fused multiply-adds.
- :func:`oracle`, :func:`implementation`, :func:`kernel_module`: the reference
  kernels and the implementation modules, for white-box tests (and benchmarks)
  that need them without importing private modules.
- :func:`transfer_guard` / :class:`TransferGuardError`: make every device -> host
  conversion of an ``array_api_strict`` array raise inside a
  :func:`kbackends.sync_free` region, to prove a loop never waits for the device;
  :func:`count_array_ops` counts the array calls such a loop makes (each at least
  one launch on a GPU).

The kit is split by job: ``_oracle`` (backends, dtypes, tolerances, oracles),
``_guard`` (the transfer guard), ``_fixtures`` (small host problems); the op counter
is ``kbackends._op_count``. pytest is imported only by :func:`backend_params`, so
``import kbackends.testing`` works without it. The parameters of the CUDA backends carry the ``cuda`` marker:
a suite run with ``--strict-markers`` registers it (``markers = ["cuda: ..."]``).

Examples
--------
A ``conftest.py`` for a backend registered as ``"mine"``::

    import pytest
    from kbackends import testing

    @pytest.fixture(params=testing.backend_params(extra=("mine",)))
    def backend(request):
        return testing.make_backend(request.param)

    @pytest.fixture(params=testing.DTYPES)
    def dtype_name(request):
        return request.param

and a test::

    import numpy as np
    from kbackends import testing
    from kbackends.random import omega_block

    def test_rff_predict(backend, dtype_name):
        rng = np.random.default_rng(0)
        X = rng.standard_normal((50, 3)).astype(dtype_name)
        omega, phase = omega_block(0, 0, 16, 3, dtype=dtype_name)
        coef = rng.standard_normal(16).astype(dtype_name)
        testing.assert_matches_oracle("rff_predict", X, omega, phase, coef,
                                      backend=backend, scale=np.abs(coef).sum())
"""

from .._op_count import OpCount, count_array_ops
from ._fixtures import prox_sgd_problem, two_blobs
from ._guard import TransferGuardError, TransferLog, transfer_guard
from ._oracle import (
    BACKENDS,
    DTYPES,
    SIMULATOR_SWITCH_INTERVAL,
    FMA_ULPS,
    TOLERANCE,
    assert_close,
    assert_matches_oracle,
    assert_same_arithmetic,
    backend_params,
    host,
    implementation,
    kernel_module,
    make_backend,
    on,
    oracle,
    oracle_backend,
    simulator_enabled,
)
from ._simulator import prepare_simulator

__all__ = [
    "prox_sgd_problem", "two_blobs",
    "BACKENDS", "DTYPES", "FMA_ULPS", "SIMULATOR_SWITCH_INTERVAL", "TOLERANCE", "OpCount", "TransferGuardError", "TransferLog",
    "assert_close", "assert_matches_oracle", "assert_same_arithmetic",
    "backend_params", "count_array_ops", "host", "implementation", "kernel_module", "make_backend", "on", "oracle",
    "oracle_backend", "prepare_simulator", "simulator_enabled", "transfer_guard",
]
