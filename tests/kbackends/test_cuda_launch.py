"""Launch geometry against the hardware limits (pure functions: no GPU, no simulator).

The simulator has no grid limits, so only these checks can see a launch that a
GPU would reject: the old rff_features grid put rows on y in blocks of 16 and
failed from 65,535 x 16 + 1 rows.
"""

import pytest

from kbackends.testing import kernel_module

launch = kernel_module(None, "cuda_launch")

ROWS = [0, 1, 65_535 * 16 + 1, 10**8]


def _within_limits(grid, block):
    grid = grid if isinstance(grid, tuple) else (grid,)
    block = block if isinstance(block, tuple) else (block,)
    threads = 1
    for b in block:
        threads *= b
    assert 1 <= threads <= launch.MAX_THREADS_PER_BLOCK
    assert 1 <= grid[0] <= launch.MAX_GRID_X
    assert all(1 <= g <= launch.MAX_GRID_YZ for g in grid[1:])


def test_the_limit_check_refuses_what_a_gpu_would():
    """The old rff_features launch (rows on y in blocks of 16) past 65,535 x 16 rows,
    an empty grid and an over-full block are each caught."""
    with pytest.raises(AssertionError):
        _within_limits((1, (65_535 * 16 + 1 + 15) // 16), (16, 16))
    with pytest.raises(AssertionError):
        _within_limits(0, 128)
    with pytest.raises(AssertionError):
        _within_limits(1, launch.MAX_THREADS_PER_BLOCK + 1)


@pytest.mark.parametrize("n", ROWS)
@pytest.mark.parametrize("threads", [1, 32, 128, 1024])
def test_grid_1d_covers_every_row_within_limits(n, threads):
    blocks, t = launch.grid_1d(n, threads)
    _within_limits(blocks, t)
    assert t == threads
    assert blocks * t >= n
    assert (blocks - 1) * t < max(n, 1)  # no block beyond what covers n


@pytest.mark.parametrize("n_rows", ROWS)
@pytest.mark.parametrize("n_cols", [0, 1, 33, 4096, 8192])
def test_grid_2d_covers_every_element_within_limits(n_rows, n_cols):
    (gx, gy), (bx, by) = launch.grid_2d(n_rows, n_cols)
    _within_limits((gx, gy), (bx, by))
    assert gx * bx >= n_cols
    # The kernels stride over rows by gy * by: every row is reached in row_passes steps.
    passes = launch.row_passes(n_rows, gy, by)
    assert passes * gy * by >= n_rows
    assert (passes - 1) * gy * by < n_rows or n_rows == 0


def test_the_old_rows_on_y_geometry_fails_where_grid_2d_does_not():
    n = 65_535 * 16 + 1
    assert launch.blocks_for(n, 16) > launch.MAX_GRID_YZ  # what the old rff_features launched
    (_, gy), _ = launch.grid_2d(n, 64, block=(16, 16))
    assert gy == launch.MAX_GRID_YZ and launch.row_passes(n, gy, 16) == 2


def test_row_stride_visits_each_row_once():
    """Simulate the kernels' loop ``for i in range(y, n, gy * by)`` on a capped grid."""
    n, block = 70_000, (1, 1)
    (_, gy), (_, by) = launch.grid_2d(n, 1, block=block)
    seen = [i for y in range(gy * by) for i in range(y, n, gy * by)]
    assert sorted(seen) == list(range(n))


def test_grid_1d_beyond_the_x_limit_is_refused():
    with pytest.raises(ValueError, match="gridDim.x"):
        launch.grid_1d(launch.MAX_GRID_X * 128 + 1, 128)


@pytest.mark.parametrize("block", [(64, 32), (0, 8), (2048,)])
def test_bad_blocks_are_refused(block):
    with pytest.raises(ValueError, match="`block`"):
        if len(block) == 1:
            launch.grid_1d(10, block[0])
        else:
            launch.grid_2d(10, 10, block=block)


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_bad_counts_are_refused(bad):
    with pytest.raises(ValueError, match="`n`"):
        launch.grid_1d(bad)


@pytest.mark.parametrize("n_rows, per_row, budget, expected", [
    (0, 16, 1024, 1), (1, 16, 1024, 1), (100, 16, 1024, 64), (10**8, 4 * 4096, 1 << 28, 16_384),
    (10, 10**9, 1024, 1),  # one row over budget still makes progress
    (10, 0, 1024, 10),
])
def test_chunk_rows_fits_the_budget(n_rows, per_row, budget, expected):
    rows = launch.chunk_rows(n_rows, per_row, budget)
    assert rows == expected
    assert rows == 1 or rows * per_row <= budget


# The launch path (kbackends.kernels._cuda_launch.run_kernel). Its packing is
# checked here against Numba's typing, and in the PTX pass against the compiled
# kernels' parameter lists (tests/kbackends/test_ptx.py); a GPU run compares its
# launches with Numba's bit for bit (tests/kbackends/test_cuda_ops.py).

import numpy as np  # noqa: E402

from _device_like import DeviceLike  # noqa: E402


def test_an_array_packs_as_numbas_calling_convention():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    params, key = launch.pack_arguments((DeviceLike(a),), DeviceLike)
    assert key == (("f", 2),)
    # meminfo, parent (null), size, itemsize, data, shape, strides in bytes
    assert params == [0, 0, 12, 4, a.ctypes.data, 3, 4, 16, 4]


def test_scalars_pack_in_the_type_numba_gives_them():
    params, key = launch.pack_arguments((3, 2.5, True, np.float32(1.5), np.uint64(7)), DeviceLike)
    assert key == (int, float, bool, np.float32, np.uint64)
    assert [type(p) for p in params] == [np.int64, float, np.bool_, np.float32, np.uint64]
    assert params == [3, 2.5, True, 1.5, 7]


@pytest.mark.parametrize("args", [
    (DeviceLike(np.zeros((4, 6), np.float32)[:, ::2]),),  # strided: Numba types it 'A'
    (1 << 63,),  # no int64
    ("text",),
    ((1, "text"),),
    (np.zeros(3),),  # a host array among device ones
])
def test_what_the_packing_does_not_know_goes_to_numba(args):
    assert launch.pack_arguments(args, DeviceLike) == (None, None)


@pytest.mark.parametrize("value", [
    np.zeros((5,), np.float32), np.zeros((2, 3), np.float64), np.zeros((2, 2, 2), np.int64), np.zeros((4,), np.uint32),
    np.zeros((3,), np.int32), np.zeros((), np.float32), 7, 0.5, False, np.float32(1), np.float64(1), np.int64(1),
    np.uint64(1), np.int32(1), np.bool_(True), (np.uint64(1), np.uint64(2)), (1, 2.0, np.float32(3)),
])
def test_the_expected_type_is_numbas(value):
    """The key -> Numba type map the fast path checks a compiled kernel against
    is the one Numba's own typing gives (C-contiguous arrays, scalars)."""
    from numba.cuda.typing.typeof import Purpose, typeof

    arg = DeviceLike(value) if isinstance(value, np.ndarray) else value
    if isinstance(value, tuple):
        assert launch.pack_arguments((arg,), DeviceLike)[0] == list(value)  # the members, flattened
    _, (key,) = launch.pack_arguments((arg,), DeviceLike)
    assert launch.expected_numba_type(key) == typeof(value, Purpose.argument)


class _Kernel:
    """Records Numba-style launches (``kernel[grid, block, stream](*args)``)."""

    def __init__(self):
        self.calls = []

    def __getitem__(self, config):
        return lambda *args: self.calls.append((config, args))


@pytest.fixture
def paths(monkeypatch):
    """The fast path with its compile and cuda.core launch recorded (no GPU here)."""
    seen = {"compiled": [], "core": [], "numba": []}
    monkeypatch.setattr(launch, "_array_type", lambda: DeviceLike)
    monkeypatch.setattr(launch, "_compiled", {})
    monkeypatch.setattr(launch, "launch_counts", {"fast": 0, "numba": 0})
    monkeypatch.setattr(launch, "FAST_LAUNCH", True)
    monkeypatch.setattr(launch, "_core", ("LaunchConfig", "Stream", "launch"))  # cuda.core found

    def compile_(kernel, device, key, args):
        seen["compiled"].append(key)
        launch._compiled[(kernel, device, key)] = "handle"
        return "handle"

    monkeypatch.setattr(launch, "_compile", compile_)
    monkeypatch.setattr(launch, "_launch_core", lambda *a: seen["core"].append(a))
    monkeypatch.setattr(launch, "_launch_numba", lambda *a: seen["numba"].append(a))
    return seen


def test_a_signature_compiles_once_then_launches_through_cuda_core(paths):
    kernel, stream = _Kernel(), launch.DeviceStream(0, 1234)
    x = DeviceLike(np.zeros(8, np.float32))
    for n in (1, 2, 3):
        launch.run_kernel(kernel, 4, 128, stream, x, n)
    assert paths["compiled"] == [(("f", 1), int)]
    assert [(h, g, b, s) for h, g, b, s, _ in paths["core"]] == [("handle", 4, 128, 1234)] * 3
    assert [p[-1] for *_, p in paths["core"]] == [1, 2, 3]
    assert launch.launch_counts == {"fast": 3, "numba": 0} and not paths["numba"] and not kernel.calls
    launch.run_kernel(kernel, 4, 128, stream, DeviceLike(np.zeros(8, np.float64)), 1)  # another signature
    assert paths["compiled"][-1] == (("d", 1), int)


def test_numba_launches_what_the_fast_path_cannot(paths, monkeypatch):
    kernel, stream = _Kernel(), launch.DeviceStream(0, 1234)
    strided = DeviceLike(np.zeros((4, 6), np.float32)[:, ::2])
    launch.run_kernel(kernel, 1, 32, stream, strided)
    monkeypatch.setattr(launch, "FAST_LAUNCH", False)  # KBACKENDS_FAST_LAUNCH=0
    launch.run_kernel(kernel, 1, 32, stream, DeviceLike(np.zeros(3, np.float32)))
    assert len(paths["numba"]) == 2 and not paths["core"] and not paths["compiled"]
    assert launch.launch_counts == {"fast": 0, "numba": 2}


def test_a_signature_numba_types_otherwise_stays_on_numba(paths, monkeypatch):
    """_compile records None where Numba's types differ from the packing's: Numba
    launches that signature from then on, without compiling again."""
    def compile_none(kernel, device, key, args):
        paths["compiled"].append(key)
        launch._compiled[(kernel, device, key)] = None
        return None

    monkeypatch.setattr(launch, "_compile", compile_none)
    kernel, stream = _Kernel(), launch.DeviceStream(0, 1234)
    for _ in range(2):
        launch.run_kernel(kernel, 1, 32, stream, DeviceLike(np.zeros(3, np.float32)))
    assert len(paths["compiled"]) == 1 and len(paths["numba"]) == 2 and not paths["core"]


def test_the_simulator_launches_through_numba_on_stream_0(paths):
    kernel = _Kernel()
    launch.run_kernel(kernel, 2, 64, 0, np.zeros(3))
    assert kernel.calls[0][0] == (2, 64, 0) and not paths["core"] and not paths["numba"]
    assert launch.launch_counts == {"fast": 0, "numba": 1}


def test_public_launch_counts_and_settings(paths):
    """kbackends.launch_counts() counts launches by path (a copy to subtract);
    kbackends.launch_settings() switches the launch path, the chunk budget and the
    random-feature product path for a block and restores them."""
    import kbackends

    kernel, stream = _Kernel(), launch.DeviceStream(0, 1234)
    x = DeviceLike(np.zeros(8, np.float32))
    before = kbackends.launch_counts()
    launch.run_kernel(kernel, 4, 128, stream, x)
    with kbackends.launch_settings(fast=False, chunk_bytes=256, fused=False):
        assert launch.CHUNK_BYTES == 256 and launch.chunk_rows(100, 64) == 4 and launch.FUSED_PRODUCTS is False
        launch.run_kernel(kernel, 4, 128, stream, x)
    assert launch.FAST_LAUNCH is True and launch.CHUNK_BYTES == 1 << 28 and launch.FUSED_PRODUCTS is True
    after = kbackends.launch_counts()
    assert {k: after[k] - before[k] for k in after} == {"fast": 1, "numba": 1}
    after["fast"] += 10  # a copy: the counters themselves are not touched
    assert kbackends.launch_counts()["fast"] == 1
    with pytest.raises(ValueError, match="chunk_bytes"):
        with kbackends.launch_settings(chunk_bytes=0):
            pass


@pytest.fixture
def fresh_core(monkeypatch):
    """core_api looks cuda.core up again, in a sys.modules the test fills."""
    import sys
    import types

    monkeypatch.setattr(launch, "_core", False)
    for name in ("cuda", "cuda.core", "cuda.core.experimental"):
        monkeypatch.delitem(sys.modules, name, raising=False)

    def install(**modules):
        for name, names in modules.items():
            module = types.ModuleType(name)
            for attr in names:
                setattr(module, attr, attr)
            monkeypatch.setitem(sys.modules, name, module)

    return install


def test_core_api_takes_the_released_names(fresh_core):
    fresh_core(**{"cuda": (), "cuda.core": ("LaunchConfig", "Stream", "launch")})
    assert launch.core_api() == ("LaunchConfig", "Stream", "launch")


def test_core_api_falls_back_to_cuda_core_experimental(fresh_core):
    """An older cuda-core keeps LaunchConfig, Stream and launch in cuda.core.experimental:
    without the fallback every cuda fit failed on the import."""
    fresh_core(**{"cuda": (), "cuda.core": ("utils",), "cuda.core.experimental": ("LaunchConfig", "Stream", "launch")})
    assert launch.core_api() == ("LaunchConfig", "Stream", "launch")


def test_without_cuda_core_numba_launches_after_one_warning_naming_why(paths, fresh_core):
    fresh_core(**{"cuda": (), "cuda.core": ("utils",)})
    kernel, stream = _Kernel(), launch.DeviceStream(0, 1234)
    x = DeviceLike(np.zeros(8, np.float32))
    with pytest.warns(RuntimeWarning, match="through Numba: cuda.core's launch is not importable") as record:
        for _ in range(3):
            launch.run_kernel(kernel, 4, 128, stream, x, 1)
    assert len(record) == 1 and "cuda.core.experimental" in str(record[0].message)
    assert launch.launch_counts == {"fast": 0, "numba": 3} and not paths["core"] and len(paths["numba"]) == 3


@pytest.mark.cuda
def test_the_real_launch_path_imports_on_a_device():
    """Where a GPU exists, the fast launch's cuda.core names import (the other tests mock them)."""
    import os

    from kbackends import resolve

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        pytest.skip("the simulator launches through Numba")
    try:
        resolve("cuda")
    except Exception:  # noqa: BLE001 - no device here
        pytest.skip("no CUDA GPU here")
    launch._core = False
    assert launch.core_api() is not None
