"""Data files for the command line: LIBSVM / svmlight and CSV / TSV, plain or compressed.

Formats
-------
LIBSVM / svmlight
    ``label index:value ...`` per line, read with scikit-learn's
    ``load_svmlight_file`` into a SciPy CSR matrix, kept sparse: DSG / UDSG /
    CDSG, TSGS3VM, SBP and S3GD train and predict on it as is (moved to the device
    once on cuda); the
    command line densifies it only for TSGSU.
CSV / TSV
    One row per line, the label in the first, the last or a named column;
    comma, tab or whitespace separated (by the ``.tsv`` extension or the first
    line); with or without a header line (detected: a header has a
    non-numeric feature field, or a non-numeric label over numeric ones).
    Labels are kept as written: integers, floats or strings.

Either may be compressed with gzip, bzip2 or xz, recognised by its first bytes
(whatever the extension says).

Labels
------
A label field that is empty or ``?`` is *missing* (an unlabelled row). Labels
are typed once for the whole file: all integers -> int64, all numbers ->
float64, anything else -> str; LIBSVM labels are numbers, int64 when every one
is integral (so ``+1`` / ``-1`` stay integers).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._models.persistence import atomic_write

MISSING = ("", "?")
_INT = re.compile(r"^[+-]?\d+$")
_OPENERS = {b"\x1f\x8b": gzip.open, b"BZh": bz2.open, b"\xfd7zXZ\x00": lzma.open}


class DataError(ValueError):
    """A data file the command line cannot use (the message names the file)."""


@dataclass
class Data:
    """What a data file holds.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix or ndarray of shape (n_rows, n_features), float64
    raw : ndarray of shape (n_rows,) or None
        Labels as read: str (CSV) or float64 (LIBSVM); None without a label column.
    path : str
    """

    X: object
    raw: object
    path: str

    @property
    def n_rows(self):
        return self.X.shape[0]

    def missing(self):
        """Rows whose label is missing (empty or ``?``; NaN in LIBSVM)."""
        if self.raw is None:
            return np.ones(self.n_rows, dtype=bool)
        if self.raw.dtype.kind == "f":
            return np.isnan(self.raw)
        return np.isin(np.char.strip(self.raw), MISSING)

    def matches(self, marker):
        """Rows whose label equals ``marker`` (a string from the command line): as a
        number when both are numbers (``1`` matches ``1.0`` and ``+1``), else as text."""
        if self.raw is None:
            return np.zeros(self.n_rows, dtype=bool)
        value = _number(marker)
        if self.raw.dtype.kind == "f":
            return self.raw == value if value is not None else np.zeros(self.n_rows, dtype=bool)
        text = np.char.strip(self.raw)
        hit = text == marker.strip()
        if value is not None:
            hit |= _numbers_or_nan(text) == value
        return hit

    def rows(self, mask):
        """X restricted to the rows of a boolean mask."""
        return self.X[np.flatnonzero(mask)]


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
    numbers = _numbers_or_nan(text)
    if text.size and not np.any(np.isnan(numbers)):
        return numbers
    return text


def format_labels(values):
    """Lines for predicted labels or values, each in its own type's usual spelling."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return [repr(float(v)) if float(v).is_integer() else f"{v:.9g}" for v in values.tolist()]
    return [str(v) for v in values.tolist()]


