"""Counter-based random features that match on every backend.

``omega_block(seed, block, ...)`` returns the spectral frequencies ``omega``
(n_features, n_dims) and phases ``phase`` (n_features,) of one block of random
Fourier features. Every number is a pure function of ``(seed, block, row,
column)`` through Philox-4x32-10, so

* a block never depends on the blocks before it: a model can regenerate any
  block, in any order, instead of storing it (the "seed per iteration" trick
  of doubly stochastic gradients);
* the cpu (Numba), cuda (Numba-CUDA), cuda-simulator and pure array-API paths
  produce the same integers, and the same floats up to the rounding of the
  final float64 transform (then one cast to ``dtype``). A model trained on a
  GPU predicts the same on a CPU.

Spectral densities (Rahimi & Recht 2007), with ``gamma`` the kernel parameter:

``"rbf"``       k(x, x') = exp(-gamma ||x - x'||_2^2)  ->  omega ~ N(0, 2 gamma I)
``"laplacian"`` k(x, x') = exp(-gamma ||x - x'||_1)    ->  omega_j ~ Cauchy(0, gamma)

and ``phase ~ U[0, 2 pi)``, so that ``E[2 cos(omega.x + phase) cos(omega.x' + phase)]
= k(x, x')``.

``features`` chooses how a block's rbf frequencies are placed: ``"monte_carlo"``
(the independent draws above, the default), ``"orthogonal"`` (orthogonal random
features) or ``"qmc"`` (scrambled Halton points); see ``kbackends/kernels/omega/_structured.py``.
Both approximate the Gaussian kernel with fewer features; the Laplacian kernel keeps
Monte-Carlo draws (its density is not rotation invariant), :data:`FEATURES` lists the
names.

Generated blocks are kept in a per-backend least-recently-used cache bounded
in bytes (:func:`set_cache_budget`), so regeneration costs nothing while the
blocks fit and memory stays bounded when they do not.
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from types import MappingProxyType

import numpy as np

from ._backend import Backend, resolve
from ._registry import get_kernel
from ._xp_utils import float_dtype
from .kernels.omega import _structured
from .kernels.omega._core import KERNEL_CODES

__all__ = ["omega_block", "omega_blocks", "set_cache_budget", "cache_info", "clear_cache", "check_features",
           "KERNELS", "FEATURES"]

KERNELS = MappingProxyType(KERNEL_CODES)
"""The shift-invariant kernels with random features: name -> integer code.

