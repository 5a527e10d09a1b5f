"""Model files: round trips for every model type and label dtype, atomic saves, bad files."""

import bz2
import gzip
import json
import os
import zipfile

import numpy as np
import pytest

import algorithms
from algorithms import dsg, s3gd, sbp, tsgs3vm, tsgsu
from algorithms._models import persistence as _model

RNG = np.random.default_rng(0)
X = RNG.normal(size=(120, 3))
POSITIVE = X[:, 0] + 0.3 * X[:, 1] > 0

LABELS = {
    "int": np.where(POSITIVE, 3, -7),
    "float": np.where(POSITIVE, 1.0, -2.0),  # integral: continuous labels are not classes
    "bool": POSITIVE,
    "str": np.where(POSITIVE, "yes", "no"),
    "object": np.where(POSITIVE, "spam", "ham").astype(object),  # a pandas string column
}

FAST = {"n_iter": 3, "batch_size": 32, "block_size": 8, "random_state": 0}


def _fit(kind, X, y):
    """One fitted model of each of the six kinds the library writes, in X's dtype (the
    engine's fits and SBP compute in float32 by default: asked for X's dtype here)."""
    FAST_RFF = {**FAST, "dtype": X.dtype.name}
    if kind == "dsg_classifier":
        return dsg.fit(X, y, **FAST_RFF)
    if kind == "dsg_regressor":
        return dsg.fit(X, X[:, 0] - X[:, 1], loss="squared", **FAST_RFF)
    if kind == "tsgs3vm":
        return tsgs3vm.fit(X[:40], y[:40], X_unlabeled=X[40:], **FAST_RFF)
    if kind == "tsgsu":
        model = tsgsu.fit(X[:40], X[40:], prior=0.6, **FAST_RFF)
        # the command line names tsgsu's classes after the user's labels
        return model if y is None else _with_classes(model, np.unique(y))
    if kind == "sbp":
        return sbp.fit(X, y, nu=0.05, n_iter=40, random_state=0, dtype=X.dtype.name)
    return s3gd.fit(X, y, max_epochs=1.0, random_state=0)


def _with_classes(model, classes):
    import dataclasses

    return dataclasses.replace(model, classes=classes)


KINDS = ("dsg_classifier", "dsg_regressor", "tsgs3vm", "tsgsu", "sbp", "s3gd")
PREDICT = {"dsg_classifier": dsg, "dsg_regressor": dsg, "tsgs3vm": tsgs3vm, "tsgsu": tsgsu, "sbp": sbp, "s3gd": s3gd}


@pytest.mark.parametrize("label_kind", sorted(LABELS))
@pytest.mark.parametrize("kind", KINDS)
def test_round_trip_every_model_type_and_label_dtype(kind, label_kind, dtype_name, tmp_path):
    Xd = X.astype(dtype_name)
    y = LABELS[label_kind]
    model = _fit(kind, Xd, y)
    path = model.save(tmp_path / "m.npz")
    loaded = algorithms.load(path)
    assert type(loaded) is type(model)
    assert loaded.dtype == model.dtype == dtype_name
    for name in model.ARRAYS:
        np.testing.assert_array_equal(getattr(loaded, name), getattr(model, name))
    if model.classes is None:
        assert loaded.classes is None
    else:
        assert loaded.classes.dtype.kind == np.asarray(model.classes).dtype.kind
        assert loaded.classes.tolist() == np.asarray(model.classes).tolist()
        assert [type(v) for v in loaded.classes.tolist()] == [type(v) for v in np.asarray(model.classes).tolist()]
    predict = PREDICT[kind].predict
    before, after = predict(model, Xd), predict(loaded, Xd)
    np.testing.assert_array_equal(after, before)
    if model.classes is not None:
        assert after.dtype.kind == np.asarray(model.classes).dtype.kind
        assert set(after.tolist()) <= set(np.asarray(y).tolist())


