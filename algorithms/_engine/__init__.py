"""The stochastic functional-gradient engine shared by DSG, UDSG, CDSG, TSGS3VM and
TSGSU (the loop in ``loop``, its step rules, early stopping and averaging in
``steps``, its sources, settings and state in ``state``, the blocks evaluated on rows in
``blocks``, the batches' row indices in ``draws``, the problem an algorithm builds in
``problem``), and what every loop uses: the
progress bar (``progress``) and single-threaded BLAS (``threads``).

An algorithm builds a :class:`Problem` (its list of :class:`Source`, an
:class:`EngineSettings`, and how a result becomes its model) and solves it
(:meth:`Problem.solve` runs :func:`run`); see :mod:`algorithms._engine.loop` for the iteration.
"""

from .blocks import evaluate_blocks, group_features
from .loop import run
from .state import (
    SCHEDULES, VARIANTS, EngineResult, EngineSettings, EngineState, Source, engine_settings, sampling_seed,
)
from .problem import Problem, unshift
from .steps import EarlyStopping, _Averager as Averager

__all__ = [
    "SCHEDULES", "VARIANTS", "Averager", "EarlyStopping", "EngineResult", "EngineSettings", "EngineState",
    "Problem", "Source", "engine_settings", "evaluate_blocks", "group_features", "run", "sampling_seed", "unshift",
]
