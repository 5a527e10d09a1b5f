"""Warnings addressed to the user's line, whichever entry led to them."""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def warn_user(message, category=UserWarning):
    """``warnings.warn(message, category)`` with the ``stacklevel`` of the first frame
    outside the ``algorithms`` package: the warning names the user's line whether the
    function, an estimator, ``partial_fit`` or a search led here (a fixed stacklevel
    names a line of the package on one of those paths)."""
    frame, level = sys._getframe(1), 2  # the caller of warn_user: stacklevel 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
