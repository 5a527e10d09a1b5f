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
from pathlib import Path

from .._models.persistence import atomic_write
from .csvfile import read_csv
from .data import (
    MISSING,
    Data,
    DataError,
    accuracy,
    format_labels,
    open_text,
    spelled_classes,
    stem,
    typed_labels,
    written_labels,
)
from .libsvm import read_libsvm

__all__ = ["INDEX_BASES", "MISSING", "Data", "DataError", "accuracy", "check_output_path", "format_labels", "read",
           "same_file", "spelled_classes", "typed_labels", "write_lines", "written_labels"]

INDEX_BASES = ("auto", "0", "1")
_PAIR = re.compile(r"^(\d+|qid):")
_OPENERS = {b"\x1f\x8b": gzip.open, b"BZh": bz2.open, b"\xfd7zXZ\x00": lzma.open}
_LIBSVM_SUFFIXES = (".svm", ".libsvm", ".svmlight")
_SNIFF_LINES = 100  # lines looked at to tell LIBSVM from CSV in a file without a telling extension


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
        raise DataError(_unreadable(name, exc)) from exc
    if not head:
        msg = f"data file {name!r} has no data rows"
        raise DataError(msg)
    if fmt == "auto":
        fmt = _sniff(path, head)
    try:
        if fmt == "libsvm":
            return read_libsvm(path, opener, n_features, index_base, base_from)
        return read_csv(path, opener, head, label_column, has_labels, header, feature_names)
    except DataError:
        raise
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(_unreadable(name, exc)) from exc


def _unreadable(name, exc):
    """The message of a file that cannot be read; one in another encoding says what to do."""
    if isinstance(exc, UnicodeDecodeError):
        return f"data file {name!r} is not UTF-8 text ({exc}): save it as UTF-8 (or ASCII)"
    return f"data file {name!r} cannot be read ({exc})"


def _sniff(path, head):
    """"csv" or "libsvm" by the extension, else by the first data lines."""
    base_name = stem(path)
    if base_name.endswith((".csv", ".tsv")):
        return "csv"
    if base_name.endswith(_LIBSVM_SUFFIXES):
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


def _first_lines(path, opener, count):
    """Up to ``count`` first lines with data (not blank, not a # comment)."""
    lines = []
    with open_text(path, opener) as fh:
        for line in fh:
            if line.strip() and not line.lstrip().startswith("#"):
                lines.append(line.rstrip("\r\n"))
                if len(lines) == count:
                    break
    return lines


# --- LIBSVM -----------------------------------------------------------------------------------


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
