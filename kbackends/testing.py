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
  backend, compare every output.
- :func:`oracle`, :func:`implementation`, :func:`kernel_module`: the reference
  kernels and the implementation modules, for white-box tests (and benchmarks)
  that need them without importing private modules.
- :func:`transfer_guard` / :class:`TransferGuardError`: make every device -> host
  conversion of an ``array_api_strict`` array raise inside a
  :func:`kbackends.sync_free` region, to prove a loop never waits for the device;
  :func:`count_array_ops` counts the array calls such a loop makes (each at least
  one launch on a GPU).

pytest is imported only by :func:`backend_params`, so ``import kbackends.testing``
works without it. The parameters of the CUDA backends carry the ``cuda`` marker:
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

from __future__ import annotations

import importlib
import os
import sys

import numpy as np

from . import ops
from ._backend import Backend, available_backends, resolve
from ._op_count import OpCount, count_array_ops, kernel_entry
from ._registry import get_kernel
from ._xp_utils import to_numpy

__all__ = [
    "prox_sgd_problem", "two_blobs",
    "BACKENDS", "DTYPES", "TOLERANCE", "OpCount", "TransferGuardError", "assert_close", "assert_matches_oracle",
    "backend_params", "count_array_ops", "host", "implementation", "kernel_module", "make_backend", "on", "oracle",
    "oracle_backend", "simulator_enabled", "transfer_guard",
]

BACKENDS = ("cpu", "array_api_strict", "cudasim", "cuda")
"""The built-in backends the kbackends suite checks, in parameter order."""

DTYPES = ("float32", "float64")
"""The float dtypes every op supports."""

TOLERANCE = {"float32": 2e-5, "float64": 1e-11}
"""Absolute tolerance of an implementation against its oracle, per dtype, for
values of order 1: multiply by the magnitude of what is summed (``scale``)."""

SIMULATOR_SWITCH_INTERVAL = 2e-4
"""``sys.setswitchinterval`` for a process that runs kernels under the simulator
(the test suite's conftest, ``gpu-report --backend cudasim``): its block manager
polls the block's Python threads while holding the GIL, so at the default 5 ms a
simulated thread waits up to 5 ms for each turn; 0.2 ms runs the same launches
about 4x faster (measured on the water-fill kernels, 2-core machine)."""


def simulator_enabled() -> bool:
    """Whether this process runs Numba-CUDA on the CPU (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def backend_params(extra=()):
    """pytest parameters (``pytest.param``) of the backends to check, ids = names.

    Parameters
    ----------
    extra : iterable of str, default ()
        Names of further registered backends (e.g. a third-party one), each
        skipped where :func:`kbackends.available_backends` does not list it.

    Returns
    -------
    list of pytest.param
        ``cpu``; ``array_api_strict`` (the pure ``xp`` path on a strict
        namespace); ``cudasim`` (marked ``cuda``, skipped unless the simulator
        is on, which needs its own pytest process); ``cuda`` (marked ``cuda``,
        skipped without a GPU or under the simulator); then ``extra``.
    """
    import pytest

    simulator = simulator_enabled()
    cuda_ok = "cuda" in available_backends() and not simulator
    params = [
        pytest.param("cpu", id="cpu"),
        pytest.param("array_api_strict", id="array_api_strict"),
        pytest.param(
            "cudasim",
            id="cudasim",
            marks=[pytest.mark.cuda, pytest.mark.skipif(not simulator, reason="run with NUMBA_ENABLE_CUDASIM=1")],
        ),
        pytest.param(
            "cuda",
            id="cuda",
            marks=[pytest.mark.cuda, pytest.mark.skipif(not cuda_ok, reason="no CUDA GPU here")],
        ),
    ]
    here = available_backends() if extra else ()
    for name in extra:
        reason = f"backend {name!r} is not available here"
        params.append(pytest.param(name, id=name, marks=pytest.mark.skipif(name not in here, reason=reason)))
    return params


def make_backend(name) -> Backend:
    """Resolve a name of :func:`backend_params` (``"array_api_strict"`` is the
    namespace, resolved to its pure ``xp`` path); a Backend is returned as is."""
    if isinstance(name, Backend):
        return name
    if name == "array_api_strict":
        import array_api_strict

        return resolve(array_api_strict)
    return resolve(name)


def oracle_backend() -> Backend:
    """The backend the oracle runs on: array_api_strict (so the reference uses
    nothing outside the standard), or NumPy where it is not installed; either way
    only ``xp`` kernels."""
    try:
        import array_api_strict
    except ImportError:
        return Backend(name="numpy", xp=np, impls=("xp",))
    return resolve(array_api_strict)


def on(bk, a, dtype_name=None):
    """NumPy array (or array-like) ``a`` as an array of backend ``bk``, cast to
    ``dtype_name`` if given."""
    a = np.asarray(a) if dtype_name is None else np.asarray(a, dtype=dtype_name)
    return bk.asarray(a)


def host(a) -> np.ndarray:
    """Any backend's array as a NumPy array (:func:`kbackends.to_numpy`)."""
    return to_numpy(a)


