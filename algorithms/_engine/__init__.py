"""The stochastic functional-gradient engine shared by DSG, UDSG, CDSG, TSGS3VM and
TSGSU (the loop in ``loop``, its step rules, early stopping and averaging in
``steps``, the batches' row indices in ``draws``), and what every loop uses: the
progress bar (``progress``) and single-threaded BLAS (``threads``).

An algorithm builds a :class:`Problem` (its list of :class:`Source`, an
:class:`EngineSettings`, and how a result becomes its model) and solves it
(:meth:`Problem.solve` runs :func:`run`); see :mod:`algorithms._engine.loop` for the iteration.
"""

from .loop import (
    SCHEDULES,
    VARIANTS,
    EngineResult,
    EngineSettings,
    EngineState,
    Source,
    evaluate_blocks,
    group_features,
    run,
    sampling_seed,
)
from .problem import Problem
from .steps import EarlyStopping, _Averager as Averager

__all__ = [
    "SCHEDULES", "VARIANTS", "Averager", "EarlyStopping", "EngineResult", "EngineSettings", "EngineState",
    "Problem", "Source", "evaluate_blocks", "group_features", "run", "sampling_seed",
]
