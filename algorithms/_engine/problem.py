"""An engine problem: what an engine algorithm builds from its validated arguments
(the sources, the settings, the backend and dtype) and how the engine's result becomes
its model. Building is apart from running, so the in-memory fit, the distributed fit
and ``partial_fit`` run the same problem each its own way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .loop import check_result, run
from .state import EngineResult, EngineSettings


@dataclass
class Problem:
    """One engine algorithm's problem, ready to run.

    Attributes
    ----------
    sources : list of Source
        The objective's data sources (validated rows on ``backend``).
    settings : EngineSettings
    backend : Backend
    dtype : dtype
        The compute dtype (the sources' rows are in it).
    finish : callable
        ``finish(result: EngineResult) -> model``: the algorithm's model from a run's result.
    """

    sources: list
    settings: EngineSettings
    backend: object
    dtype: object
    finish: Callable[[EngineResult], object]

    def solve(self, runner=None):
        """Run the problem and return the model. ``runner(sources, backend, settings, dtype)``
        takes the place of :func:`run` (the distributed fit's cluster run); its result is
        checked for non-finite coefficients as :func:`run`'s is."""
        if runner is None:
            result = run(self.sources, self.backend, self.settings, self.dtype)
        else:
            result = runner(self.sources, self.backend, self.settings, self.dtype)
            check_result(result, self.sources, self.backend)
        return self.finish(result)