def test_object_classes_are_stored_without_pickle(tmp_path):
    model = _fit("s3gd", X, LABELS["object"])
    path = model.save(tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as data:
        assert "classes" not in data.files  # no object array in the archive
        header = json.loads(bytes(data["__header__"]).decode())
    assert header["format_version"] == _model.FORMAT_VERSION
    assert header["classes"] == {"dtype": "object", "values": ["ham", "spam"]}


def test_object_classes_with_mixed_python_and_numpy_scalars(tmp_path):
    model = _with_classes(_fit("s3gd", X, LABELS["int"]), np.array([np.int64(-7), 3], dtype=object))
    loaded = algorithms.load(model.save(tmp_path / "m.npz"))
    assert loaded.classes.dtype == object and loaded.classes.tolist() == [-7, 3]


def test_unsaveable_classes_fail_before_touching_the_file(tmp_path):
    path = tmp_path / "m.npz"
    path.write_bytes(b"previous")
    model = _with_classes(_fit("s3gd", X, LABELS["int"]), np.array([(1, 2), None], dtype=object))
    with pytest.raises(ValueError, match="`classes` must be 1-D labels of str, int, float or bool"):
        model.save(path)
    assert path.read_bytes() == b"previous"
    assert os.listdir(tmp_path) == ["m.npz"]


def test_format_1_files_still_load(tmp_path):
    """A file as the code before format 2 wrote it (classes an array, version 1)."""
    model = _fit("dsg_classifier", X, LABELS["str"])
    header = {
        "format_version": 1,
        "type": "RFFModel",
        "fields": {f: _model._jsonable(getattr(model, f)) for f in
                   ("algorithm", "seed", "block_size", "n_blocks", "kernel", "gamma", "n_features_in", "task",
                    "params", "backend", "dtype")},
    }
    path = tmp_path / "old.npz"
    with open(path, "wb") as fh:
        np.savez(fh, __header__=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
                 coef=model.coef, intercept=model.intercept, classes=model.classes)
    loaded = algorithms.load(path)
    np.testing.assert_array_equal(dsg.predict(loaded, X), dsg.predict(model, X))


def _format_1_file(path, model, classes):
    """A file as main's writer before format 2 made it: np.savez pickles object classes."""
    header = {
        "format_version": 1,
        "type": "LinearModel",
        "fields": {f: _model._jsonable(getattr(model, f)) for f in
                   ("algorithm", "n_features_in", "params", "backend", "dtype")},
    }
    with open(path, "wb") as fh:
        np.savez(fh, __header__=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
                 coef=model.coef, intercept=model.intercept, classes=classes)
    return path


def test_format_1_files_with_object_classes_are_rescued(tmp_path):
    """Format 1 saved object classes pickled and could not load them; now they load,
    by an unpickler that builds nothing but NumPy arrays and scalars."""
    model = _fit("s3gd", X, LABELS["object"])
    path = _format_1_file(tmp_path / "old.npz", model, model.classes)
    loaded = algorithms.load(path)
    assert loaded.classes.dtype == object and loaded.classes.tolist() == ["ham", "spam"]
    np.testing.assert_array_equal(s3gd.predict(loaded, X), s3gd.predict(model, X))
    mixed = np.array([np.int64(-7), 3], dtype=object)
    assert algorithms.load(_format_1_file(tmp_path / "ints.npz", model, mixed)).classes.tolist() == [-7, 3]


class _Payload:
    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))  # would create the file if it were ever called


def test_a_pickle_that_calls_anything_else_is_refused_unrun(tmp_path):
    model = _fit("s3gd", X, LABELS["int"])
    target = tmp_path / "pwned"
    evil = np.empty(2, dtype=object)
    evil[:] = [_Payload(str(target)), "b"]
    path = _format_1_file(tmp_path / "evil.npz", model, evil)
    with pytest.raises(ValueError, match=r"refers to (io|builtins)\.open, which is not loaded"):
        algorithms.load(path)
    assert not target.exists()


def test_newer_format_is_refused_with_a_clear_message(tmp_path):
    path = _model_with_header(tmp_path, format_version=_model.FORMAT_VERSION + 1)
    with pytest.raises(ValueError, match=r"newer version of this library.*upgrade") as info:
        algorithms.load(path)
    assert str(path) in str(info.value)


# --- an interrupted save ---------------------------------------------------------------------


