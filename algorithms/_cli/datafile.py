"""Data files for the command line: LIBSVM / svmlight and CSV / TSV, plain or compressed.

Formats
-------
LIBSVM / svmlight
    ``label index:value ...`` per line (a ``qid:N`` after the label is skipped, a
    ``#`` starts a comment), indices increasing within a line. Read into a SciPy CSR
    matrix, kept sparse: DSG / UDSG / CDSG, TSGS3VM, SBP and S3GD train and predict
    on it as is (moved to the device once on cuda); the command line densifies it
    only for TSGSU. The *index base* (the index of the first feature, 0 or 1) is
    given with ``--index-base`` or decided from the training file ("auto": 0 when
    some row uses index 0, else 1); the model keeps it, and files given to
    ``predict`` are read with the model's base unless ``--index-base`` says
    otherwise. A line that is not ``label index:value ...`` is refused with its
    number: a LIBSVM file is never re-read as CSV.
CSV / TSV
    One row per line, read with the :mod:`csv` module (quoted fields as written,
    surrounding spaces dropped); comma, tab, semicolon or whitespace separated
    (by the ``.tsv`` extension or the first line); with or without a header line
    (detected: a header has a non-numeric feature field, or a non-numeric label
    over numeric ones). Blank lines and lines starting with ``#`` are skipped. A
    model trained on a file with a header keeps the names of its feature columns;
    ``predict`` then takes a file's columns by name, in any order (a missing name
    is refused, naming it); without names on either side, columns are taken by
    position.

Either may be compressed with gzip, bzip2 or xz, recognised by its first bytes
(whatever the extension says), and may start with a UTF-8 byte-order mark.
The format is ``.csv`` / ``.tsv`` -> CSV, ``.svm`` / ``.libsvm`` / ``.svmlight``
-> LIBSVM, otherwise LIBSVM when one of the first lines has an ``index:value``
pair after its label, else CSV.

Labels
------
A label written as one of :data:`MISSING` (empty, ``?``, ``NA``, ``N/A``, ``n/a``,
``nan``, ``NaN``, ``NAN``, ``null``, ``NULL``) is *missing*: an
unlabelled row where the algorithm takes them, refused where a label is
required. The other labels are typed once for the whole column: when every one
is a number the labels are numbers (``1``, ``+1`` and ``1.0`` are one class),
else text compared exactly as written (``01`` and ``1`` are two classes).
A model trained by the command line keeps each class as it was first written in
the training file, and ``predict`` writes it so: ``+1`` stays ``+1``, ``1.0``
stays ``1.0``, ``cat`` stays ``cat``.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import lzma
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._models.persistence import atomic_write

#: Label fields that mean "no label" (compared after stripping surrounding spaces).
MISSING = ("", "?", "NA", "N/A", "n/a", "nan", "NaN", "NAN", "null", "NULL")
INDEX_BASES = ("auto", "0", "1")
_INT = re.compile(r"^[+-]?\d+$")
_PAIR = re.compile(r"^(\d+|qid):")
_OPENERS = {b"\x1f\x8b": gzip.open, b"BZh": bz2.open, b"\xfd7zXZ\x00": lzma.open}
_LIBSVM_SUFFIXES = (".svm", ".libsvm", ".svmlight")
_SNIFF_LINES = 100  # lines looked at to tell LIBSVM from CSV in a file without a telling extension


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
        value = _number(marker)
        if self.raw.dtype.kind == "f":
            return self.raw == value if value is not None else np.zeros(self.n_rows, dtype=bool)
        text = np.char.strip(self.raw.astype(str))
        hit = text == marker.strip()
        if value is not None:
            hit |= _numbers_or_nan(text) == value
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
    numbers = _numbers_or_nan(text)
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


def read(path, fmt="auto", *, label_column=None, has_labels=True, header="auto", n_features=None,
         index_base="auto", feature_names=None, base_from=None):
    """Read a data file.

    Parameters
    ----------
    path : str or path-like
    fmt : {"auto", "libsvm", "csv"}
        "auto": ``.csv`` / ``.tsv`` (before any compression suffix) are CSV,
        ``.svm`` / ``.libsvm`` / ``.svmlight`` LIBSVM, others LIBSVM when one of
        the first lines has an ``index:value`` pair after its label, else CSV.
    label_column : None, "first", "last", a column number counted from 1, or a header name
        CSV only. None: "last", or, with ``feature_names`` and a header, the one
        column that is not a feature (no label column when there is none).
    has_labels : bool
        CSV only: False when no column holds labels.
    header : {"auto", "yes", "no"}
        CSV only.
    n_features : int, optional
        LIBSVM only: the number of features to expect (a model's).
    index_base : {"auto", "0", "1"} or {0, 1}
        LIBSVM only: the index of the first feature; "auto": 0 when some row uses
        index 0, else 1.
    feature_names : sequence of str, optional
        CSV only: the model's feature names; a file with a header gives these
        columns, in this order (a missing one is refused).
    base_from : str, optional
        Where a given ``index_base`` comes from, for the message that refuses an
        index below it (default: the option ``--index-base``).

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
        head = _first_lines(path, opener, _SNIFF_LINES)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        msg = f"data file {name!r} cannot be read ({exc})"
        raise DataError(msg) from exc
    if not head:
        msg = f"data file {name!r} has no data rows"
        raise DataError(msg)
    if fmt == "auto":
        fmt = _sniff(path, head)
    try:
        if fmt == "libsvm":
            return _read_libsvm(path, opener, n_features, index_base, base_from)
        return _read_csv(path, opener, head, label_column, has_labels, header, feature_names)
    except DataError:
        raise
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as exc:
        msg = f"data file {name!r} cannot be read ({exc})"
        raise DataError(msg) from exc


def _stem(path):
    stem = path.name.lower()
    for suffix in (".gz", ".bz2", ".xz"):
        stem = stem.removesuffix(suffix)
    return stem


def _sniff(path, head):
    """"csv" or "libsvm" by the extension, else by the first data lines."""
    stem = _stem(path)
    if stem.endswith((".csv", ".tsv")):
        return "csv"
    if stem.endswith(_LIBSVM_SUFFIXES):
        return "libsvm"
    for line in head:  # one line with index:value pairs makes the file LIBSVM: its other lines are checked as such
        tokens = line.split("#", 1)[0].split()
        if "," not in line and "\t" not in line and any(_PAIR.match(t) for t in tokens[1:]):
            return "libsvm"
    return "csv"


def _opener(path):
    with open(path, "rb") as fh:
        magic = fh.read(6)
    for prefix, opener in _OPENERS.items():
        if magic.startswith(prefix):
            return opener
    return open


def _open_text(path, opener, errors="strict"):
    # utf-8-sig: a byte-order mark is not part of the first field
    return opener(path, "rt", encoding="utf-8-sig", errors=errors, newline="")


def _first_lines(path, opener, count):
    """Up to ``count`` first lines with data (not blank, not a # comment)."""
    lines = []
    with _open_text(path, opener) as fh:
        for line in fh:
            if line.strip() and not line.lstrip().startswith("#"):
                lines.append(line.rstrip("\r\n"))
                if len(lines) == count:
                    break
    return lines


# --- LIBSVM -----------------------------------------------------------------------------------


def _read_libsvm(path, opener, n_features, index_base, base_from):
    name = str(path)
    labels, numbers, counts, pairs = [], [], [], []
    with _open_text(path, opener, errors="replace") as fh:  # numbers are ASCII; comments may be anything
        for number, line in enumerate(fh, 1):
            tokens = line.split("#", 1)[0].split()
            if not tokens:
                continue
            if len(tokens) > 1 and tokens[1].startswith("qid:"):
                del tokens[1]
            labels.append(tokens[0])
            numbers.append(number)
            counts.append(len(tokens) - 1)
            pairs.extend(tokens[1:])
    if not labels:
        msg = f"data file {name!r} has no data rows"
        raise DataError(msg)
    numbers = np.asarray(numbers, dtype=np.int64)
    indptr = np.zeros(len(labels) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    raw = np.char.strip(np.asarray(labels, dtype=str))
    bad = ~np.isin(raw, MISSING) & np.isnan(_numbers_or_nan(raw))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        _refuse_libsvm(name, f"line {numbers[row]}: label {labels[row]!r} is not a number")
    indices, values = _parse_pairs(pairs)
    if indices is None:  # a token that is not index:value somewhere: find it
        _refuse_libsvm(name, _bad_pair(numbers, indptr, pairs))
    rows = np.repeat(np.arange(len(labels)), counts)
    # indices increase within a line (the format's rule; a repeated index would be summed silently)
    later = np.ones(indices.size, dtype=bool)
    later[indptr[:-1][np.asarray(counts) > 0]] = False
    unordered = later & (indices <= np.r_[-1, indices[:-1]])
    if unordered.any():
        k = int(np.flatnonzero(unordered)[0])
        _refuse_libsvm(name, f"line {numbers[rows[k]]}: index {indices[k]} after index {indices[k - 1]} "
                             "(indices must increase along a line)")
    base = _index_base(index_base, indices)
    if indices.size and indices.min() < base:
        k = int(np.argmin(indices))
        msg = (f"data file {name!r}, line {numbers[rows[k]]}: index {indices[k]}, but its features are numbered "
               f"from {base} ({base_from or f'--index-base {base}'}); give --index-base 0 if the file counts from 0")
        raise DataError(msg)
    columns = indices - base
    width = int(columns.max()) + 1 if columns.size else 0
    if n_features is not None:
        if width > n_features:
            k = int(np.argmax(columns))
            msg = (f"data file {name!r}, line {numbers[rows[k]]}: index {indices[k]} is beyond the {n_features} "
                   f"features expected (numbered from {base}; --n-features at train sets a larger width)")
            raise DataError(msg)
        width = n_features
    X = sp.csr_matrix((values, columns, indptr), shape=(len(labels), width))
    return Data(X=X, raw=raw, path=name, lines=numbers, index_base=base)


def _refuse_libsvm(name, where):
    msg = f"data file {name!r} is not a valid LIBSVM file ({where})"
    raise DataError(msg)


def _index_base(index_base, indices):
    """0 or 1: as given, or (auto) 0 when some row uses index 0."""
    if index_base in ("auto", None):
        return 0 if indices.size and indices.min() == 0 else 1
    return int(index_base)


_TWO_COLONS = re.compile(r":[^ :]*:")


def _parse_pairs(pairs):
    """(indices int64, values float64) of ``index:value`` tokens, or (None, None) when
    one of them is not such a pair. Checked on the joined text (C loops, not one
    Python call per token): one colon per token, ASCII digits before it."""
    if not pairs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    joined = " ".join(pairs)
    if joined.count(":") != len(pairs) or _TWO_COLONS.search(joined):
        return None, None
    parts = joined.replace(":", " ").split()
    if len(parts) != 2 * len(pairs):  # an empty index or value ("3:", ":1")
        return None, None
    digits = "".join(parts[0::2])
    if not (digits.isascii() and digits.isdigit()):
        return None, None
    try:
        return (np.array(list(map(int, parts[0::2])), dtype=np.int64),
                np.array(parts[1::2], dtype=np.float64))
    except (ValueError, OverflowError):
        return None, None


def _bad_pair(numbers, indptr, pairs):
    """'line N: ...' for the first token that is not ``index:value``."""
    for row, number in enumerate(numbers.tolist()):
        for token in pairs[indptr[row]:indptr[row + 1]]:
            index, colon, value = token.partition(":")
            if not colon or not index.isdigit() or ":" in value or _number(value) is None:
                return f"line {number}: {token!r} is not an index:value pair"
            try:
                np.int64(int(index))
            except OverflowError:
                return f"line {number}: index {index} is too large"
    return "a token is not an index:value pair"


# --- CSV --------------------------------------------------------------------------------------


def _delimiter(path, first):
    if _stem(path).endswith(".tsv") or "\t" in first:
        return "\t"
    if "," in first:
        return ","
    if ";" in first:
        return ";"
    return None  # whitespace


_CSV_CHUNK_ROWS = 65_536  # rows turned into numbers at a time: memory is the matrix, not the file's text


def _csv_records(lines, delimiter):
    """(line number, fields) of each record of numbered ``lines``: blank lines and #
    comment lines skipped, fields stripped of surrounding spaces."""
    starts = []

    def data_lines():
        for number, line in lines:
            if line.strip() and not line.lstrip().startswith("#"):
                starts.append(number)
                yield line.strip() if delimiter is None else line

    if delimiter is None:  # runs of spaces separate fields
        reader = csv.reader(data_lines(), delimiter=" ", skipinitialspace=True)
    else:
        reader = csv.reader(data_lines(), delimiter=delimiter)
    consumed = 0
    for fields in reader:
        number = starts[consumed]
        consumed = reader.line_num
        yield number, [f.strip() for f in fields]


def _read_csv(path, opener, head, label_column, has_labels, header, feature_names):
    name = str(path)
    delimiter = _delimiter(path, head[0])
    first = [fields for _, fields in _csv_records(enumerate(head[:2], 1), delimiter)]
    fields = first[0]
    n_columns = len(fields)
    # a first line holding every name of the model is its header (unless it is all numbers: a data row)
    names_fit = (feature_names is not None and set(feature_names) <= set(fields)
                 and any(_number(f) is None for f in fields))
    if header == "auto":
        header_line = names_fit or _looks_like_header(first, label_column, has_labels, name)
    else:
        header_line = header == "yes"
    named = isinstance(label_column, str) and label_column not in ("first", "last") and not label_column.isdigit()
    if named and not header_line:
        msg = f"`--label-column` {label_column!r} names a column, but {name!r} has no header line"
        raise DataError(msg)
    if header_line and feature_names is not None:
        label, feature_columns = _by_name(fields, feature_names, label_column, has_labels, name)
    else:
        label = _label_index(label_column or "last", fields, n_columns, name) if has_labels else None
        feature_columns = [i for i in range(n_columns) if i != label]
    column_names = [fields[i] if header_line else None for i in feature_columns]
    blocks, labels, lines = [], [], []
    with _open_text(path, opener) as fh:
        records = _csv_records(enumerate(fh, 1), delimiter)
        if header_line:
            next(records)
        chunk, chunk_lines = [], []
        for number, row in records:
            if len(row) != n_columns:
                msg = (f"data file {name!r} is not a valid CSV file: line {number} has {len(row)} fields, the first "
                       f"line has {n_columns}")
                raise DataError(msg)
            chunk.append(row)
            chunk_lines.append(number)
            if len(chunk) == _CSV_CHUNK_ROWS:
                _take(chunk, chunk_lines, feature_columns, label, column_names, name, blocks, labels, lines)
                chunk, chunk_lines = [], []
        if chunk:
            _take(chunk, chunk_lines, feature_columns, label, column_names, name, blocks, labels, lines)
    if not blocks:
        msg = f"data file {name!r} has no data rows"
        raise DataError(msg)
    X = np.concatenate(blocks) if len(blocks) > 1 else blocks[0]
    raw = (np.concatenate(labels) if len(labels) > 1 else labels[0]) if label is not None else None
    names = None
    if header_line:
        names = tuple(column_names)
        if len(set(names)) != len(names) or "" in names:
            names = None  # repeated or empty names cannot be matched: columns by position
    return Data(X=X, raw=raw, path=name, lines=np.concatenate(lines), names=names)


def _take(chunk, chunk_lines, feature_columns, label, column_names, name, blocks, labels, lines):
    """Turn a chunk of records into its float64 rows, its labels and its line numbers."""
    table = np.asarray(chunk, dtype=str).reshape(len(chunk), -1)
    blocks.append(_numbers(table[:, feature_columns], column_names, chunk_lines, name))
    if label is not None:
        labels.append(table[:, label])
    lines.append(np.asarray(chunk_lines, dtype=np.int64))


def _looks_like_header(rows, label_column, has_labels, name):
    """Whether the first row is a header: a non-numeric feature field, or a non-numeric
    label over a numeric one on the next row; a first row holding the named label column."""
    fields = rows[0]
    if isinstance(label_column, str) and label_column not in ("first", "last") and not label_column.isdigit():
        return label_column in fields or any(_number(f) is None for f in fields)
    label = _label_index(label_column or "last", fields, len(fields), name) if has_labels else None
    if any(_number(f) is None for i, f in enumerate(fields) if i != label):
        return True
    if label is not None and _number(fields[label]) is None and fields[label] not in MISSING and len(rows) > 1:
        return _number(rows[1][label]) is not None
    return False


def _by_name(fields, feature_names, label_column, has_labels, name):
    """(label column or None, feature columns in the model's order) of a header that
    holds every name of ``feature_names``."""
    missing = [n for n in feature_names if n not in fields]
    if missing:
        shown = ", ".join(map(repr, missing[:10])) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        msg = f"data file {name!r} lacks the model's feature column{'s' if len(missing) > 1 else ''} {shown}"
        raise DataError(msg)
    repeated = sorted({f for f in fields if fields.count(f) > 1 and f in feature_names})
    if repeated:
        msg = f"data file {name!r}: the header names {', '.join(map(repr, repeated))} more than once"
        raise DataError(msg)
    features = set(feature_names)
    extra = [i for i, f in enumerate(fields) if f not in features]
    if label_column is not None and has_labels:
        label = _label_index(label_column, fields, len(fields), name)
        if label not in extra:
            msg = f"`--label-column` {label_column!r} of {name!r} is the model's feature {fields[label]!r}"
            raise DataError(msg)
    elif not has_labels or not extra:
        label = None
    elif len(extra) == 1:
        label = extra[0]
    else:
        label = None
    others = [fields[i] for i in extra if i != label]
    if others:
        msg = (f"data file {name!r}: column{'s' if len(others) > 1 else ''} {', '.join(map(repr, others))} "
               f"{'are not features' if len(others) > 1 else 'is not a feature'} of the model"
               + ("; name the label column with --label-column" if label is None and has_labels else ""))
        raise DataError(msg)
    return label, [fields.index(n) for n in feature_names]


def _numbers(table, names, lines, name):
    """The float64 matrix of a table of fields; a field that is not a number is refused
    with its line and column."""
    try:
        return table.astype(np.float64).reshape(table.shape)
    except ValueError:
        pass
    for r, row in enumerate(table.tolist()):
        for c, text in enumerate(row):
            if _number(text) is None:
                column = repr(names[c]) if names[c] is not None else f"{c + 1} of the features"
                msg = (f"data file {name!r} is not a valid CSV file of numbers: line {lines[r]}, column {column}: "
                       f"{text!r} is not a number")
                raise DataError(msg)
    return table.astype(np.float64)


def _label_index(label_column, fields, n_columns, name):
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
    if label_column not in fields:
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