def assert_close(actual, expected, dtype_name, scale=1.0):
    """Assert ``actual`` matches ``expected`` (same shape, compared in float64)
    within ``TOLERANCE[dtype_name] * scale``, absolute."""
    actual = np.asarray(host(actual), dtype=np.float64)
    expected = np.asarray(host(expected), dtype=np.float64)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE[dtype_name] * scale)


def implementation(op, impl):
    """The kernel registered as ``(op, impl)``, e.g. ``("rff_predict", "numba")``.

    Raises
    ------
    NotImplementedError
        If there is none (the message lists what is registered for ``op``).
    """
    return get_kernel(op, Backend(name=f"{impl}-only", xp=np, impls=(impl,)))


def oracle(op):
    """The pure array-API reference kernel of ``op``: ``fn(*arrays, xp, **static)``.

    Examples
    --------
    >>> import numpy as np
    >>> from kbackends.testing import oracle
    >>> gamma, b = oracle("water_level_biased")(np.array([0.0, 2.0, 1.0, 3.0]), np.array([1, 1, -1, -1]), 2.0, xp=np)
    >>> float(gamma), float(b)
    (1.5, 0.5)
    """
    return implementation(op, "xp")


def kernel_module(family, part):
    """The module ``kbackends.kernels.<family>._<part>``, e.g. ``("waterfill",
    "numba")``, for white-box tests that tune an implementation's thresholds
    (``monkeypatch.setattr(module, "_CHUNK_ELEMENTS", 40)``) or check its pieces
    (``("omega", "core")``: Philox-4x32-10 against known answers); ``family=None``
    names the kernels' shared modules (``(None, "cuda_launch")``: launch geometry).

    Raises
    ------
    ValueError
        If there is no such module.
    """
    name = f"kbackends.kernels._{part}" if family is None else f"kbackends.kernels.{family}._{part}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and not name.startswith(exc.name):
            raise  # the module exists but needs something missing here (e.g. numba-cuda)
        msg = f"`family`/`part` must name a kernel module, got {family!r}/{part!r} (no module {name})"
        raise ValueError(msg) from None


def assert_matches_oracle(op_name, *args, backend, dtype_name=None, scale=1.0, rtol=0.0, **static):
    """Run ``kbackends.ops.<op_name>`` on ``backend`` and on :func:`oracle_backend`;
    assert that every output matches.

    Parameters
    ----------
    op_name : str
        A public op of :mod:`kbackends.ops`, e.g. ``"rff_predict"``.
    *args
        Its positional arguments, as NumPy arrays (or numbers); arrays are moved
        to each backend.
    backend : Backend or str
        The backend under test (a name of :func:`backend_params` or a Backend).
    dtype_name : {"float32", "float64"}, optional
        Picks the tolerance; default: the dtype of the first float array of ``args``.
    scale : float, default 1.0
        Magnitude of what each output sums (e.g. ``abs(coef).sum()``): the
        tolerance is ``TOLERANCE[dtype_name] * scale``.
    rtol : float, default 0.0
        Relative tolerance added to the absolute one.
    **static
        The op's keyword arguments (``form="cossin"``, ``k=3``, ...).

    Returns
    -------
    tuple of numpy.ndarray
        The backend's outputs on the host (one entry for a single output).

    Raises
    ------
    AssertionError
        If an output differs in shape, in value beyond the tolerance (float
        outputs) or at all (integer outputs).
    """
    op = getattr(ops, op_name, None)
    if op_name not in ops.__all__ or op is None:
        msg = f"`op_name` must be one of {tuple(ops.__all__)}, got {op_name!r}"
        raise ValueError(msg)
    bk = make_backend(backend)
    if dtype_name is None:
        floats = [np.asarray(a).dtype.name for a in args if hasattr(a, "shape") and np.asarray(a).dtype.kind == "f"]
        dtype_name = floats[0] if floats else "float64"

    def run(on_bk):
        moved = (on_bk.asarray(a) if hasattr(a, "shape") else a for a in args)
        out = op(*moved, backend=on_bk, **static)
        return tuple(host(o) for o in (out if isinstance(out, tuple) else (out,)))

    got, expected = run(bk), run(oracle_backend())
    atol = TOLERANCE[dtype_name] * scale
    for i, (g, e) in enumerate(zip(got, expected)):
        where = f"{op_name} output {i} on {bk.name!r}"
        assert g.shape == e.shape, f"{where}: shape {g.shape}, oracle {e.shape}"
        if e.dtype.kind in "iub":
            np.testing.assert_array_equal(g, e, err_msg=where)
        else:
            np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, err_msg=where)
    return got


