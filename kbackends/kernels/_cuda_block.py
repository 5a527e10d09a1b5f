"""Block-level helpers of the one-block (and block-a-column) Numba-CUDA kernels."""

from numba import cuda


@cuda.jit(device=True)
def tree_sum(part, tid, width, rows):
    """Row q's sum of ``part[q * width:(q + 1) * width]`` into ``part[q * width]``, for
    ``rows`` rows at once (``width`` a power of two, the block's threads), added in a
    fixed halving order, so each sum repeats bit for bit; ``part`` is overwritten.
    Every thread of the block calls it (it holds barriers), after writing its own
    entries; the sums are readable by all when it returns."""
    cuda.syncthreads()
    step = width // 2
    while step:
        if tid < step:
            for q in range(rows):
                part[q * width + tid] += part[q * width + tid + step]
        cuda.syncthreads()
        step //= 2
