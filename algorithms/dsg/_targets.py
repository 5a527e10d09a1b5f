"""DSG's loss targets: labels or values as the (n, n_outputs) matrix its losses read."""

from __future__ import annotations

import numpy as np

from kbackends import array_namespace, is_array, to_numpy
from kbackends.losses import SOFTMAX, SUPERVISED_LOSSES

from .._boundary.validation import check_y_length, encode_classes, encode_known_classes


def targets(y, X, bk, loss, classes=None, shift=None):
    """Loss targets as an (n, n_outputs) matrix, the task, the classes and the loss;
    ``classes`` (a fitted model's): encode ``y`` against them, refusing labels they lack;
    ``shift`` (regression): ``(mean, scale)`` to standardise with (:func:`target_shift`)."""
    xp = bk.xp
    if y is None:
        msg = "`y` is required, got None"
        raise ValueError(msg)
    if loss == "squared":
        y = bk.asarray(y if is_array(y) else np.asarray(y))
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        check_y_length(y, X)
        if xp.isdtype(y.dtype, "complex floating"):
            msg = f"`y` has a complex dtype ({y.dtype}); regression targets must be real numbers"
            raise ValueError(msg)
        if not bool(xp.all(xp.isfinite(y))):
            msg = "`y` contains NaN or infinite values"
            raise ValueError(msg)
        if shift is not None:  # standardised in float64, then the compute dtype
            y = (xp.astype(y, xp.float64) - shift[0]) / shift[1]
        y = xp.astype(y, X.dtype)
        return xp.reshape(y, (-1, 1)), "regression", None, SUPERVISED_LOSSES["squared"]
    if classes is None:
        classes, index = encode_classes(y, bk, X.shape[0])
    else:
        index = encode_known_classes(y, classes, bk, X.shape[0])
    n_classes = classes.size
    if n_classes == 2:
        y_pm = 2.0 * xp.astype(index == 1, X.dtype) - 1.0
        return xp.reshape(y_pm, (-1, 1)), "binary", classes, SUPERVISED_LOSSES[loss]
    one_hot = index[:, None] == xp.arange(n_classes, device=getattr(index, "device", None))[None, :]
    if loss == "logistic":
        return xp.astype(one_hot, X.dtype), "softmax", classes, SOFTMAX
    return 2.0 * xp.astype(one_hot, X.dtype) - 1.0, "ovr", classes, SUPERVISED_LOSSES[loss]


def class_index(y_matrix):
    """The rows' class indices (host) from the target matrix of :func:`targets`: +-1 in one
    column (binary), one column per class otherwise."""
    if y_matrix.shape[1] == 1:
        return (np.asarray(to_numpy(y_matrix[:, 0])) > 0).astype(np.int64)
    return np.asarray(to_numpy(array_namespace(y_matrix).argmax(y_matrix, axis=1)))


def target_shift(y):
    """``(mean, scale)`` of regression targets (float64 on the host; scale 1 for constant
    targets): :func:`targets` standardises with it, so a float32 fit keeps targets of any
    offset and size (y + 1e7 in float32 has a resolution of 1)."""
    y = np.asarray(to_numpy(y) if is_array(y) else y, dtype=np.float64).reshape(-1)
    if y.size == 0 or not np.all(np.isfinite(y)):
        return 0.0, 1.0  # targets() refuses these with its own message
    mean = float(np.mean(y))
    scale = float(np.std(y))
    return mean, (scale if scale > 0 else 1.0)
