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