def read(path, fmt="auto", *, label_column="last", has_labels=True, header="auto", n_features=None):
    """Read a data file.

    Parameters
    ----------
    path : str or path-like
    fmt : {"auto", "libsvm", "csv"}
        "auto": ``.csv`` / ``.tsv`` (before any compression suffix) are CSV,
        others LIBSVM when the first line has an ``index:value`` pair, else CSV.
    label_column : "first", "last", a column number counted from 1, or a header name
        CSV only.
    has_labels : bool
        CSV only: False when no column holds labels.
    header : {"auto", "yes", "no"}
        CSV only.
    n_features : int, optional
        LIBSVM only: the number of features to expect (a model's).

    Returns
    -------
    Data

    Raises
    ------
    FileNotFoundError, IsADirectoryError, PermissionError
    DataError
        A file that is empty, not in the format, or inconsistent (the message
        names the file and, where it can, the line).
    """
    path = Path(path)
    name = str(path)
    if not path.exists():
        msg = f"data file {name!r} does not exist"
        raise FileNotFoundError(msg)
    if path.is_dir():
        msg = f"data file {name!r} is a directory"
        raise IsADirectoryError(msg)
    opener = _opener(path)
    try:
        first = _first_line(path, opener)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        msg = f"data file {name!r} cannot be read ({exc})"
        raise DataError(msg) from exc
    if first is None:
        msg = f"data file {name!r} has no data rows"
        raise DataError(msg)
    if fmt == "auto":
        stem = path.name.lower()
        for suffix in (".gz", ".bz2", ".xz"):
            stem = stem.removesuffix(suffix)
        if stem.endswith((".csv", ".tsv")):
            fmt = "csv"
        else:
            fmt = "libsvm" if re.search(r"\d:", first.split("#")[0]) else "csv"
    try:
        if fmt == "libsvm":
            return _read_libsvm(path, opener, n_features)
        return _read_csv(path, opener, first, label_column, has_labels, header)
    except DataError:
        raise
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        msg = f"data file {name!r} cannot be read ({exc})"
        raise DataError(msg) from exc


def _opener(path):
    with open(path, "rb") as fh:
        magic = fh.read(6)
    for prefix, opener in _OPENERS.items():
        if magic.startswith(prefix):
            return opener
    return open


def _first_line(path, opener):
    """The first line with data (not blank, not a # comment), or None."""
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        for line in fh:
            if line.strip() and not line.lstrip().startswith("#"):
                return line.rstrip("\r\n")
    return None


def _read_libsvm(path, opener, n_features):
    from sklearn.datasets import load_svmlight_file

    try:
        with opener(path, "rb") as fh:
            X, y = load_svmlight_file(fh, n_features=n_features, dtype=np.float64)
    except ValueError as exc:
        where = _bad_libsvm_line(path, opener)
        msg = f"data file {str(path)!r} is not a valid LIBSVM file ({where or exc})"
        raise DataError(msg) from exc
    if X.shape[0] == 0:
        msg = f"data file {str(path)!r} has no data rows"
        raise DataError(msg)
    return Data(X=X.tocsr(), raw=y.astype(np.float64), path=str(path))


def _bad_libsvm_line(path, opener):
    """'line N: ...' for the first line that is not ``label index:value ...``, or None."""
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            tokens = line.split("#", 1)[0].split()
            if not tokens:
                continue
            if _number(tokens[0]) is None:
                return f"line {number}: label {tokens[0]!r} is not a number"
            for token in tokens[1:]:
                index, _, value = token.partition(":")
                if index == "qid":
                    continue
                if not _ or not index.isdigit() or _number(value) is None:
                    return f"line {number}: {token!r} is not an index:value pair"
    return None


def _delimiter(path, first):
    stem = path.name.lower()
    for suffix in (".gz", ".bz2", ".xz"):
        stem = stem.removesuffix(suffix)
    if stem.endswith(".tsv") or "\t" in first:
        return "\t"
    if "," in first:
        return ","
    if ";" in first:
        return ";"
    return None  # whitespace


def _split(line, delimiter):
    return [f.strip().strip('"') for f in (line.split(delimiter) if delimiter else line.split())]


