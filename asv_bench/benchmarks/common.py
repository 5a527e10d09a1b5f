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


class _FitPredictSuite:
    """Fit / predict time, peak memory and test accuracy of one algorithm, per backend.

    A suite subclasses this (the leading underscore keeps asv from collecting the base
    itself), sets ``algorithm`` (a module with ``fit`` and ``predict``), returns host
    arrays from ``setup_cache`` and implements ``prepare(data, bk, *params)`` ->
    ``(fit_args, fit_kwargs, X_test, y_test)`` with the arrays on backend ``bk``.
    The backend is the first parameter; a suite may add more (``params`` /
    ``param_names``), which reach ``prepare`` and ``fitted`` after ``bk``. ``fitted``
    gives the model whose prediction is timed (default: one fit in ``setup``; a suite
    whose fits are long returns one made in ``setup_cache`` instead).
    """

    params = (BACKENDS,)
    param_names = ["backend"]
    timeout = 600
    algorithm = None

    def setup(self, data, backend, *params):
        self.bk = backend_or_skip(backend)
        self.args, kwargs, self.X_t, self.y_t = self.prepare(data, self.bk, *params)
        self.kwargs = {**kwargs, "backend": self.bk}
        self.model = self.fitted(data, *params)

    def fitted(self, data, *params):
        return self.algorithm.fit(*self.args, **self.kwargs)

    def time_fit(self, data, *params):
        self.algorithm.fit(*self.args, **self.kwargs)
        synchronize(self.bk)

    def time_predict(self, data, *params):
        self.algorithm.predict(self.model, self.X_t)
        synchronize(self.bk)

    def peakmem_fit(self, data, *params):
        self.algorithm.fit(*self.args, **self.kwargs)

    def track_test_accuracy(self, data, *params):
        import numpy as np

        return float(np.mean(self.bk.to_numpy(self.algorithm.predict(self.model, self.X_t)) == self.y_t))

    track_test_accuracy.unit = "fraction"
