"""The oracle kit of :mod:`kbackends.testing`: the backends and dtypes to check, the
tolerances, the reference kernels and implementation modules, and the comparison of a
public op on a backend with its oracle."""

from __future__ import annotations

import importlib
import os

import numpy as np

from .. import ops
from .._backend import Backend, available_backends, resolve
from .._registry import get_kernel
from .._xp_utils import to_numpy

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


# Units in the last place a fused multiply-add may move a result on a GPU, relative
# to the largest magnitude compared: NVVM contracts a * b + c into one rounding,
# NumPy rounds twice; a few chained contractions stay within a few ulps.
FMA_ULPS = 8


def assert_same_arithmetic(actual, expected, err_msg=""):
    """Assert a kernel computed the reference's arithmetic: bit for bit where it runs
    as Python (the simulator, a CPU), within :data:`FMA_ULPS` ulps of the largest
    magnitude on a GPU, where the compiler fuses multiply-adds (integers, booleans
    and shapes exactly everywhere)."""
    actual, expected = np.asarray(host(actual)), np.asarray(host(expected))
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, (err_msg, actual.dtype, expected.dtype)
    if simulator_enabled() or actual.dtype.kind not in "fc" or not _on_a_gpu():
        np.testing.assert_array_equal(actual, expected, err_msg=err_msg)
        return
    size = float(np.max(np.abs(expected))) if expected.size else 0.0
    atol = FMA_ULPS * float(np.finfo(actual.dtype).eps) * max(size, float(np.finfo(actual.dtype).tiny))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=atol, err_msg=err_msg)


def _on_a_gpu():
    try:
        import numba.cuda

        return numba.cuda.is_available()
    except ImportError:
        return False


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