# --- transfer guard ----------------------------------------------------------------------


class TransferGuardError(Exception):
    """A device -> host conversion inside a :func:`kbackends.sync_free` region under
    :func:`transfer_guard`. Not a RuntimeError / TypeError, so that no ``except``
    written for those swallows it."""


# Conversions of an array to a host value (the data must be ready to read them).
_CONVERSIONS = ("__float__", "__int__", "__bool__", "__index__", "__complex__", "__array__", "__buffer__",
                "__dlpack__", "__iter__", "item", "tolist")
# Functions whose output shape depends on the data: the host waits to learn it.
_DATA_SHAPED = ("nonzero", "unique_all", "unique_counts", "unique_inverse", "unique_values")


class TransferLog:
    """What a :func:`transfer_guard` saw.

    Attributes
    ----------
    blocked : list of str
        The conversions that raised (what converted), in order.
    deferred : int
        Reads started with :func:`kbackends.to_host_async` inside a region (allowed).
    regions : int
        :func:`kbackends.sync_free` regions entered (a test that expects a guarded
        loop checks it is not 0).
    uploads : int
        Host -> device copies inside a region made by the code around the kernels
        (``asarray`` of host data: allowed, but each is a copy a GPU loop pays per
        iteration; tests bound it). Copies inside a kernel's array-API reference
        (``kbackends/kernels``) are not counted: on a device its own kernel runs.
    """

    def __init__(self):
        self.blocked = []
        self.deferred = 0
        self.regions = 0
        self.uploads = 0


_GUARD_ACTIVE = []


def _inside_a_kernel():
    """Whether a frame of the caller's stack runs a kernel (see :func:`kernel_entry`)."""
    return kernel_entry(sys._getframe(2)) is not None


