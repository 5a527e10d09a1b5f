"""Kernel implementations, one folder per family; each folder's ``__init__``
only registers its implementations with the registry."""

from . import anchors, engine, gauss_newton, loss, omega, response, rff, rows, waterfill  # noqa: F401  (registration side effects)
