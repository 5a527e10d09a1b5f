"""An engine problem: what an engine algorithm builds from its validated arguments
(the sources, the settings, the backend and dtype) and how the engine's result becomes
its model. Building is apart from running, so the in-memory fit, the distributed fit
and ``partial_fit`` run the same problem each its own way."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from kbackends import array_namespace

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
    target_shift : (float, float) or None
        ``(mean, scale)`` of regression targets the sources hold standardised,
        ``(y - mean) / scale`` (computed in float64, so float32 keeps their spread
        whatever their offset); the result is mapped back before ``finish``.
    """

    sources: list
    settings: EngineSettings
    backend: object
    dtype: object
    finish: Callable[[EngineResult], object]
    target_shift: tuple | None = None

    def solve(self, runner=None):
        """Run the problem and return the model. ``runner(sources, backend, settings, dtype)``
        takes the place of :func:`run` (the distributed fit's cluster run); its result is
        checked for non-finite coefficients as :func:`run`'s is."""
        if runner is None:
            result = run(self.sources, self.backend, self.settings, self.dtype)
        else:
            result = runner(self.sources, self.backend, self.settings, self.dtype)
            check_result(result, self.sources, self.backend)
        return self.finish(unshift(result, self.target_shift))


def unshift(result, shift):
    """``result`` in the targets' own units: ``f * scale + mean`` (the coefficients scaled,
    the mean added to the intercept); ``shift`` None: ``result`` itself. The intercept is
    kept in float64: in float32 a mean of 1e7 would round it to whole units (its ulp), a
    bias on every prediction (the model adds it in float64, :meth:`RFFModel.raw_decision`)."""
    if shift is None:
        return result
    mean, scale = shift
    xp = array_namespace(result.intercept)
    intercept = xp.astype(result.intercept, xp.float64) * scale + mean
    return dataclasses.replace(result, coef=result.coef * scale, intercept=intercept)
