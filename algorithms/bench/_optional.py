"""The bench's optional dependencies: imported where they are needed, and a missing
one named with the extra that brings it (the library's core install has none of
matplotlib, tabulate and h5py)."""

from __future__ import annotations

import importlib

INSTALL = 'pip install "kbackends[bench]"'


def require(module, purpose):
    """``import module``, or ModuleNotFoundError saying what needs it and what to install.

    Parameters
    ----------
    module : str
        A dotted module name, e.g. ``"matplotlib.pyplot"``.
    purpose : str
        What needs it, for the message (e.g. ``"the bench's plots"``).

    Raises
    ------
    ModuleNotFoundError
        When the module (or a package it needs) is not installed; the message names
        the ``bench`` extra.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = getattr(exc, "name", None) or module.split(".")[0]
        msg = f"{missing}, an optional dependency used for {purpose}, is not installed: {INSTALL}"
        raise ModuleNotFoundError(msg, name=missing) from exc


def pyplot():
    """``matplotlib.pyplot`` drawing to files (the Agg backend: no display needed)."""
    matplotlib = require("matplotlib", "the bench's plots")
    matplotlib.use("Agg")
    return require("matplotlib.pyplot", "the bench's plots")
