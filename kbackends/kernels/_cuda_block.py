"""Block-level helpers of the one-block (and block-a-column) Numba-CUDA kernels."""

from numba import cuda


@cuda.jit(device=True)
def tree_sum(part, tid, width):
    """``part[0]`` becomes the sum of ``part[:width]`` (``width`` a power of two, the
    block's threads), added in a fixed halving order, so the sum repeats bit for bit;
    ``part`` is overwritten. Every thread of the block calls it (it holds barriers),
    after writing its own entry; the sum is readable by all when it returns."""
    cuda.syncthreads()
    step = width // 2
    while step:
        if tid < step:
            part[tid] += part[tid + step]
        cuda.syncthreads()
        step //= 2