``"rbf"`` (code 0, Gaussian spectral draws) and ``"laplacian"`` (code 1, Cauchy
draws); see the module docstring for the densities. The one table of kernel
names: :func:`omega_block`, its compiled generators (which take the code) and
the algorithms' ``kernel=`` checks all read it. Read-only; ``tuple(KERNELS)``
lists the names.
"""
FEATURES = ("monte_carlo", "orthogonal", "qmc")
"""How the frequencies of a block are placed (the ``features`` of :func:`omega_block`):
independent draws, orthogonalised Gaussian rows, or quasi-Monte-Carlo points."""
_DEFAULT_BUDGET = int(os.environ.get("KBACKENDS_OMEGA_CACHE_BYTES", 256 * 2**20))


class _BlockCache:
    """LRU cache of generated blocks, bounded by total bytes, one per backend."""

    def __init__(self, budget: int):
        self.budget = budget
        self.nbytes = 0
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            item = self._items.get(key)
            if item is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return item

    def put(self, key, item, nbytes: int):
        with self._lock:
            if nbytes > self.budget or key in self._items:
                return
            self._items[key] = (item, nbytes)
            self.nbytes += nbytes
            while self.nbytes > self.budget:
                _, (_, old) = self._items.popitem(last=False)
                self.nbytes -= old

    def clear(self):
        with self._lock:
            self._items.clear()
            self.nbytes = 0
            self.hits = self.misses = 0


_CACHES: dict = {}
_CACHES_LOCK = threading.Lock()
_budget = _DEFAULT_BUDGET


def _cache_for(bk: Backend) -> _BlockCache:
    key = (bk.name, str(bk.device))
    with _CACHES_LOCK:
        cache = _CACHES.get(key)
        if cache is None:
            cache = _CACHES[key] = _BlockCache(_budget)
        return cache


def set_cache_budget(nbytes: int) -> None:
    """Set the byte budget of every backend's block cache (0 disables caching).

    The default is 256 MiB per backend, or ``$KBACKENDS_OMEGA_CACHE_BYTES``.
    """
    global _budget
    if not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
        msg = f"`nbytes` must be a non-negative integer, got {nbytes!r}"
        raise ValueError(msg)
    with _CACHES_LOCK:
        _budget = int(nbytes)
        for cache in _CACHES.values():
            cache.budget = _budget
            while cache.nbytes > cache.budget and cache._items:
                _, (_, old) = cache._items.popitem(last=False)
                cache.nbytes -= old


def cache_info() -> dict:
    """Per backend: ``{"budget", "nbytes", "blocks", "hits", "misses"}``."""
    with _CACHES_LOCK:
        return {
            name: {
                "budget": c.budget,
                "nbytes": c.nbytes,
                "blocks": len(c._items),
                "hits": c.hits,
                "misses": c.misses,
            }
            for (name, _), c in _CACHES.items()
        }


def clear_cache() -> None:
    """Drop every cached block on every backend."""
    with _CACHES_LOCK:
        for cache in _CACHES.values():
            cache.clear()


def _check_int(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        msg = f"`{name}` must be an integer, got {type(value).__name__}"
        raise TypeError(msg)
    if not low <= int(value) <= high:
        msg = f"`{name}` must be in [{low}, {high}], got {value}"
        raise ValueError(msg)
    return int(value)


def kernel_scale(kernel: str, gamma: float) -> float:
    """Factor from the standard spectral draw to ``omega`` for ``kernel``."""
    return math.sqrt(2.0 * gamma) if KERNELS[kernel] == 0 else float(gamma)


def omega_block(
    seed,
    block,
    n_features,
    n_dims,
    *,
    kernel="rbf",
    gamma=1.0,
    dtype=None,
    backend="auto",
    features="monte_carlo",
):
    """Random Fourier frequencies and phases of one block.

    Parameters
    ----------
    seed : int in [0, 2**64)
        Key of the generator (the model's random state).
    block : int in [0, 2**64)
        Index of the block; blocks with different indices are independent.
    n_features : int
        Number of random features in the block (rows of ``omega``).
    n_dims : int
        Input dimension (columns of ``omega``).
    kernel : {"rbf", "laplacian"}, default "rbf"
        Shift-invariant kernel approximated (see the module docstring and
        :data:`KERNELS`).
    gamma : float > 0, default 1.0
        Kernel parameter.
    dtype : float dtype, optional
        float32 or float64 of the backend's namespace; default float64 on the
        cpu backend and other namespaces, float32 on cuda.
    backend : str or Backend, default "auto"
        Where the arrays are made ("auto" is the cpu backend).
    features : {"monte_carlo", "orthogonal", "qmc"}, default "monte_carlo"
        Independent draws; the block's rows orthogonalised in groups of ``n_dims``
        (each keeping its Gaussian norm); or points ``block * n_features + row`` of
        the seed's scrambled Halton sequence. The last two need ``kernel="rbf"`` and
        are made on the host in float64 (then cast and copied to the backend), so
        they are the same numbers on every backend.

    Returns
    -------
    omega : array of shape (n_features, n_dims)
    phase : array of shape (n_features,)
        Cached, shared arrays: treat them as read-only.

    Examples
    --------
    >>> from kbackends.random import omega_block
    >>> omega, phase = omega_block(seed=0, block=3, n_features=4, n_dims=2)
    >>> omega.shape, phase.shape
    ((4, 2), (4,))
    """
    seed, block, n_features, n_dims, kernel, gamma, bk, dtype = _checked(
        seed, block, n_features, n_dims, kernel, gamma, dtype, backend, name="block")
    check_features(features, kernel)
    cache = _cache_for(bk)
    key = _block_key(seed, block, n_features, n_dims, kernel, gamma, dtype, features)
    hit = cache.get(key)
    if hit is not None:
        return hit[0]
    result = _generate(bk, seed, block, n_features, n_dims, kernel, gamma, dtype, features)
    cache.put(key, result, _nbytes(dtype, n_features, n_dims))
    return result


def omega_blocks(
    seed,
    start,
    stop,
    n_features,
    n_dims,
    *,
    kernel="rbf",
    gamma=1.0,
    dtype=None,
    backend="auto",
    keep=True,
    features="monte_carlo",
):
    """The blocks ``start, ..., stop - 1`` of :func:`omega_block`, stacked.

    One cached array for the whole range: a model that evaluates its blocks in
    groups (as a random-feature engine's prediction does) finds a finished group with one
    cache lookup instead of a lookup and a copy per block, which on a GPU is
    the host time that bounds an iteration.

    Parameters
    ----------
    seed, n_features, n_dims, kernel, gamma, dtype, backend, features
        As in :func:`omega_block`.
    start, stop : int, 0 <= start < stop < 2**64
        The range of block indices.
    keep : bool, default True
        Cache the stack (a range asked for again as it is). With False (a range that
        will be asked for next with one more block) the stack is not cached, its
        blocks are, one by one.

    Returns
    -------
    omega : array of shape ((stop - start) * n_features, n_dims)
    phase : array of shape ((stop - start) * n_features,)
        Block ``start + i`` in rows ``i * n_features`` to ``(i + 1) * n_features``;
        cached, shared arrays: treat them as read-only.

    Examples
    --------
    >>> import numpy as np
    >>> from kbackends.random import omega_block, omega_blocks
    >>> omega, phase = omega_blocks(seed=0, start=2, stop=4, n_features=3, n_dims=2)
    >>> omega.shape, bool(np.array_equal(omega[3:], omega_block(0, 3, 3, 2)[0]))
    ((6, 2), True)
    """
    seed, start, n_features, n_dims, kernel, gamma, bk, dtype = _checked(
        seed, start, n_features, n_dims, kernel, gamma, dtype, backend, name="start")
    stop = _check_int("stop", stop, start + 1, 2**64 - 1)
    check_features(features, kernel)
    if stop == start + 1:
        return omega_block(seed, start, n_features, n_dims, kernel=kernel, gamma=gamma, dtype=dtype, backend=bk,
                           features=features)
    cache = _cache_for(bk)
    key = _block_key(seed, ("range", start, stop), n_features, n_dims, kernel, gamma, dtype, features)
    hit = cache.get(key) if keep else None
    if hit is not None:
        return hit[0]
    parts = []
    for b in range(start, stop):  # cached blocks are reused; new ones are cached alone only if the stack is not
        block_key = _block_key(seed, b, n_features, n_dims, kernel, gamma, dtype, features)
        one = cache.get(block_key)
        if one is None:
            one = (_generate(bk, seed, b, n_features, n_dims, kernel, gamma, dtype, features),)
            if not keep:
                cache.put(block_key, one[0], _nbytes(dtype, n_features, n_dims))
        parts.append(one[0])
    xp = bk.xp
    result = (xp.concat([p[0] for p in parts], axis=0), xp.concat([p[1] for p in parts], axis=0))
    if keep:
        cache.put(key, result, _nbytes(dtype, (stop - start) * n_features, n_dims))
    return result


def _checked(seed, block, n_features, n_dims, kernel, gamma, dtype, backend, *, name):
    seed = _check_int("seed", seed, 0, 2**64 - 1)
    block = _check_int(name, block, 0, 2**64 - 1)
    n_features = _check_int("n_features", n_features, 0, 2**31 - 1)
    n_dims = _check_int("n_dims", n_dims, 0, 4 * (2**32 - 2))
    if kernel not in KERNELS:
        msg = f"`kernel` must be one of {tuple(KERNELS)}, got {kernel!r}"
        raise ValueError(msg)
    gamma = float(gamma)
    if not (math.isfinite(gamma) and gamma > 0):
        msg = f"`gamma` must be a positive finite number, got {gamma!r}"
        raise ValueError(msg)
    bk = resolve(backend)
    dtype = default_float_dtype(bk) if dtype is None else float_dtype(bk.xp, dtype)
    return seed, block, n_features, n_dims, kernel, gamma, bk, dtype


def check_features(features, kernel="rbf"):
    """Refuse a ``features`` name :data:`FEATURES` does not list, or one other than
    "monte_carlo" with a kernel other than "rbf" (ValueError naming both)."""
    if not isinstance(features, str) or features not in FEATURES:
        msg = f"`features` must be one of {FEATURES}, got {features!r}"
        raise ValueError(msg)
    if features != "monte_carlo" and kernel != "rbf":
        msg = (f"`features={features!r}` needs kernel='rbf', got kernel={kernel!r}: the {kernel} kernel's spectral "
               "density is not rotation invariant, so its random features stay Monte-Carlo draws "
               "(features='monte_carlo')")
        raise ValueError(msg)
    return features


def _block_key(seed, block, n_features, n_dims, kernel, gamma, dtype, features):
    return (seed, block, n_features, n_dims, KERNELS[kernel], gamma, str(dtype), features)


def _nbytes(dtype, n_features, n_dims):
    return (8 if "64" in str(dtype) else 4) * n_features * (n_dims + 1)


def _generate(bk, seed, block, n_features, n_dims, kernel, gamma, dtype, features):
    if features != "monte_carlo":
        return _generate_structured(bk, seed, block, n_features, n_dims, gamma, dtype, features)
    return get_kernel("omega_block", bk)(
        xp=bk.xp,
        seed=seed,
        block=block,
        n_features=n_features,
        n_dims=n_dims,
        kernel=kernel,
        scale=kernel_scale(kernel, gamma),
        dtype=dtype,
        device=bk.device,
    )


def _generate_structured(bk, seed, block, n_features, n_dims, gamma, dtype, features):
    """An orthogonal or QMC rbf block: float64 on the host, cast once, copied to ``bk``
    (a host -> device copy, which a sync-free region allows)."""
    if features == "orthogonal":  # the block's Monte-Carlo Gaussian rows, orthogonalised
        host = resolve("cpu")
        gaussian, phase = get_kernel("omega_block", host)(
            xp=host.xp, seed=seed, block=block, n_features=n_features, n_dims=n_dims, kernel="rbf", scale=1.0,
            dtype=np.float64, device=host.device)
        omega = _structured.orthogonal_rows(gaussian)
    else:
        omega, phase = _structured.qmc_block(seed, block, n_features, n_dims)
    host_dtype = np.float32 if "32" in str(dtype) else np.float64
    omega = (kernel_scale("rbf", gamma) * omega).astype(host_dtype)
    return bk.asarray(omega), bk.asarray(phase.astype(host_dtype))


def default_float_dtype(bk: Backend):
    """float32 on cuda (GPU throughput), float64 elsewhere."""
    return bk.xp.float32 if bk.name == "cuda" else bk.xp.float64
