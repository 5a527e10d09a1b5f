"""The Numba-CUDA kernels' launch path and row-chunk budget, seen from outside the
kernels: how many launches took which path, and a block run with other settings
(for reports that compare the paths and tests that cover several chunks)."""

from __future__ import annotations

from contextlib import contextmanager

from .kernels import _cuda_launch


def launch_counts():
    """Numba-CUDA kernel launches made so far in this process, by path.

    Returns
    -------
    dict
        ``{"fast": n, "numba": n}``, a copy: ``fast`` counts the launches through
        cuda.core (a kernel already typed for its argument signature), ``numba``
        those through Numba's own launch (the first of a signature, the simulator,
        ``KBACKENDS_FAST_LAUNCH=0``). Subtract two copies to count a span of work.
    """
    return dict(_cuda_launch.launch_counts)


def launch_path():
    """Where the fast launch comes from: ``"cuda.core"``, ``"cuda.core.experimental"`` (an
    older cuda-core), or ``"none: <why>"`` (every launch through Numba); looked up on the
    first call (it imports cuda.core)."""
    _cuda_launch.core_api()
    return _cuda_launch.core_source


@contextmanager
def launch_settings(*, fast=None, chunk_bytes=None, fused=None):
    """Run a block with another launch path, row-chunk budget or product path; all restored on exit.

    Parameters
    ----------
    fast : bool, optional
        True: launch through cuda.core once a kernel is typed (the default unless
        ``KBACKENDS_FAST_LAUNCH=0``); False: always through Numba's own launch.
        None leaves the setting as it is.
    chunk_bytes : int, optional
        Bytes of scratch one chunked op may hold at once (default 256 MiB): the
        ``(rows, m)`` products are computed in row chunks of this size. None
        leaves it as it is.
    fused : bool, optional
        True (the default): the random-feature ops on dense rows of at most 32
        values compute each product where its cos is taken, in one kernel with
        the sum; False: cuBLAS's ``(rows, m)`` product, then the cos and sum
        kernels (the path of sparse and wider rows). None leaves it as it is.

    Raises
    ------
    ValueError
        If ``chunk_bytes`` is not a positive integer.
    """
    if chunk_bytes is not None and (isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, int)
                                    or chunk_bytes < 1):
        msg = f"`chunk_bytes` must be a positive int, got {chunk_bytes!r}"
        raise ValueError(msg)
    saved = _cuda_launch.FAST_LAUNCH, _cuda_launch.CHUNK_BYTES, _cuda_launch.FUSED_PRODUCTS
    if fused is not None:
        _cuda_launch.FUSED_PRODUCTS = bool(fused)
    if fast is not None:
        _cuda_launch.FAST_LAUNCH = bool(fast)
    if chunk_bytes is not None:
        _cuda_launch.CHUNK_BYTES = chunk_bytes
    try:
        yield
    finally:
        _cuda_launch.FAST_LAUNCH, _cuda_launch.CHUNK_BYTES, _cuda_launch.FUSED_PRODUCTS = saved
