"""Numba's on-disk cache (``cache=True``) safe for processes that compile at once.

Two processes that compile the same cached kernel at the same time leave a cache that
crashes later processes:

- Numba (0.68 and before; numba/numba#4807) names a new overload's machine-code file
  by the first number free in the cache index it has read: two processes compiling two
  signatures of one function both pick the same number, and the index points one
  signature at the other's machine code (a segmentation fault, or wrong numbers).
- Two processes compiling the same signature at once both save it; measured here with
  the SBP run's kernels under two pytest-xdist workers (each save under the index lock),
  the cache then crashed every later a9a fit until the kernel's files were deleted.

pytest-xdist workers and Dask's worker processes compile the same kernels at the same
time on a fresh install. :func:`serialise_cached_compiles` makes the cache lookup, the
compilation and the save of a cached kernel one step under an exclusive lock on a file
beside its index (POSIX ``fcntl``; where it is missing numba's own behaviour stays): a
second process waits and then loads what the first saved. It is the package's
``numba_extensions`` entry point (pyproject.toml), which numba calls before its first
compilation in a process, so importing kbackends still imports no compiler.
"""

from __future__ import annotations

import contextlib
import functools
import os

try:
    import fcntl
except ImportError:  # not POSIX: numba's unlocked compiles
    fcntl = None

_HELD: set[str] = set()  # the lock files this process holds (a save inside a compile, recursion)


@contextlib.contextmanager
def _exclusive(path):
    """An exclusive lock on ``path`` across processes; re-entered freely by the holder."""
    if path in _HELD:
        yield
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        lock = open(path, "ab")  # closed by the with below, after the work it guards
    except OSError:  # a cache folder this process cannot write: numba's unlocked behaviour
        yield
        return
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        except OSError:  # a file system without locks (some NFS mounts): numba's unlocked behaviour
            yield
            return
        _HELD.add(path)
        try:
            yield
        finally:
            _HELD.discard(path)


def _lock_path(cache_file):
    return cache_file._index_path + ".lock"


def serialise_cached_compiles():
    """Wraps numba's ``Dispatcher.compile`` (lookup, compilation and save of a cached
    kernel) and ``IndexDataCacheFile.save`` once in a per-kernel exclusive file lock
    (idempotent); False where it cannot (no ``fcntl``, or a numba laid out otherwise).
    Both take the file lock inside numba's compiler lock (re-entrant), so threads of one
    process never wait on each other's file lock and ``_HELD`` is read and written by one
    thread at a time."""
    try:
        from numba.core import caching, dispatcher
        from numba.core.compiler_lock import global_compiler_lock
    except ImportError:  # numba absent or laid out otherwise: nothing to guard
        return False
    save = getattr(getattr(caching, "IndexDataCacheFile", None), "save", None)
    compile_ = getattr(getattr(dispatcher, "Dispatcher", None), "compile", None)
    if fcntl is None or save is None or compile_ is None:
        return False
    if getattr(compile_, "serialised", False):
        return True

    @functools.wraps(save)
    def locked_save(self, key, data):
        with global_compiler_lock, _exclusive(_lock_path(self)):
            return save(self, key, data)

    @functools.wraps(compile_)
    def locked_compile(self, sig):
        cache_file = getattr(getattr(self, "_cache", None), "_cache_file", None)
        if cache_file is None:  # no on-disk cache: nothing shared with other processes
            return compile_(self, sig)
        with global_compiler_lock, _exclusive(_lock_path(cache_file)):
            return compile_(self, sig)

    locked_save.serialised = locked_compile.serialised = True
    caching.IndexDataCacheFile.save = locked_save
    dispatcher.Dispatcher.compile = locked_compile
    return True