class transfer_guard:  # noqa: N801  (used as a function: ``with transfer_guard() as log``)
    """Context manager: raise :class:`TransferGuardError` on every device -> host
    conversion of an ``array_api_strict`` array made inside a
    :func:`kbackends.sync_free` region while it is active.

    Guarded, for arrays of ``array_api_strict`` (the namespace that stands in for a
    device one on the CPU): ``float()``, ``int()``, ``bool()`` (an ``if`` on an
    array), ``operator.index()`` (an array as a slice bound or a range), ``complex()``,
    ``np.asarray`` / ``__array__``, the buffer protocol, ``__dlpack__``, iteration,
    ``.item()`` / ``.tolist()`` (which the namespace lacks anyway), and
    :func:`kbackends.to_numpy` of any non-NumPy array; and what makes the host
    wait for a data-dependent shape: boolean-mask indexing, ``nonzero`` and the
    ``unique_*`` functions. Outside a region everything converts as usual, so
    setup before the loop and the returned model may cross. Host -> device copies
    are never guarded, but counted in ``log.uploads``. :func:`kbackends.to_host_async`
    is counted in ``log.deferred``, not refused.

    The methods are patched on ``array_api_strict``'s array class for the
    duration of the ``with`` block (not thread-safe: one guard at a time). A
    conversion whose error the code under test swallowed still fails the guard
    on exit.

    Yields
    ------
    TransferLog

    Raises
    ------
    TransferGuardError
        At the conversion, naming it (and on exit for a swallowed one).
    RuntimeError
        When a guard is already active.

    Examples
    --------
    >>> import array_api_strict as xp
    >>> import kbackends
    >>> from kbackends.testing import transfer_guard, TransferGuardError
    >>> a = xp.asarray([1.0, 2.0])
    >>> with transfer_guard() as log:
    ...     total = float(xp.sum(a))  # outside a region: converts
    ...     with kbackends.sync_free():
    ...         s = xp.sum(a) * 2.0   # stays a 0-d device array
    >>> total, log.blocked
    (3.0, [])
    >>> with transfer_guard():
    ...     with kbackends.sync_free():
    ...         float(xp.sum(a))
    Traceback (most recent call last):
    ...
    kbackends.testing.TransferGuardError: device -> host transfer inside a sync-free loop: __float__ ...
    """

    def __init__(self):
        self.log = TransferLog()
        self._saved = []

    def _trip(self, what):
        self.log.blocked.append(what)
        msg = (f"device -> host transfer inside a sync-free loop: {what} (kbackends.sync_free region; "
               "keep the value on the device as a 0-d array, or move the read out of the loop)")
        raise TransferGuardError(msg)

    def __enter__(self):
        import array_api_strict

        from . import _sync, _xp_utils
        from ._sync import in_sync_free_region

        if _GUARD_ACTIVE:
            msg = "a transfer_guard is already active"
            raise RuntimeError(msg)
        Array = type(array_api_strict.asarray(0.0))
        guard = self

        def patch(owner, name, wrapper):
            self._saved.append((owner, name, owner.__dict__.get(name, _MISSING)))
            setattr(owner, name, wrapper)

        for name in _CONVERSIONS:
            original = getattr(Array, name, None)

            def wrapper(x, *args, _name=name, _original=original, **kwargs):
                if in_sync_free_region():
                    guard._trip(f"{_name} of an array of shape {tuple(x.shape)} and dtype {x.dtype}")
                if _original is None:
                    msg = f"{type(x).__name__!r} object has no attribute {_name!r}"
                    raise AttributeError(msg)
                return _original(x, *args, **kwargs)

            patch(Array, name, wrapper)

        getitem = Array.__getitem__

        def guarded_getitem(x, key):
            if in_sync_free_region():
                keys = key if isinstance(key, tuple) else (key,)
                if any(isinstance(k, Array) and k.dtype == array_api_strict.bool for k in keys):
                    guard._trip("boolean-mask indexing (its shape is data-dependent)")
            return getitem(x, key)

        patch(Array, "__getitem__", guarded_getitem)
        for name in _DATA_SHAPED:
            original = getattr(array_api_strict, name)

            def shaped(*args, _name=name, _original=original, **kwargs):
                if in_sync_free_region():
                    guard._trip(f"array_api_strict.{_name} (its shape is data-dependent)")
                return _original(*args, **kwargs)

            patch(array_api_strict, name, shaped)

        original_asarray = array_api_strict.asarray

        def counted_asarray(obj, *args, **kwargs):
            if in_sync_free_region() and not isinstance(obj, Array) and not _inside_a_kernel():
                guard.log.uploads += 1
            return original_asarray(obj, *args, **kwargs)

        patch(array_api_strict, "asarray", counted_asarray)

        def to_numpy_hook(x, what):
            if in_sync_free_region():
                guard._trip(f"{what} of an array of shape {tuple(getattr(x, 'shape', ()))}")

        def deferred_hook(x):
            if in_sync_free_region():
                guard.log.deferred += 1

        def enter_hook():
            guard.log.regions += 1

        self._saved.append((_sync, "_on_enter", _sync._on_enter))
        _sync._on_enter = enter_hook
        self._saved.append((_xp_utils, "_transfer_hook", _xp_utils._transfer_hook))
        self._saved.append((_xp_utils, "_deferred_hook", _xp_utils._deferred_hook))
        _xp_utils._transfer_hook = to_numpy_hook
        _xp_utils._deferred_hook = deferred_hook
        _GUARD_ACTIVE.append(self)
        return self.log

    def __exit__(self, exc_type, exc, tb):
        for owner, name, value in reversed(self._saved):
            if value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
        self._saved.clear()
        _GUARD_ACTIVE.clear()
        if exc_type is None and self.log.blocked:
            msg = f"device -> host transfers inside a sync-free loop were swallowed: {self.log.blocked}"
            raise TransferGuardError(msg)
        return False


_MISSING = object()


def two_blobs(n=120, d=4, seed=0):
    """A small, well separated binary problem on the host: ``X`` (n, d) float64 around
    -1.5 / +1.5 in every feature and labels ``y`` in {0, 1}."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.standard_normal((n, d)) + 1.5 * (2 * y[:, None] - 1)
    return X, y


def prox_sgd_problem(n=40, d=6, m=5, k=3, seed=0):
    """A small S3GD problem for the ``prox_sgd_run`` kernel tests: rows ``X`` (n, d),
    classes ``cls`` (0 / 1), per-row weights ``cw`` (mean 1), anchors ``Z`` (m, d), the
    class-split anchor products ``G`` (2, m, d + 1) of Eq. (22) and the graph ``idx``,
    ``gw`` (k nearest anchors per row), all NumPy on the host."""
    from .ops import anchor_accumulate, anchor_graph

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    cls = (rng.random(n) < 0.4).astype(np.int64)
    Z = X[rng.choice(n, m, replace=False)]
    idx, gw = anchor_graph(X, Z, k)
    cw = np.where(cls == 1, 1.3, 0.8)
    cw = cw * n / cw.sum()
    Xa = np.hstack([X, np.ones((n, 1))])
    G = anchor_accumulate(idx + cls[:, None] * m, gw, Xa * (cw / n)[:, None], 2 * m).reshape(2, m, d + 1)
    return X, cls, cw, Z, G, idx, gw
