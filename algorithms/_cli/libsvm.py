"""LIBSVM / svmlight files for the command line: ``label index:value ...`` per line,
parsed here so that every malformed line is refused with its number, the labels are
kept as written and the index base is decided (or checked) once for the file."""

from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp

from .data import MISSING, Data, DataError, as_number, numbers_or_nan, open_text


def read_libsvm(path, opener, n_features, index_base, base_from):
    """A LIBSVM file as :class:`Data` (CSR rows, labels as written, each row's line
    and the index base read with); see :func:`algorithms._cli.datafile.read`."""
    name = str(path)
    labels, numbers, counts, pairs = [], [], [], []
    with open_text(path, opener, errors="replace") as fh:  # numbers are ASCII; comments may be anything
        for line_no, line in enumerate(fh, 1):
            tokens = line.split("#", 1)[0].split()
            if not tokens:
                continue
            if len(tokens) > 1 and tokens[1].startswith("qid:"):
                del tokens[1]
            labels.append(tokens[0])
            numbers.append(line_no)
            counts.append(len(tokens) - 1)
            pairs.extend(tokens[1:])
    if not labels:
        msg = f"data file {name!r} has no data rows"
        raise DataError(msg)
    numbers = np.asarray(numbers, dtype=np.int64)
    indptr = np.zeros(len(labels) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    raw = np.char.strip(np.asarray(labels, dtype=str))
    bad = ~np.isin(raw, MISSING) & np.isnan(numbers_or_nan(raw))
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
    for row, line_no in enumerate(numbers.tolist()):
        for token in pairs[indptr[row]:indptr[row + 1]]:
            index, colon, value = token.partition(":")
            if not colon or not index.isdigit() or ":" in value or as_number(value) is None:
                return f"line {line_no}: {token!r} is not an index:value pair"
            try:
                np.int64(int(index))
            except OverflowError:
                return f"line {line_no}: index {index} is too large"
    return "a token is not an index:value pair"