def test_a_save_interrupted_by_an_io_error_keeps_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "m.npz"
    old = _fit("s3gd", X, LABELS["int"])
    old.save(path)
    before = path.read_bytes()
    new = _fit("sbp", X, LABELS["str"])

    real_savez = np.savez

    def savez_then_disk_full(fh, **arrays):
        fh.write(b"PK\x03\x04 half a model")
        fh.flush()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", savez_then_disk_full)
    with pytest.raises(OSError, match="No space left"):
        new.save(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.npz"]  # no temporary file left behind
    monkeypatch.setattr(np, "savez", real_savez)
    assert algorithms.load(path).algorithm == "s3gd"


def test_a_failing_fsync_keeps_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "m.npz"
    _fit("s3gd", X, LABELS["int"]).save(path)
    before = path.read_bytes()

    def fsync_fails(fd):
        raise OSError(122, "Disk quota exceeded")

    monkeypatch.setattr(os, "fsync", fsync_fails)
    with pytest.raises(OSError, match="quota"):
        _fit("dsg_classifier", X, LABELS["int"]).save(path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["m.npz"]


def test_save_replaces_and_keeps_usual_permissions(tmp_path):
    path = tmp_path / "m.npz"
    _fit("s3gd", X, LABELS["int"]).save(path)
    _fit("sbp", X, LABELS["int"]).save(path)
    assert algorithms.load(path).algorithm == "sbp"
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_save_errors_name_the_path(tmp_path):
    model = _fit("s3gd", X, LABELS["int"])
    with pytest.raises(IsADirectoryError, match="is a directory"):
        model.save(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        model.save(tmp_path / "missing" / "m.npz")


# --- files that are not models ---------------------------------------------------------------


def _model_with_header(tmp_path, **changes):
    model = _fit("s3gd", X, LABELS["int"])
    path = model.save(tmp_path / "good.npz")
    with np.load(path) as data:
        header = json.loads(bytes(data["__header__"]).decode())
        arrays = {k: data[k] for k in data.files if k != "__header__"}
    for key, value in changes.items():
        if key.startswith("fields."):
            header["fields"][key.split(".", 1)[1]] = value
        else:
            header[key] = value
    out = tmp_path / "edited.npz"
    np.savez(out, __header__=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8), **arrays)
    return out


def _truncated(tmp_path):
    good = _fit("s3gd", X, LABELS["int"]).save(tmp_path / "full.npz").read_bytes()
    path = tmp_path / "truncated.npz"
    path.write_bytes(good[: len(good) // 2])
    return path


def _no_header_zip(tmp_path):
    path = tmp_path / "plain.npz"
    np.savez(path, a=np.ones(3))
    return path


def _zip_of_text(tmp_path):
    path = tmp_path / "notes.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    return path


def _write(name, data):
    def make(tmp_path):
        path = tmp_path / name
        path.write_bytes(data)
        return path

    return make


def _npy(tmp_path):
    path = tmp_path / "array.npy"
    np.save(path, np.arange(4.0))
    return path


BAD_FILES = {
    "text file": (_write("model.txt", b"1 2 3\nnot a model\n"), "not a .npz archive"),
    "npy": (_npy, "NumPy .npy array"),
    "empty": (_write("empty.npz", b""), "is empty"),
    "truncated": (_truncated, "truncated or corrupt"),
    "zip without header": (_no_header_zip, "without the model header"),
    "zip of other files": (_zip_of_text, "without the model header"),
    "gzip": (_write("m.npz.gz", gzip.compress(b"hello")), "not a .npz archive"),
    "bz2": (_write("m.npz.bz2", bz2.compress(b"hello")), "not a .npz archive"),
    "unknown model type": (lambda p: _model_with_header(p, type="SVMModel"), "unknown model type 'SVMModel'"),
    "unknown algorithm": (lambda p: _model_with_header(p, **{"fields.algorithm": "xgboost"}),
                          "unknown algorithm 'xgboost'"),
    "bad version": (lambda p: _model_with_header(p, format_version="2"), "no valid format version"),
    "unexpected field": (lambda p: _model_with_header(p, **{"fields.colour": "red"}), "unexpected \\['colour'\\]"),
    "bad classes": (lambda p: _model_with_header(p, classes={"dtype": "object", "values": [[1]]}),
                    "`classes` holds values"),
    "not json": (lambda p: _header_bytes(p, b"\xff{"), "header is not valid JSON"),
}


def _header_bytes(tmp_path, raw):
    path = tmp_path / "raw.npz"
    np.savez(path, __header__=np.frombuffer(raw, dtype=np.uint8))
    return path


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_load_of_anything_but_a_model_is_a_value_error_naming_the_file(case, tmp_path):
    make, what = BAD_FILES[case]
    path = make(tmp_path)
    with pytest.raises(ValueError, match=what) as info:
        algorithms.load(path)
    message = str(info.value)
    assert repr(str(path)) in message and "is not a model file of this library" in message


def test_load_of_a_directory_or_a_missing_file(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        algorithms.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        algorithms.load(tmp_path / "nothing.npz")


def test_sparse_support_vectors_are_saved_sparse(tmp_path):
    """Format 3: an SBP fitted on CSR rows keeps its support vectors CSR in the file
    (their non-zeros only) and loads back CSR, predicting the same."""
    import scipy.sparse as sp

    Xs = sp.random(150, 400, density=0.02, random_state=0, format="csr")
    sums = np.asarray(Xs.sum(axis=1)).ravel()
    y = np.where(sums > np.median(sums), 1, -1)
    model = sbp.fit(Xs, y, nu=0.05, n_iter=60, random_state=0)
    path = model.save(tmp_path / "m.npz")
    with np.load(path) as data:
        assert "support_vectors" not in data.files
        assert data["support_vectors.data"].size == model.support_vectors.nnz
    loaded = algorithms.load(path)
    assert sp.issparse(loaded.support_vectors)
    assert (loaded.support_vectors != model.support_vectors).nnz == 0
    np.testing.assert_array_equal(sbp.decision_function(loaded, Xs), sbp.decision_function(model, Xs))


def test_a_broken_sparse_field_is_refused(tmp_path):
    import scipy.sparse as sp

    Xs = sp.random(60, 50, density=0.1, random_state=1, format="csr")
    model = sbp.fit(Xs, np.arange(60) % 2, nu=0.05, n_iter=30, random_state=0)
    path = model.save(tmp_path / "m.npz")
    with np.load(path) as data:
        parts = {k: data[k] for k in data.files}
    parts["support_vectors.indices"] = parts["support_vectors.indices"] + 1000  # columns out of range
    with open(path, "wb") as fh:
        np.savez(fh, **parts)
    with pytest.raises(ValueError, match="sparse array 'support_vectors' is not a valid CSR matrix"):
        algorithms.load(path)
