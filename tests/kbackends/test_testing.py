"""kbackends.testing, the public oracle-test kit: it passes on every backend for
every op family, fails on a wrong implementation, and needs no pytest to import."""

import subprocess
import sys

import numpy as np
import pytest

import kbackends
from kbackends import ops, testing
from kbackends.random import omega_block


def _cases(dtype_name):
    """(op, args, static, scale) for one call of each op of kbackends.ops but the
    RFF ones (test_rff_ops.py checks those through assert_matches_oracle)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3)).astype(dtype_name)
    anchors = X[::5].copy()
    idx = rng.integers(0, 8, (40, 2))
    w = rng.random((40, 2)).astype(dtype_name)
    c = rng.standard_normal(30).astype(dtype_name)
    y = np.where(np.arange(30) % 3 == 0, 1, -1)
    return [
        ("water_level", (c, 2.0), {}, 10.0),
        ("water_level_biased", (c, y, 2.0), {}, 10.0),
        ("kernel_response_update", (X[:30], np.array([1, 4, 7]), np.ones(3, dtype_name), y, c), {"gamma": 0.5}, 10.0),
        ("anchor_graph", (X, anchors, 3), {}, 10.0),
        ("anchor_propagate", (idx, w, rng.standard_normal(8).astype(dtype_name)), {}, 10.0),
        ("anchor_accumulate", (idx, w, X, 8), {}, 100.0),
        ("kmeans", (X, 4), {"n_iter": 3, "random_state": 0}, 100.0),
        ("snap_to_samples", (anchors + 0.01, X), {}, 1.0),
    ]


@pytest.mark.parametrize("case", range(8), ids=[c[0] for c in _cases("float64")])
def test_every_op_family_matches_its_oracle(backend, dtype_name, case):
    op, args, static, scale = _cases(dtype_name)[case]
    got = testing.assert_matches_oracle(op, *args, backend=backend, scale=scale, **static)
    assert isinstance(got, tuple) and all(isinstance(g, np.ndarray) for g in got)


def test_a_wrong_implementation_fails():
    """A third-party impl that is off by 1e-3 is caught, with the op and backend named."""
    name = "testing_off_by_a_little"
    if name not in kbackends.registered_backends():
        kbackends.register_backend(name, namespace="numpy", impls=("off", "xp"))
        kbackends.register_kernel(
            "rff_features", "off", lambda X, omega, phase, *, xp, form: xp.cos(X @ omega.T + phase) + 1e-3
        )
    X = np.random.default_rng(1).standard_normal((5, 2))
    omega, phase = omega_block(0, 0, 4, 2)
    with pytest.raises(AssertionError, match=f"rff_features output 0 on '{name}'"):
        testing.assert_matches_oracle("rff_features", X, omega, phase, backend=name)
    testing.assert_matches_oracle("rff_predict", X, omega, phase, np.ones(4), backend=name, scale=4.0)  # xp: fine


def test_integer_outputs_must_match_exactly():
    """anchor_graph's indices are compared exactly: a backend whose nearest-anchor
    kernel lists the two nearest in the wrong order fails on output 0."""
    name = "testing_swapped_neighbours"
    if name not in kbackends.registered_backends():
        reference = testing.oracle("anchor_knn")

        def swapped(X, anchors, *, xp, k):
            idx, d = reference(X, anchors, xp=xp, k=k)
            return xp.flip(idx, axis=1), xp.flip(d, axis=1)

        kbackends.register_backend(name, namespace="numpy", impls=("swapped", "xp"))
        kbackends.register_kernel("anchor_knn", "swapped", swapped)
    X = np.random.default_rng(2).standard_normal((12, 2))
    with pytest.raises(AssertionError, match=f"anchor_graph output 0 on '{name}'"):
        testing.assert_matches_oracle("anchor_graph", X, X[:4] + 0.1, 2, backend=name)


def test_bad_names_are_refused():
    with pytest.raises(ValueError, match="`op_name` must be one of"):
        testing.assert_matches_oracle("no_such_op", np.ones(2), backend="cpu")
    with pytest.raises(ValueError, match="`family`/`part` must name a kernel module"):
        testing.kernel_module("rff", "nope")
    with pytest.raises(NotImplementedError, match="op 'no_such_op'"):
        testing.oracle("no_such_op")


def test_oracles_are_the_xp_kernels():
    assert testing.oracle("rff_predict") is testing.kernel_module("rff", "xp").rff_predict
    assert testing.implementation("rff_predict", "numba") is kbackends.get_kernel("rff_predict", "cpu")
    level = testing.oracle("water_level")(np.array([0.0, 1.0, 3.0]), np.array([2.0]), np.array([0, 3]), xp=np)
    assert float(level[0]) == 1.5


def test_backend_params_ids_marks_and_extras():
    params = testing.backend_params(extra=("no_such_backend",))
    assert [p.id for p in params] == [*testing.BACKENDS, "no_such_backend"]
    marked = {p.id for p in params if any(m.name == "cuda" for m in p.marks)}
    assert marked == {"cudasim", "cuda"}
    skip = [m for m in params[-1].marks if m.name == "skipif"]
    assert skip and skip[0].args == (True,)
    assert testing.make_backend("array_api_strict").impls == ("xp",)
    assert testing.oracle_backend().impls == ("xp",)


def test_importing_kbackends_needs_no_pytest():
    code = (
        "import sys; sys.modules['pytest'] = None\n"
        "import kbackends, kbackends.ops, kbackends.testing\n"
        "assert kbackends.testing.TOLERANCE['float32'] > 0\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_public_ops_package_keeps_its_names():
    for name in ops.__all__:
        assert callable(getattr(ops, name)) or name in ("FORMS", "RESPONSE_KERNELS", "SPARSE_BACKENDS")
    assert ops.FORMS == ("cos", "cossin") and ops.RESPONSE_KERNELS == ("rbf", "linear")
    assert ops.SPARSE_BACKENDS == ("cpu", "cudasim", "cuda")


@pytest.mark.cuda
def test_a_kernel_with_shared_arrays_repeats_under_any_thread_switching():
    """The same values give the same water level call after call, with the interpreter
    switching threads every 10 us. Under the simulator this holds only with
    ``prepare_simulator``'s lock (the suite's conftest installs it): without it two
    simulated threads of a block could get two "shared" arrays, and a third of the
    calls moved. On a GPU: the kernels repeat bit for bit (no float atomics decide)."""
    from kbackends.testing import simulator_enabled

    bk = kbackends.resolve("cudasim" if simulator_enabled() else "cuda") if (
        simulator_enabled() or "cuda" in kbackends.available_backends()) else pytest.skip("no simulator or GPU")
    c = bk.asarray(np.random.default_rng(0).standard_normal(30).astype("float32"))
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        levels = {float(np.asarray(kbackends.to_numpy(ops.water_level(c, 2.0, backend=bk))).ravel()[0])
                  for _ in range(20)}
    finally:
        sys.setswitchinterval(switch)
    assert len(levels) == 1, levels
