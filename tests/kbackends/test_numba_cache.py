"""Numba's on-disk cache written by processes compiling at once (kbackends._numba_cache)."""

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("fcntl")

MODULE = textwrap.dedent("""
    from numba import njit

    @njit(cache=True)
    def twice(x):
        return x * 2
""")

# Compiles `twice` for one type with a pause between reading the cache index and writing
# it (numba's window, widened to 2 s): without the lock, two such processes pick the same
# file number.
COMPILE = textwrap.dedent("""
    import sys, time
    import numba.core.caching as caching
    import numba.core.entrypoints as entrypoints
    if sys.argv[2] == "unlocked":  # numba's extensions (kbackends' lock among them) not loaded
        entrypoints._already_initialized = True
    save_index = caching.IndexDataCacheFile._save_index
    def slow_save_index(self, overloads):
        time.sleep(2.0)
        save_index(self, overloads)
    caching.IndexDataCacheFile._save_index = slow_save_index
    import numpy as np, mod
    value = mod.twice(np.float64(1.5) if sys.argv[1] == "float" else np.int64(3))
    print(value, sum(mod.twice.stats.cache_hits.values()))
""")

CHECK = "import numpy as np, mod; print(mod.twice(np.float64(1.5)), mod.twice(np.int64(3)))"


def _module(tmp_path):
    """``mod.py`` (``twice``) in ``tmp_path`` and the environment whose processes import it and
    cache under ``tmp_path / "cache"``."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "mod.py").write_text(MODULE)
    return {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
            "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}


def _two_at_once(tmp_path, mode, kinds=("float", "int")):
    """Two processes compiling ``twice`` at once, one for each of ``kinds``: the cache hits
    each saw (sorted), the machine-code files they left, and a third process's run of both
    overloads from that cache."""
    env = _module(tmp_path)
    procs = [subprocess.Popen([sys.executable, "-c", COMPILE, kind, mode], cwd=tmp_path, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for kind in kinds]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    hits = sorted(out.split()[1] for out, _ in outs)
    folder = next((tmp_path / "cache").rglob("*.nbi")).parent
    files = sorted(f for f in os.listdir(folder) if f.endswith(".nbc"))
    check = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=120)
    return hits, files, check


def test_two_processes_compiling_two_signatures_at_once_leave_a_cache_that_loads(tmp_path):
    """Both processes compile at once; under the lock (the installed package's
    ``numba_extensions`` entry point, run by numba before its first compilation) the second's
    save waits for the first's and numbers its file after it: a third process loads both."""
    _, files, check = _two_at_once(tmp_path, "locked")
    assert len(files) == 2  # one machine-code file each
    assert check.returncode == 0, check.stderr
    assert check.stdout.split() == ["3.0", "6"]


def test_the_race_is_real_without_the_lock(tmp_path):
    """The control: without kbackends' lock (numba's extension entry points not run) the same
    two processes both write file number 1, so the index points one overload at the other's
    machine code."""
    _, files, _ = _two_at_once(tmp_path, "unlocked")
    assert len(files) == 1


def test_a_kernel_compiled_by_two_processes_at_once_is_compiled_once(tmp_path):
    """The same signature at once: the second process waits for the first's compilation and
    save, then loads it from the cache (one cache hit); unlocked, both compile (measured:
    the SBP run's kernels compiled by two xdist workers at once left a cache that crashed
    later fits)."""
    assert _two_at_once(tmp_path / "locked", "locked", ("float", "float"))[0] == ["0", "1"]
    assert _two_at_once(tmp_path / "unlocked", "unlocked", ("float", "float"))[0] == ["0", "0"]


def test_a_lock_that_cannot_be_taken_leaves_numba_as_it_was(tmp_path):
    """A lock file that cannot be opened (here a folder stands at its name) does not stop a
    compilation: it runs unlocked, as numba alone would, and saves to the cache."""
    env = _module(tmp_path)
    run = [sys.executable, "-c", "import numpy as np, mod; print(mod.twice(np.float64(1.5)))"]
    assert subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120).returncode == 0
    lock = next((tmp_path / "cache").rglob("*.nbi.lock"))
    for cached in lock.parent.iterdir():
        cached.unlink()
    lock.mkdir()
    done = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3.0"]
    assert any(f.suffix == ".nbc" for f in lock.parent.iterdir())  # saved, unlocked