def _read_csv(path, opener, first, label_column, has_labels, header):
    name = str(path)
    delimiter = _delimiter(path, first)
    fields = _split(first, delimiter)
    n_columns = len(fields)
    label = _label_index(label_column, fields, n_columns, header, name) if has_labels else None
    if header == "auto":
        features = [f for i, f in enumerate(fields) if i != label]
        header_line = any(_number(f) is None for f in features)
        if not header_line and label is not None and _number(fields[label]) is None and fields[label] not in MISSING:
            second = _second_line(path, opener)
            header_line = second is not None and _number(_split(second, delimiter)[label]) is not None
    else:
        header_line = header == "yes"
    if isinstance(label_column, str) and label_column not in ("first", "last") and not label_column.isdigit():
        if not header_line:
            msg = f"`--label-column` {label_column!r} names a column, but {name!r} has no header line"
            raise DataError(msg)
    feature_columns = [i for i in range(n_columns) if i != label]
    skip = 1 if header_line else 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "input contained no data": reported below
        try:
            with opener(path, "rt", encoding="utf-8", newline="") as fh:
                X = np.loadtxt(fh, dtype=np.float64, delimiter=delimiter, skiprows=skip, ndmin=2,
                               usecols=feature_columns, quotechar='"')
            raw = None
            if label is not None:
                with opener(path, "rt", encoding="utf-8", newline="") as fh:
                    raw = np.loadtxt(fh, dtype=str, delimiter=delimiter, skiprows=skip, ndmin=1,
                                     usecols=label, quotechar='"')
        except ValueError as exc:
            msg = f"data file {name!r} is not a valid CSV file of numbers ({_skip_note(exc, skip)})"
            raise DataError(msg) from exc
    if X.shape[0] == 0:
        msg = f"data file {name!r} has no data rows"
        raise DataError(msg)
    if raw is not None:
        raw = np.char.strip(np.atleast_1d(raw).astype(str))
        raw = np.char.strip(raw, '"')
        if raw.shape[0] != X.shape[0]:  # a comment-only label column
            msg = f"data file {name!r}: {raw.shape[0]} labels for {X.shape[0]} rows"
            raise DataError(msg)
    return Data(X=X, raw=raw, path=name)


def _skip_note(exc, skip):
    text = " ".join(str(exc).split())
    return text + (" (counting rows after the header)" if skip and "row" in text else "")


def _second_line(path, opener):
    seen = False
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        for line in fh:
            if line.strip() and not line.lstrip().startswith("#"):
                if seen:
                    return line.rstrip("\r\n")
                seen = True
    return None


def _label_index(label_column, fields, n_columns, header, name):
    if n_columns < 2:
        msg = f"data file {name!r} has {n_columns} column; a label and at least one feature are needed"
        raise DataError(msg)
    if label_column == "first":
        return 0
    if label_column == "last":
        return n_columns - 1
    if str(label_column).isdigit():
        number = int(label_column)
        if not 1 <= number <= n_columns:
            msg = f"`--label-column` {number} is outside columns 1 to {n_columns} of {name!r}"
            raise DataError(msg)
        return number - 1
    if header == "no" or label_column not in fields:
        msg = f"`--label-column` {label_column!r} is not a column of {name!r}'s header line {fields}"
        raise DataError(msg)
    return fields.index(label_column)


def _number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value


def _numbers_or_nan(text):
    try:
        return text.astype(np.float64)
    except ValueError:
        return np.array([v if (v := _number(t)) is not None else np.nan for t in text.tolist()], dtype=np.float64)


def check_output_path(path, what):
    """Fail now, before any training, if ``path`` cannot be written: a directory, a
    missing or read-only directory. ``-`` (standard output) and existing special
    files (``/dev/stdout``) are fine."""
    if str(path) == "-":
        return
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{what} {str(path)!r} is a directory")
    if path.exists() and not path.is_file():
        return  # a device or a pipe: written directly
    parent = path.parent
    if not parent.is_dir():
        raise FileNotFoundError(f"{what} {str(path)!r}: directory {str(parent)!r} does not exist")
    probe = parent / f".{path.name}.{os.getpid()}.probe"
    try:
        if not os.access(parent, os.W_OK | os.X_OK):
            raise PermissionError
        probe.touch()
        probe.unlink()
    except OSError:
        raise PermissionError(f"{what} {str(path)!r}: directory {str(parent)!r} is not writable") from None


def same_file(a, b):
    """Whether the paths ``a`` and ``b`` name one file: the same path once links and
    ``..`` are resolved, or, both existing, the same inode (a hard link). ``-`` is no file."""
    if "-" in (str(a), str(b)):
        return False
    a, b = Path(a), Path(b)
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def write_lines(path, lines):
    """Write lines to ``path``: atomically for a regular file, directly for ``-`` or a device."""
    text = "".join(line + "\n" for line in lines)
    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(path)
    if path.exists() and not path.is_file():
        with open(path, "w") as fh:
            fh.write(text)
        return
    atomic_write(path, lambda fh: fh.write(text.encode()))
