"""Shared pieces of the asv suites (modelled on SciPy's XPBenchmark).

The backend is the first parameter of every suite; a backend that cannot run
here raises NotImplementedError in ``setup``, which asv reports as skipped.
"""

import kbackends

BACKENDS = ["cpu", "cuda"]


def backend_or_skip(name):
    """Resolve ``name``; raise NotImplementedError (asv: skip) if it cannot run."""
    try:
        return kbackends.resolve(name)
    except kbackends.BackendUnavailableError as exc:
        raise NotImplementedError(str(exc)) from exc


def synchronize(bk):
    """Wait for queued GPU work so the timer measures it."""
    bk.synchronize()
