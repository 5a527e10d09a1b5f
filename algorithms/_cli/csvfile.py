"""CSV / TSV files for the command line, read with the :mod:`csv` module: the header
detected, columns taken by the model's feature names where both have them, rows turned
into numbers a chunk at a time, every bad field refused with its line and column."""

from __future__ import annotations

import csv

import numpy as np

from .data import MISSING, Data, DataError, as_number, open_text, stem


def _delimiter(path, first):
    if stem(path).endswith(".tsv") or "\t" in first:
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


def read_csv(path, opener, head, label_column, has_labels, header, feature_names):
    """A CSV / TSV file as :class:`Data` (dense rows, labels as written, each row's
    line, the header's feature names); ``head`` holds its first data lines. See
    :func:`algorithms._cli.datafile.read`."""
    name = str(path)
    delimiter = _delimiter(path, head[0])
    first = [fields for _, fields in _csv_records(enumerate(head[:2], 1), delimiter)]
    fields = first[0]
    n_columns = len(fields)
    # a first line holding every name of the model is its header (unless it is all numbers: a data row)
    names_fit = (feature_names is not None and set(feature_names) <= set(fields)
                 and any(as_number(f) is None for f in fields))
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
    with open_text(path, opener) as fh:
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
        return label_column in fields or any(as_number(f) is None for f in fields)
    label = _label_index(label_column or "last", fields, len(fields), name) if has_labels else None
    if any(as_number(f) is None for i, f in enumerate(fields) if i != label):
        return True
    if label is not None and as_number(fields[label]) is None and fields[label] not in MISSING and len(rows) > 1:
        return as_number(rows[1][label]) is not None
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
            if as_number(text) is None:
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
