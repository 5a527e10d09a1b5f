"""What a data file of the command line holds (:class:`Data`) and its labels'
conventions: the missing-label markers, one type per column, each class as first
written, and how predictions are compared with the labels of a file."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

#: Label fields that mean "no label" (compared after stripping surrounding spaces).
MISSING = ("", "?", "NA", "N/A", "n/a", "nan", "NaN", "NAN", "null", "NULL")
_INT = re.compile(r"^[+-]?\d+$")


class DataError(ValueError):
    """A data file the command line cannot use (the message names the file)."""


@dataclass
class Data:
    """What a data file holds.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix or ndarray of shape (n_rows, n_features), float64
    raw : ndarray of str of shape (n_rows,) or None
        Labels as written (surrounding spaces dropped); None without a label column.
    path : str
    lines : ndarray of int of shape (n_rows,) or None
        The line of the file each row was read from (counted from 1).
    names : tuple of str or None
        CSV with a header: the names of the feature columns, in X's column order.
    index_base : int or None
        LIBSVM: the index of the first feature the file was read with (0 or 1).
    """

    X: object
    raw: object
    path: str
    lines: object = None
    names: tuple | None = None
    index_base: int | None = None

    @property
    def n_rows(self):
        return self.X.shape[0]

    def missing(self):
        """Rows whose label is missing (one of :data:`MISSING`; NaN in a float array)."""
        if self.raw is None:
            return np.ones(self.n_rows, dtype=bool)
        if self.raw.dtype.kind == "f":
            return np.isnan(self.raw)
        return np.isin(np.char.strip(self.raw.astype(str)), MISSING)

    def matches(self, marker):
        """Rows whose label equals ``marker`` (a string from the command line): as a
        number when both are numbers (``1`` matches ``1.0`` and ``+1``), else as text."""
        if self.raw is None:
            return np.zeros(self.n_rows, dtype=bool)
        value = as_number(marker)
        if self.raw.dtype.kind == "f":
            return self.raw == value if value is not None else np.zeros(self.n_rows, dtype=bool)
        text = np.char.strip(self.raw.astype(str))
        hit = text == marker.strip()
        if value is not None:
            hit |= numbers_or_nan(text) == value
        return hit

    def rows(self, mask):
        """X restricted to the rows of a boolean mask."""
        return self.X[np.flatnonzero(mask)]

    def where(self, mask, most=5):
        """'lines 3, 7, 9 (and 4 more)': where the rows of a boolean mask are in the file."""
        rows = np.flatnonzero(mask)
        numbers = (self.lines[rows] if self.lines is not None else rows + 1).tolist()
        text = ", ".join(map(str, numbers[:most]))
        more = f" and {len(numbers) - most} more" if len(numbers) > most else ""
        return f"line{'s' if len(numbers) > 1 else ''} {text}{more}"


def typed_labels(raw):
    """Labels in their own type: int64 if all integers, float64 if all numbers, else str."""
    raw = np.asarray(raw)
    if raw.dtype.kind == "f":
        if raw.size and np.all(np.isfinite(raw)) and np.all(raw == np.round(raw)) and np.all(np.abs(raw) < 2**53):
            return raw.astype(np.int64)
        return raw.astype(np.float64)
    text = np.char.strip(raw.astype(str))
    if text.size and all(_INT.match(t) for t in text.tolist()):
        try:
            return text.astype(np.int64)
        except OverflowError:
            pass
    numbers = numbers_or_nan(text)
    if text.size and not np.any(np.isnan(numbers)):
        return numbers
    return text


def spelled_classes(classes, typed, raw):
    """The classes of a fit on labels ``typed`` (from :func:`typed_labels` of ``raw``),
    each as it is first written in ``raw``: a str array in ``classes``' order, so a
    model predicts labels as the training file wrote them."""
    raw = np.char.strip(np.asarray(raw).astype(str))
    values, first = np.unique(np.asarray(typed), return_index=True)
    classes = np.asarray(classes)
    at = np.searchsorted(values, classes).clip(0, max(values.size - 1, 0))
    found = values.size > 0
    return np.array([str(raw[first[k]]) if found and values[k] == c else str(c)
                     for k, c in zip(at.tolist(), classes.tolist())])


def format_labels(values):
    """Lines for predicted labels or values, each in its own type's usual spelling."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return [repr(float(v)) if float(v).is_integer() else f"{v:.9g}" for v in values.tolist()]
    return [str(v) for v in values.tolist()]


def as_number(text):
    """``float(text)``, or None when the text is not a number."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value


def numbers_or_nan(text):
    """A str array as float64, NaN where a field is not a number."""
    try:
        return text.astype(np.float64)
    except ValueError:
        return np.array([v if (v := as_number(t)) is not None else np.nan for t in text.tolist()], dtype=np.float64)


def stem(path):
    """The file name in lower case without a compression suffix (.gz, .bz2, .xz)."""
    stem = path.name.lower()
    for suffix in (".gz", ".bz2", ".xz"):
        stem = stem.removesuffix(suffix)
    return stem


def open_text(path, opener, errors="strict"):
    """The file as UTF-8 text through ``opener`` (open, gzip.open, ...), a leading
    byte-order mark dropped and line ends kept as written."""
    # utf-8-sig: a byte-order mark is not part of the first field
    return opener(path, "rt", encoding="utf-8-sig", errors=errors, newline="")


def written_labels(model, labels):
    """Predicted labels as lines: each class as the training file wrote it (a model
    trained by the command line keeps that), else in its type's usual spelling."""
    spelled = getattr(model, "class_labels", None)
    if spelled is None:
        return format_labels(labels)
    lookup = dict(zip(np.asarray(model.classes).tolist(), spelled))
    return [lookup[v] for v in np.asarray(labels).tolist()]


def accuracy(pred, y):
    """(fraction correct, number correct) comparing labels of possibly different types
    (a model trained on CSV integers predicting a LIBSVM file's floats, or text)."""
    pred, y = np.asarray(pred), np.asarray(y)
    if pred.dtype.kind in "iufb" and y.dtype.kind in "iufb":
        hits = pred == y
    else:
        hits = np.asarray(format_labels(pred)) == np.asarray(format_labels(y))
        if y.dtype.kind in "iuf" or pred.dtype.kind in "iuf":  # "1" vs 1.0: compare as numbers where both are
            hits |= np.asarray([_same_number(a, b) for a, b in zip(pred.tolist(), y.tolist())], dtype=bool)
    return float(np.mean(hits)), int(np.sum(hits))


def _same_number(a, b):
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False
