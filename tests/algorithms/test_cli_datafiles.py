"""The command line reads data files as written (issue 27, deliverable 2): CSV columns by
header name, the LIBSVM index base kept in the model, a UTF-8 byte-order mark, missing-label
markers, labels written back as the training file wrote them, malformed LIBSVM refused with
its line (never read as CSV), a label column that cannot be found refused in one line.

Each test compares with the in-memory fit on the same arrays where a prediction is involved:
the command line must give what ``algorithms.dsg`` gives on the rows the file holds."""

import json
from pathlib import Path

import numpy as np
import pytest

import algorithms
from algorithms import dsg
from algorithms._cli.main import main

FAST = ["--n-iter", "5", "--batch-size", "16", "--block-size", "8", "--quiet"]
IN_MEMORY = {"n_iter": 5, "batch_size": 16, "block_size": 8, "random_state": 0}

RNG = np.random.default_rng(3)
X = RNG.normal(size=(80, 3))
Y = np.where(X[:, 0] - X[:, 2] > 0, 1, -1)


def _fails(argv, capsys):
    """(exit code, the one error line) of a command that fails."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return stop.value.code, err[0]


def _train_predict(tmp, train, test, *extra):
    """The prediction lines of a dsg model trained on ``train`` and applied to ``test``."""
    model, out = tmp / "m.npz", tmp / "p.txt"
    assert main(["train", str(train), str(model), *FAST, *extra]) == 0
    assert main(["predict", str(model), str(test), str(out)]) == 0
    return out.read_text().splitlines(), algorithms.load(model)


def _expected(X_train, y_train, X_test, spell=str):
    model = dsg.fit(X_train, y_train, **IN_MEMORY)
    return [spell(v) for v in dsg.predict(model, X_test).tolist()]


def _csv(path, header, columns, labels=None, bom=False):
    """A CSV of ``columns`` (numbers written exactly, text as it is), then ``labels``."""
    columns = [*columns, *([labels] if labels is not None else [])]
    cells = [[v if isinstance(v, str) else repr(float(v)) for v in column] for column in columns]
    rows = [",".join(row) for row in zip(*cells)]
    text = ("\ufeff" if bom else "") + "\n".join(([",".join(header)] if header else []) + rows) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def _svm(path, rows, labels, base=1, skip=(), bom=False):
    """A LIBSVM file numbering features from ``base``, leaving out the columns in ``skip``."""
    lines = [f"{label} " + " ".join(f"{j + base}:{float(v)!r}" for j, v in enumerate(row) if j not in skip)
             for row, label in zip(rows, labels)]
    path.write_text(("\ufeff" if bom else "") + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_csv_columns_are_matched_by_header_name(tmp_path, capsys):
    labels = [str(v) for v in Y]
    train = _csv(tmp_path / "train.csv", ["a", "b", "c", "label"], X.T, labels)
    # the same rows, the columns in another order: taken by name, not by position
    shuffled = _csv(tmp_path / "test.csv", ["c", "label", "a", "b"], [X[:, 2], labels, X[:, 0], X[:, 1]])
    lines, model = _train_predict(tmp_path, train, shuffled)
    assert lines == _expected(X, Y, X)
    assert model.feature_names == ("a", "b", "c")
    # a feature the model needs is not in the file: refused, naming it
    _csv(tmp_path / "lacks.csv", ["a", "c", "label"], [X[:, 0], X[:, 2]], labels)
    code, line = _fails(["predict", str(tmp_path / "m.npz"), str(tmp_path / "lacks.csv"), str(tmp_path / "q.txt")],
                        capsys)
    assert code == 1 and "lacks the model's feature column 'b'" in line
    # a model without names (a file without a header) takes columns by position, as before
    plain = _csv(tmp_path / "plain.csv", None, X.T, labels)
    lines, model = _train_predict(tmp_path, plain, plain)
    assert model.feature_names is None and lines == _expected(X, Y, X)


def test_libsvm_index_base_is_kept_in_the_model(tmp_path, capsys):
    train = _svm(tmp_path / "train.svm", X, Y, base=0)
    # 0-based too, but no row uses index 0 (feature 0 is zero on every row): read with the model's base
    test = _svm(tmp_path / "test.svm", X, Y, base=0, skip={0})
    lines, model = _train_predict(tmp_path, train, test)
    X_test = X.copy()
    X_test[:, 0] = 0.0
    assert lines == _expected(X, Y, X_test)
    assert model.index_base == 0 and model.n_features_in == 3
    # a 1-based model given a file that uses index 0: refused, not shifted
    one = _svm(tmp_path / "one.svm", X, Y, base=1)
    assert main(["train", str(one), str(tmp_path / "one.npz"), *FAST]) == 0
    assert algorithms.load(tmp_path / "one.npz").index_base == 1
    code, line = _fails(["predict", str(tmp_path / "one.npz"), str(train), str(tmp_path / "q.txt")], capsys)
    assert code == 1 and "line 1: index 0" in line and "--index-base 0" in line
    # the base given by the user: index 1 is the second feature of a 0-based file
    assert main(["train", str(test), str(tmp_path / "given.npz"), "--index-base", "0", *FAST]) == 0
    assert algorithms.load(tmp_path / "given.npz").n_features_in == 3


def test_a_byte_order_mark_is_not_data(tmp_path):
    labels = [str(v) for v in Y]
    for path in (_csv(tmp_path / "bom.csv", None, X.T, labels, bom=True),
                 _svm(tmp_path / "bom.svm", X, Y, bom=True)):
        lines, _ = _train_predict(tmp_path, path, path)
        assert len(lines) == len(Y)  # the first row is a row, not a header
        assert lines == _expected(X, Y, X)


@pytest.mark.parametrize("marker", ["NA", "nan", "N/A", "null", "?", ""])
def test_missing_label_markers(tmp_path, capsys, marker):
    labels = [str(v) for v in Y]
    for row in (1, 4, 9):
        labels[row] = marker
    data = _csv(tmp_path / "d.csv", ["a", "b", "c", "y"], X.T, labels)
    # a label is required: refused, naming the lines (the header is line 1) and the count
    code, line = _fails(["train", str(data), str(tmp_path / "m.npz"), *FAST], capsys)
    assert code == 1 and "3 of 80 rows have no label (lines 3, 6, 11" in line
    # tsgs3vm takes them as its unlabelled rows
    assert main(["train", str(data), str(tmp_path / "m.npz"), "--algo", "tsgs3vm", *FAST]) == 0
    assert "77 labelled rows (classes -1, 1), 3 unlabelled rows" in capsys.readouterr().out
    assert algorithms.load(tmp_path / "m.npz").class_labels == ("-1", "1")


@pytest.mark.parametrize(("positive", "negative"), [("+1", "-1"), ("1.0", "-1.0"), ("01", "a"), ("x, y", "z")])
def test_labels_come_back_as_written(tmp_path, positive, negative):
    labels = [positive if v > 0 else negative for v in Y]
    numbers = all(v.lstrip("+-").replace(".", "", 1).isdigit() for v in (positive, negative))
    if numbers:  # LIBSVM and CSV
        paths = [_svm(tmp_path / "d.svm", X, labels), _csv(tmp_path / "d.csv", None, X.T, labels)]
    else:  # text (01 and a: a is no number, so 01 is text), quoted where it holds the delimiter
        paths = [_csv(tmp_path / "d.csv", None, X.T, [f'"{v}"' for v in labels])]
    y = np.array(labels, dtype=float if numbers else str)  # the classes the file's labels make
    for path in paths:
        lines, model = _train_predict(tmp_path, path, path)
        assert set(lines) <= {positive, negative}
        spelled = dict(zip(model.classes.tolist(), model.class_labels))
        assert lines == _expected(X, y, X, spell=spelled.__getitem__)


def test_malformed_libsvm_is_refused_and_never_read_as_csv(tmp_path, capsys):
    cases = {
        # the first line lacks its indices: once taken for a whitespace CSV and trained on
        "first.txt": ("1 0.5 0.3\n-1 1:0.2 2:0.1\n1 1:0.4 2:0.3\n", "line 1: '0.5' is not an index:value pair"),
        "plain.svm": ("+1 0.5 0.3\n-1 0.2 0.1\n", "line 1: '0.5' is not an index:value pair"),
        # two tokens whose colons add up: "1:2:3 4" is not two pairs
        "colons.svm": ("1 1:0.5\n-1 1:2:3 4\n", "line 2: '1:2:3' is not an index:value pair"),
        "order.svm": ("1 1:0.5 2:0.1\n-1 3:2 2:1\n", "line 2: index 2 after index 3"),
        "repeat.svm": ("1 1:0.5 1:0.1\n", "line 1: index 1 after index 1"),
        "label.svm": ("1 1:0.5\nNA? 1:0.1\n", "line 2: label 'NA?' is not a number"),
    }
    for name, (text, what) in cases.items():
        (tmp_path / name).write_text(text)
        code, line = _fails(["train", str(tmp_path / name), str(tmp_path / "m.npz"), *FAST], capsys)
        assert code == 1 and "not a valid LIBSVM file" in line and what in line, (name, line)
    assert not (tmp_path / "m.npz").exists()


def test_a_label_column_that_cannot_be_found_is_refused(tmp_path, capsys):
    labels = [str(v) for v in Y]
    data = _csv(tmp_path / "d.csv", ["a", "b", "c", "y"], X.T, labels)
    code, line = _fails(["train", str(data), str(tmp_path / "m.npz"), "--label-column", "answer", *FAST], capsys)
    assert code == 1 and "`--label-column` 'answer' is not a column" in line
    assert main(["train", str(data), str(tmp_path / "m.npz"), *FAST]) == 0
    # two columns the model does not know: which one holds the labels cannot be told
    two = _csv(tmp_path / "two.csv", ["id", "a", "b", "c", "y"], [np.arange(80), *X.T], labels)
    code, line = _fails(["predict", str(tmp_path / "m.npz"), str(two), str(tmp_path / "p.txt")], capsys)
    assert code == 1 and "'id', 'y' are not features of the model" in line and "--label-column" in line
    code, line = _fails(["predict", str(tmp_path / "m.npz"), str(two), str(tmp_path / "p.txt"), "--label-column",
                         "y"], capsys)
    assert code == 1 and "column 'id' is not a feature of the model" in line


def test_a_csv_is_read_in_chunks_the_same(tmp_path, monkeypatch, capsys):
    """Rows become numbers a chunk at a time (memory: the matrix, not the file's text); the
    result and the line named by an error do not depend on the chunk size."""
    from algorithms._cli import csvfile, datafile

    labels = [str(v) for v in Y]
    path = _csv(tmp_path / "d.csv", ["a", "b", "c", "y"], X.T, labels)
    whole = datafile.read(path)
    monkeypatch.setattr(csvfile, "_CSV_CHUNK_ROWS", 7)
    chunked = datafile.read(path)
    assert chunked.X.tobytes() == whole.X.tobytes() and chunked.raw.tolist() == whole.raw.tolist() == labels
    assert chunked.lines.tolist() == list(range(2, 82)) and chunked.names == ("a", "b", "c")
    text = path.read_text().splitlines()
    text[60] = text[60].replace(",", ",x", 1)
    path.write_text("\n".join(text) + "\n")
    code, line = _fails(["train", str(path), str(tmp_path / "m.npz"), *FAST], capsys)
    assert code == 1 and "line 61, column 'b': 'x" in line


def test_the_model_file_keeps_names_base_and_labels(tmp_path):
    """Format 4 writes the three fields and reads them back; other values are refused by
    load, naming the file; files of earlier formats load with None (test_models_format3)."""
    from algorithms._models.persistence import FORMAT_VERSION

    assert FORMAT_VERSION >= 4
    old = algorithms.load(Path(__file__).parent / "data" / "models_format3" / "dsg_3class.npz")
    assert (old.feature_names, old.index_base, old.class_labels) == (None, None, None)
    model = dsg.fit(X, Y, **IN_MEMORY)
    assert (model.feature_names, model.index_base, model.class_labels) == (None, None, None)
    named = type(model)(**{**model.__dict__, "feature_names": ("a", "b", "c"), "index_base": 0,
                           "class_labels": ("-1", "+1")})
    back = algorithms.load(named.save(tmp_path / "m.npz"))
    assert (back.feature_names, back.index_base, back.class_labels) == (("a", "b", "c"), 0, ("-1", "+1"))
    for field, value in (("feature_names", [1, 2, 3]), ("index_base", 2), ("class_labels", "ab")):
        with np.load(tmp_path / "m.npz") as f:
            arrays = {k: f[k] for k in f.files}
        header = json.loads(bytes(arrays.pop("__header__")).decode())
        header["fields"][field] = value
        bad = tmp_path / f"bad_{field}.npz"
        np.savez(bad, __header__=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8), **arrays)
        with pytest.raises(ValueError, match=f"bad_{field}.npz.*`{field}`"):
            algorithms.load(bad)


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1"])
def test_a_file_in_another_encoding_is_refused_saying_to_save_it_as_utf8(tmp_path, capsys, encoding):
    path = tmp_path / "enc.csv"
    path.write_text("f\xe9,g,label\n1,2,1\n3,4,-1\n", encoding=encoding)
    code, line = _fails(["train", str(path), str(tmp_path / "m.npz")], capsys)
    assert code == 1 and "enc.csv' is not UTF-8 text" in line and "save it as UTF-8" in line
