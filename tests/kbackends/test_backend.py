"""The dispatcher: resolving backends, moving arrays, the kernel registry."""

import array_api_strict
import numpy as np
import pytest

import kbackends
from kbackends import BackendUnavailableError, get_kernel, register_backend, register_kernel, resolve


def test_auto_follows_numpy_inputs():
    bk = resolve("auto", np.zeros(3), None, np.ones((2, 2)))
    assert bk.name == "cpu"
    assert bk.impls == ("numba", "xp")


def test_auto_without_arrays_is_cpu():
    assert resolve().name == "cpu"


def test_auto_follows_a_strict_namespace_to_the_xp_path():
    bk = resolve("auto", array_api_strict.asarray([1.0, 2.0]))
    assert bk.name == "array_api_strict"
    assert bk.xp is array_api_strict
    assert bk.impls == ("xp",)


def test_namespace_module_selects_it():
    assert resolve(array_api_strict).name == "array_api_strict"
    assert resolve(np).name == "cpu"


def test_mixed_namespaces_raise_a_clear_error():
    with pytest.raises(ValueError, match="Input arrays use different devices"):
        resolve("auto", np.zeros(2), array_api_strict.asarray([1.0]))


def test_mixed_devices_raise_a_clear_error():
    a = array_api_strict.asarray([1.0])
    b = array_api_strict.asarray([1.0], device=array_api_strict.Device("device1"))
    with pytest.raises(ValueError, match="different devices"):
        resolve("auto", a, b)


def test_unknown_backend_names_the_choices():
    with pytest.raises(ValueError, match="`backend` must be 'auto' or one of"):
        resolve("tpu")


def test_cuda_unavailable_says_why():
    if "cuda" in kbackends.available_backends():
        pytest.skip("a GPU is present")
    with pytest.raises(BackendUnavailableError, match="backend 'cuda' is not available: .+"):
        resolve("cuda")
    assert "cuda" in kbackends.registered_backends()


def test_explicit_backend_moves_inputs_once():
    bk = resolve(array_api_strict)
    x = bk.asarray(np.arange(3.0))
    assert array_api_strict.isdtype(x.dtype, "real floating")
    assert bk.asarray(x) is x  # already there: no copy
    back = resolve("cpu").asarray(x)
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, [0.0, 1.0, 2.0])


def test_asarray_casts_when_asked():
    bk = resolve("cpu")
    assert bk.asarray([1, 2], dtype=bk.xp.float32).dtype == np.float32


def test_register_backend_twice_raises():
    with pytest.raises(ValueError, match="already registered"):
        register_backend("cpu", namespace="numpy")


def test_register_kernel_twice_raises():
    with pytest.raises(ValueError, match="already has a 'xp' implementation"):
        register_kernel("rff_predict", "xp", "somewhere:else")


def test_missing_op_names_op_backend_and_what_exists():
    with pytest.raises(NotImplementedError, match="op 'no_such_op' has no implementation for backend 'cpu'"):
        get_kernel("no_such_op", "cpu")


def test_kernels_are_picked_by_backend_preference():
    from kbackends.testing import kernel_module

    _numba, _xp = kernel_module("rff", "numba"), kernel_module("rff", "xp")
    assert get_kernel("rff_predict", "cpu") is _numba.rff_predict
    assert get_kernel("rff_predict", resolve(array_api_strict)) is _xp.rff_predict


def test_a_third_party_backend_plugs_in_without_changing_ops():
    """A backend registered from outside, with its own impl for one op and the
    xp reference for the rest, runs through the public ops."""
    from kbackends import ops
    from kbackends.random import omega_block

    calls = []

    def my_features(X, omega, phase, *, xp, form):
        calls.append(form)
        return xp.cos(X @ omega.T + phase)

    name = "strict_plugin"
    if name not in kbackends.registered_backends():
        register_backend(name, namespace=lambda: array_api_strict, impls=("plugin", "xp"))
        register_kernel("rff_features", "plugin", my_features)
    bk = resolve(name)
    X = bk.asarray(np.ones((2, 3)))
    omega, phase = omega_block(0, 0, 4, 3, backend=bk)
    F = ops.rff_features(X, omega, phase, backend=bk)
    assert calls == ["cos"]
    assert F.shape == (2, 4)
    p = ops.rff_predict(X, omega, phase, bk.asarray(np.ones(4)), backend=bk)  # falls back to xp
    np.testing.assert_allclose(np.asarray(p), np.asarray(F).sum(axis=1))


def test_is_array_knows_arrays_by_their_namespace_not_by_a_method():
    """CuPy 14's ndarray has no ``__array_namespace__`` (seen on the H100 host): arrays
    are told by array_api_compat's namespace checks. Lists, pandas, Python scalars and
    lazy dask arrays are not arrays here."""
    import array_api_strict
    import dask.array as da
    import pandas as pd

    from kbackends import array_namespace, is_array

    assert is_array(np.zeros(3)) and is_array(array_api_strict.asarray([1.0]))
    for other in ([1.0, 2.0], pd.DataFrame({"a": [1.0]}), pd.Series([1.0]), 1.5, 3, True, da.zeros(4, chunks=2)):
        assert not is_array(other), type(other)
    assert array_namespace([1.0]).__name__.endswith("numpy")
    assert array_namespace(array_api_strict.asarray([1.0])) is array_api_strict


def test_kbackends_alone_imports_and_registers_nothing_above_it():
    """The floor below knows nothing of the algorithms: importing kbackends (and its ops)
    imports no module of ``algorithms``, and every kernel it registers is its own; the
    algorithms' own families register when their packages are imported."""
    import subprocess
    import sys

    code = (
        "import sys, kbackends, kbackends.ops, kbackends.kernel_tools\n"
        "print(sorted(m for m in sys.modules if m == 'algorithms' or m.startswith('algorithms.')))\n"
        "ops = {op for op, _ in kbackends.registered_kernels()}\n"
        "print(sorted(ops & {'su_derivatives', 'sbp_draw_step', 'sbp_average', 'sbp_run', 'prox_sgd_run'}))\n"
        "import algorithms\n"
        "print(sorted({op for op, _ in kbackends.registered_kernels()} - ops))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "[]"]
    families = ["prox_sgd_run", "sbp_average", "sbp_biased_level", "sbp_biased_levels", "sbp_draw_step", "sbp_levels",
                "sbp_levels_follow", "sbp_replay", "sbp_run", "sbp_window_run", "su_derivatives"]
    assert out[2] == str(families)  # the algorithms' kernels, registered by their packages
