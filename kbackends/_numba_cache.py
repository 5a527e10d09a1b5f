"""Numba's on-disk cache (``cache=True``) safe for processes that compile at once.

Numba (0.68 and before; numba/numba#4807) names a new overload's machine-code file by
the first number free in the cache index it has read, then writes the index and the
file. Two processes compiling two signatures of one function at the same moment both
read the same index and pick the same number: one's index entry then points at the
other's machine code, and every later process that loads it calls code compiled for
other types (a segmentation fault, or wrong numbers). pytest-xdist workers and Dask's
worker processes compile the same kernels at the same time on a fresh install.

:func:`serialise_cache_saves` makes numba's read-extend-write of the index and the
file's write one step under an exclusive lock on a file beside the index (POSIX
``fcntl``; where it is missing numba's own behaviour stays). It is the package's
``numba_extensions`` entry point (pyproject.toml), which numba calls before its first
compilation in a process, so importing kbackends still imports no compiler."""

from __future__ import annotations

import functools

try:
    import fcntl
except ImportError:  # not POSIX: numba's unlocked saves
    fcntl = None


def serialise_cache_saves():
    """Wraps ``numba.core.caching.IndexDataCacheFile.save`` once in a process-wide
    exclusive file lock (idempotent); False where it cannot (no ``fcntl``, or a numba
    whose cache is laid out otherwise)."""
    try:
        from numba.core import caching
    except ImportError:  # numba absent: nothing to guard
        return False
    save = getattr(getattr(caching, "IndexDataCacheFile", None), "save", None)
    if fcntl is None or save is None:
        return False
    if getattr(save, "serialised", False):
        return True

    @functools.wraps(save)
    def locked_save(self, key, data):
        with open(self._index_path + ".lock", "ab") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            return save(self, key, data)

    locked_save.serialised = True
    caching.IndexDataCacheFile.save = locked_save
    return True
