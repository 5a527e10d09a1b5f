"""A model file whose fields contradict each other is refused at load, naming the file
(it loaded and then failed at predict time: a division by zero, an index error); a
header nested too deeply is the same ValueError, not a RecursionError."""

import io
import json
import zipfile

import numpy as np
import pytest

from algorithms import dsg, load, s3gd, sbp


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = np.array(["a", "b", "c"])[(X[:, 0] > 0).astype(int) + (X[:, 1] > 1).astype(int)]
    folder = tmp_path_factory.mktemp("models")
    paths = {}
    for name, model in {
        "dsg": dsg.fit(X, (y == "a").astype(int), n_iter=4, block_size=16, random_state=0),
        "dsg3": dsg.fit(X, y, n_iter=4, block_size=16, random_state=0),
        "sbp": sbp.fit(X, (y == "a").astype(int), nu=0.3, n_iter=50, random_state=0),
        "s3gd": s3gd.fit(X, (y == "a").astype(int), max_epochs=1, random_state=0),
    }.items():
        paths[name] = model.save(folder / f"{name}.npz")
    return paths


def _rewrite(src, dst, edit):
    """Copy the archive ``src`` to ``dst`` with ``edit(header)`` applied to its JSON header."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.namelist():
            data = zin.read(item)
            if item.startswith("__header__"):
                array = np.load(io.BytesIO(data))
                header = json.loads(bytes(array).decode("utf-8") if array.dtype.kind in "uS" else str(array))
                text = edit(header)
                buf = io.BytesIO()
                np.save(buf, np.frombuffer(text.encode("utf-8"), dtype=np.uint8) if array.dtype.kind == "u"
                        else np.array(text))
                data = buf.getvalue()
            zout.writestr(item, data)
    return dst


def _set(**fields):
    def edit(header):
        header["fields"].update(fields)
        return json.dumps(header)
    return edit


@pytest.mark.parametrize("name, edit", [
    ("dsg", _set(n_blocks=7)),  # blocks that the coefficients do not have
    ("dsg", _set(block_size=0)),
    ("dsg", _set(n_features_in=0)),
    ("dsg3", _set(n_blocks=1)),
    ("sbp", _set(n_features_in=9)),
    ("s3gd", _set(n_features_in=2)),
], ids=["dsg-n_blocks", "dsg-block_size-0", "dsg-no-features", "dsg3-n_blocks",
        "sbp-features", "s3gd-features"])
def test_fields_that_contradict_each_other_are_refused_at_load(saved, tmp_path, name, edit):
    bad = _rewrite(saved[name], tmp_path / "bad.npz", edit)
    with pytest.raises(ValueError, match="bad.npz' is not a model file of this library"):
        load(bad)


def test_an_unchanged_rewrite_still_loads(saved, tmp_path):
    """The test's rewriting itself keeps a good file good."""
    good = _rewrite(saved["dsg3"], tmp_path / "good.npz", json.dumps)
    model = load(good)
    assert model.n_blocks == load(saved["dsg3"]).n_blocks


def test_a_deeply_nested_header_is_the_documented_error(saved, tmp_path):
    def deep(header):
        header["fields"]["params"]["nest"] = "X"
        return json.dumps(header).replace('"X"', "[" * 100_000 + "]" * 100_000)
    bad = _rewrite(saved["dsg"], tmp_path / "deep.npz", deep)
    with pytest.raises(ValueError, match="deep.npz' is not a model file of this library"):
        load(bad)


def _with_array(src, dst, key, edit):
    """Copy the archive ``src`` to ``dst`` with ``edit(array)`` applied to its array ``key``."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.namelist():
            data = zin.read(item)
            if item == f"{key}.npy":
                array = np.load(io.BytesIO(data)).copy()
                edit(array)
                buf = io.BytesIO()
                np.save(buf, array)
                data = buf.getvalue()
            zout.writestr(item, data)
    return dst


@pytest.mark.parametrize("name, key", [("dsg", "coef"), ("dsg3", "intercept"), ("sbp", "support_vectors"),
                                       ("s3gd", "coef")])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_arrays_are_refused_at_load(saved, tmp_path, name, key, value):
    """A NaN in a file's coefficients loaded, then predicted NaN (the first class) on every row."""
    def poison(array):
        array.flat[0] = value
    bad = _with_array(saved[name], tmp_path / "bad.npz", key, poison)
    with pytest.raises(ValueError, match=f"bad.npz' is not a model file of this library: its `{key}` holds NaN"):
        load(bad)
