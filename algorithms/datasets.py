"""Loaders for the real datasets the examples, tests and benchmarks use.

The files live in the ``shared/data`` folder beside the repository (see its
README for provenance) or in the folder named by ``$KBACKENDS_DATA``; when a
file is missing, :func:`load` raises FileNotFoundError naming where it looked,
and :func:`load_or_digits` falls back to scikit-learn's bundled digits. Parsed arrays are cached as .npz in
``$KBACKENDS_CACHE`` (default ``~/.cache/kbackends``), keyed by the files' sizes and
modification times.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from kbackends import resolve, to_numpy
from ._boundary.validation import check_labels, check_positive_int, check_prior, check_X, seed_from

__all__ = ["DATASETS", "data_dir", "example_data", "load", "load_or_digits", "make_nonlinear_classes", "make_su_data"]


def data_dir(path=None) -> Path:
    """The data folder: ``path``, else ``$KBACKENDS_DATA``, else ``../shared/data``."""
    if path is not None:
        return Path(path)
    env = os.environ.get("KBACKENDS_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _svmlight(folder, train, test=None, n_features=None, test_fraction=None, seed=0):
    from sklearn.datasets import load_svmlight_file

    # CSR as read; `load` densifies unless asked for sparse.
    X, y = load_svmlight_file(str(folder / train), n_features=n_features, dtype=np.float64)
    if test is not None:
        Xt, yt = load_svmlight_file(str(folder / test), n_features=X.shape[1], dtype=np.float64)
        return X, y, Xt, yt
    return _split(X, y, test_fraction, seed)


def _split(X, y, test_fraction, seed):
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    test, train = order[:n_test], order[n_test:]
    return X[train], y[train], X[test], y[test]


def _binary(y, positive):
    return np.where(y == positive, 1, -1)


def _ijcnn1(folder):
    return _svmlight(folder, "ijcnn1.trn.bz2", "ijcnn1.tst.bz2", n_features=22)


def _a9a(folder):
    return _svmlight(folder, "a9a", "a9a.t", n_features=123)


def _w8a(folder):
    return _svmlight(folder, "w8a", n_features=300, test_fraction=0.25)


def _phishing(folder):
    X, y, Xt, yt = _svmlight(folder, "phishing.txt", n_features=68, test_fraction=0.25)
    return X, _binary(y, 1), Xt, _binary(yt, 1)


def _skin(folder):
    raw = np.loadtxt(folder / "Skin_NonSkin.txt")
    X, y = raw[:, :3] / 255.0, _binary(raw[:, 3], 1)
    return _split(X, y, 0.25, 0)


def _higgs(folder):
    raw = np.loadtxt(folder / "higgs.csv", delimiter=",", skiprows=1)
    return _split(raw[:, :-1], _binary(raw[:, -1], 1), 0.25, 0)


def _magic04(folder):
    raw = np.genfromtxt(folder / "magic04.data", delimiter=",", dtype=str)
    X = raw[:, :-1].astype(np.float64)
    return _split(X, _binary(raw[:, -1], "g"), 0.25, 0)


def _usps8(folder):
    try:
        import h5py  # optional (the bench extra): the only data set stored as HDF5
    except ImportError as exc:
        msg = 'datasets.load("usps8") reads usps.h5 with h5py, which is not installed: pip install "kbackends[bench]"'
        raise ModuleNotFoundError(msg, name="h5py") from exc

    with h5py.File(folder / "usps.h5", "r") as f:
        X, y = f["train/data"][:], f["train/target"][:]
        Xt, yt = f["test/data"][:], f["test/target"][:]
    return X, _binary(y, 8), Xt, _binary(yt, 8)


def _letter(folder):
    return _svmlight(folder, "letter.scale", n_features=16, test_fraction=0.2)


# name -> (loader, short description)
DATASETS = {
    "ijcnn1": (_ijcnn1, "IJCNN 2001, 22 features, train 49,990 / test 91,701"),
    "a9a": (_a9a, "UCI Adult, 123 binary features, train 32,561 / test 16,281"),
    "w8a": (_w8a, "web pages, 300 sparse features, 49,749 rows (75/25 split)"),
    "phishing": (_phishing, "phishing websites, 68 features, 11,055 rows (75/25 split)"),
    "skin": (_skin, "skin segmentation, 3 features, 245,057 rows (75/25 split)"),
    "higgs": (_higgs, "HIGGS sample, 28 features, 10,984 rows (75/25 split)"),
    "magic04": (_magic04, "MAGIC gamma telescope, 10 features, 19,020 rows (75/25 split)"),
    "usps8": (_usps8, "USPS digit 8 vs rest, 256 pixels, train 7,291 / test 2,007"),
    "letter": (_letter, "UCI letter, 16 features, 26 classes (labels 1..26), 20,000 rows (80/20 split)"),
}


def _cache_dir() -> Path:
    return Path(os.environ.get("KBACKENDS_CACHE", Path.home() / ".cache" / "kbackends"))


def _dense(a):
    return a.toarray() if hasattr(a, "toarray") else a


def _cached(name, folder, loader):
    """Parsed arrays kept as .npz in the cache folder, keyed by the data files' sizes
    and times (parsing ijcnn1's bz2 LIBSVM files takes ~7 s, reading the cache ~0.1 s).
    Any problem with the cache falls back to parsing."""
    stamp = "-".join(
        f"{p.stat().st_size}-{int(p.stat().st_mtime)}"
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name.split(".")[0].lower() in _FILE_STEMS.get(name, ())
    )
    path = _cache_dir() / f"{name}-{stamp}.npz"
    try:
        with np.load(path) as data:
            return data["X"], data["y"], data["Xt"], data["yt"]
    except (OSError, KeyError, ValueError):
        pass
    X, y, Xt, yt = (_dense(a) for a in loader(folder))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, X=X, y=np.asarray(y), Xt=Xt, yt=np.asarray(yt))
        tmp.replace(path)
    except OSError:
        pass  # a read-only home: parse every time
    return X, y, Xt, yt


# Which files (by stem) each dataset reads: their sizes and times key the cache.
_FILE_STEMS = {
    "ijcnn1": ("ijcnn1",), "a9a": ("a9a",), "w8a": ("w8a",), "phishing": ("phishing",),
    "skin": ("skin_nonskin",), "higgs": ("higgs",), "magic04": ("magic04",), "usps8": ("usps",),
    "letter": ("letter",),
}


def example_data():
    """scikit-learn's breast cancer set (569 x 30, bundled: no download), standardised.

    The small real set of the docstring examples.

    Returns
    -------
    X : ndarray of shape (569, 30), float64
        Each column with mean 0 and standard deviation 1.
    y : ndarray of shape (569,)
        1 benign (the majority), 0 malignant.
    """
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y


def make_nonlinear_classes(n_samples, n_features=20, *, noise=0.04, random_state=None, dtype=np.float64):
    """A synthetic binary problem of any size whose Bayes accuracy is known: ``1 - noise``.

    Rows are standard normal in ``n_features`` dimensions (at least 6); the class is
    the sign of ``sum_{j<3} sin(x_{2j}) cos(x_{2j+1})`` (a smooth, non-linear rule
    in six of the dimensions; the others are noise a model must learn to ignore),
    flipped with probability ``noise``. Linear models are at chance; random-feature
    models gain with rows and features well past a million rows, which is what the
    scale benchmark (``python -m algorithms bench --only scale``) measures. The same
    ``random_state`` gives the same rows; the labels are computed a million rows at
    a time (memory: ``X`` and ``y``).

    Parameters
    ----------
    n_samples : int
    n_features : int >= 6, default 20
    noise : float in [0, 1/2), default 0.04
        Probability that a label is flipped.
    random_state : int, numpy Generator or None
    dtype : float dtype, default float64 (what loaders return)

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), int64 in {0, 1}
    """
    n = check_positive_int("n_samples", n_samples)
    d = check_positive_int("n_features", n_features)
    if d < 6:
        msg = f"`n_features` must be at least 6 (the rule reads six dimensions), got {d}"
        raise ValueError(msg)
    if not 0.0 <= float(noise) < 0.5:
        msg = f"`noise` must be in [0, 0.5), got {noise!r}"
        raise ValueError(msg)
    rng = np.random.default_rng(seed_from(random_state))
    X = rng.standard_normal((n, d), dtype=dtype)
    y = np.empty(n, dtype=np.int64)
    for start in range(0, n, 2**20):
        rows = X[start : start + 2**20]
        score = sum(np.sin(rows[:, 2 * j]) * np.cos(rows[:, 2 * j + 1]) for j in range(3))
        y[start : start + rows.shape[0]] = score > 0
    flip = rng.random(n) < noise
    y[flip] = 1 - y[flip]
    return X, y


def load(name, data_dir_path=None, *, sparse=False):
    """Load a dataset as ``(X_train, y_train, X_test, y_test)``, float64, labels +-1
    (multiclass sets such as "letter" keep their integer class labels).

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`.
    data_dir_path : path-like, optional
        Folder holding the files (default: :func:`data_dir`).
    sparse : bool, default False
        Return ``X_train`` and ``X_test`` as scipy.sparse CSR matrices, parsed
        from the files each time (no cache): LIBSVM sets are never densified
        (memory O(nnz)); DSG / UDSG / CDSG and TSGS3VM fit them as they are.

    Raises
    ------
    ValueError
        For an unknown name.
    FileNotFoundError
        When the files are not in the folder.
    """
    if name not in DATASETS:
        msg = f"`name` must be one of {sorted(DATASETS)}, got {name!r}"
        raise ValueError(msg)
    folder = data_dir(data_dir_path)
    if not folder.is_dir():
        msg = f"data folder {str(folder)!r} does not exist (set $KBACKENDS_DATA or pass a folder)"
        raise FileNotFoundError(msg)
    if sparse:
        import scipy.sparse

        X, y, Xt, yt = DATASETS[name][0](folder)
        X, Xt = scipy.sparse.csr_matrix(X), scipy.sparse.csr_matrix(Xt)
    else:
        X, y, Xt, yt = _cached(name, folder, DATASETS[name][0])
    return X, np.asarray(y, dtype=np.int64), Xt, np.asarray(yt, dtype=np.int64)


def load_or_digits(name, data_dir_path=None):
    """:func:`load`, or scikit-learn's bundled digits (8 vs rest, 75/25 split)
    when the file is missing. Returns ``(name_used, X, y, X_test, y_test)``."""
    try:
        return (name, *load(name, data_dir_path))
    except (FileNotFoundError, OSError):
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return ("digits-8-vs-rest", *_split(X / 16.0, _binary(y, 8), 0.25, 0))


def make_su_data(X, y, n_pairs, n_unlabeled, *, prior=None, replace=False, random_state=None,
                 return_labels=False):
    """Build an SU problem from labeled data as the paper's experiments do.

    Each similar pair is positive with probability ``pi_+^2 / pi_S`` (else
    negative) and is two points drawn from that class; each unlabeled point is
    positive with probability ``pi_+``; labels are then dropped.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
    y : array of shape (n_samples,)
        Labels: +1 for the positive class, anything else negative (0/1 and
        -1/+1 both work; the positive label is the larger of two values).
    n_pairs, n_unlabeled : int
    prior : float in (0, 1), optional
        ``pi_+`` to draw at; default the class proportion of ``y``.
    replace : bool, default False
        Draw with replacement (i.i.d. from the empirical distribution), needed
        when a class has fewer points than the draws need. Without replacement
        no point is used twice (across pairs and unlabeled points).
    random_state : None, int or numpy Generator
    return_labels : bool, default False
        Also return the hidden labels (+1 / -1) of the pairs and of the
        unlabeled points (for supervised references on the same points).

    Returns
    -------
    X_similar : ndarray of shape (n_pairs, 2, n_features)
    X_unlabeled : ndarray of shape (n_unlabeled, n_features)
    y_similar, y_unlabeled : ndarrays of shape (n_pairs,) and (n_unlabeled,)
        Only with ``return_labels``.
    """


    X = to_numpy(check_X(X, resolve("cpu"), None))  # finite, 2-D, numeric
    y = check_labels(y, X.shape[0])
    n_pairs = check_positive_int("n_pairs", n_pairs)
    n_unlabeled = check_positive_int("n_unlabeled", n_unlabeled)
    labels = np.unique(y)
    if labels.size != 2:
        msg = f"`y` must have exactly 2 classes, got {labels.size} ({labels[:5].tolist()}...)"
        raise ValueError(msg)
    positive = y == labels[1]
    if prior is None:
        prior = float(np.mean(positive))
    prior = check_prior(prior)
    rng = np.random.default_rng(seed_from(random_state) if not isinstance(random_state, np.random.Generator)
                                else random_state)
    pi_s = prior**2 + (1 - prior) ** 2
    n_pos_pairs = int(rng.binomial(n_pairs, prior**2 / pi_s))
    n_pos_u = int(rng.binomial(n_unlabeled, prior))
    need_pos = 2 * n_pos_pairs + n_pos_u
    need_neg = 2 * (n_pairs - n_pos_pairs) + n_unlabeled - n_pos_u
    pos, neg = np.flatnonzero(positive), np.flatnonzero(~positive)
    if not replace and (need_pos > pos.size or need_neg > neg.size):
        msg = (
            f"the draws need {need_pos} positive and {need_neg} negative points but `y` has {pos.size} and "
            f"{neg.size}; lower `n_pairs` / `n_unlabeled` or pass replace=True"
        )
        raise ValueError(msg)
    p = rng.choice(pos, size=need_pos, replace=replace)
    q = rng.choice(neg, size=need_neg, replace=replace)
    d = X.shape[1]
    pairs = np.concatenate([
        X[p[: 2 * n_pos_pairs]].reshape(-1, 2, d),
        X[q[: 2 * (n_pairs - n_pos_pairs)]].reshape(-1, 2, d),
    ])
    unlabeled = np.concatenate([X[p[2 * n_pos_pairs:]], X[q[2 * (n_pairs - n_pos_pairs):]]])
    y_pairs = np.where(np.arange(n_pairs) < n_pos_pairs, 1, -1)
    y_unl = np.where(np.arange(n_unlabeled) < n_pos_u, 1, -1)
    order_s, order_u = rng.permutation(n_pairs), rng.permutation(n_unlabeled)
    if return_labels:
        return pairs[order_s], unlabeled[order_u], y_pairs[order_s], y_unl[order_u]
    return pairs[order_s], unlabeled[order_u]
