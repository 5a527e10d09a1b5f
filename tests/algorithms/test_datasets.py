"""Dataset loaders: parsing, the parsed-array cache, the digits fallback."""

import sys

import numpy as np
import pytest

from algorithms import datasets


def _write_higgs(folder, n, seed):
    rng = np.random.default_rng(seed)
    rows = np.column_stack([rng.standard_normal((n, 28)), rng.integers(0, 2, n)])
    header = ",".join([f"f{i}" for i in range(28)] + ["label"])
    np.savetxt(folder / "higgs.csv", rows, delimiter=",", header=header, comments="")


def test_cache_serves_the_second_load_and_follows_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("KBACKENDS_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "data"
    data.mkdir()
    _write_higgs(data, 40, 0)
    first = datasets.load("higgs", data)
    assert len(list((tmp_path / "cache").glob("higgs-*.npz"))) == 1
    second = datasets.load("higgs", data)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert set(np.unique(first[1])) <= {-1, 1} and first[0].shape[0] + first[2].shape[0] == 40
    _write_higgs(data, 60, 1)  # a different file: a different key, parsed again
    third = datasets.load("higgs", data)
    assert third[0].shape[0] + third[2].shape[0] == 60


def test_unknown_name_and_missing_folder(tmp_path):
    with pytest.raises(ValueError, match="`name` must be one of"):
        datasets.load("mnist8m")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        datasets.load("higgs", tmp_path / "nope")


def test_fallback_is_the_bundled_digits(tmp_path):
    name, X, y, Xt, yt = datasets.load_or_digits("ijcnn1", tmp_path / "nope")
    assert name == "digits-8-vs-rest" and X.shape[1] == 64
    assert set(np.unique(y)) == {-1, 1}


def test_usps8_without_h5py_names_the_extra(tmp_path, monkeypatch):
    """h5py is optional (the bench extra): usps8, the one HDF5 set, says what to install."""
    monkeypatch.setenv("KBACKENDS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(sys.modules, "h5py", None)  # `import h5py` raises ModuleNotFoundError
    (tmp_path / "usps.h5").write_bytes(b"")
    with pytest.raises(ModuleNotFoundError, match=r'usps8.*h5py.*pip install "kbackends\[bench\]"'):
        datasets.load("usps8", tmp_path)
