"""Fuzz suite (issue 16, deliverable 5): every public entry point of ``algorithms``
on arbitrary shapes, dtypes, scales, label sets and hyper-parameter values.

Each call either returns finite results of the documented shape, or raises
ValueError / TypeError whose message names an argument in backticks. Anything else
(another exception type, a NaN decision, a message that names nothing) fails.

Reproducible (``derandomize=True``) and small (rows <= 12, n_iter <= 3) so the
whole suite runs in CI in well under two minutes. Examples per entry point: see
``N_*`` below.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import algorithms
from algorithms import (
    DSGClassifier, DSGRegressor, S3GDClassifier, SBPClassifier, TSGS3VMClassifier, TSGSUClassifier,
    dsg, s3gd, sbp, tsgs3vm, tsgsu,
)
from algorithms._cli.main import main

pytestmark = pytest.mark.fuzz

N_FIT = 25  # examples per functional fit (and per estimator)
N_PARAM = 25  # examples per hyper-parameter sweep
N_SMALL = 15  # examples for the slower tsgsu helpers, load and the CLI

SETTINGS = settings(max_examples=N_FIT, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))

# --- strategies -----------------------------------------------------------------------------------

DTYPES = ["float64", "float32", "float16", "int64", "int8", "bool", "object", "complex128"]
SCALES = [1.0, 1e-30, 1e-7, 1e7, 1e20, 1e30]
SPECIALS = [None, "nan", "inf", "-inf"]


@st.composite
def matrices(draw, n=None, d=None):
    """X of a drawn shape, dtype, scale, with an optional NaN / inf entry."""
    n = draw(st.sampled_from([0, 1, 2, 5, 12])) if n is None else n
    d = draw(st.sampled_from([0, 1, 3])) if d is None else d
    dtype = draw(st.sampled_from(DTYPES))
    scale = draw(st.sampled_from(SCALES))
    special = draw(st.sampled_from(SPECIALS))
    seed = draw(st.integers(0, 2**16))
    X = np.random.default_rng(seed).standard_normal((n, d)) * scale
    if special and X.size:
        X.flat[seed % X.size] = float(special)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dtype == "object":
            return X.astype(object)
        return X.astype(dtype)


LABEL_KINDS = ["pm1", "01", "one", "three", "str", "nan", "mixed", "continuous", "none", "short", "bool", "complex"]


def labels(kind, n, seed=0):
    r = np.arange(n) + seed
    if kind == "pm1":
        return np.where(r % 2, 1, -1)
    if kind == "01":
        return r % 2
    if kind == "one":
        return np.ones(n, dtype=int)
    if kind == "three":
        return r % 3
    if kind == "str":
        return np.array(["a", "b"] * n, dtype=object)[:n]
    if kind == "nan":
        y = (r % 2).astype(float)
        if n:
            y[0] = np.nan
        return y
    if kind == "mixed":
        return np.array(["a", 1] * n, dtype=object)[:n]
    if kind == "continuous":
        return np.linspace(-1, 1, n) + 0.1
    if kind == "none":
        return None
    if kind == "short":
        return np.where(r % 2, 1, -1)[: max(n - 1, 0)]
    if kind == "bool":
        return r % 2 == 0
    return (r % 2).astype(complex)


BAD_VALUES = [-1, 0, -0.5, 1e300, float("nan"), float("inf"), True, False, None, "x", [1], 2**64, np.int64(2),
              np.float32(0.5), 1j]


def check_call(fn):
    """Run ``fn``; None if it raised a ValueError / TypeError naming an argument."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(), None
    except (ValueError, TypeError) as exc:
        assert "`" in str(exc), f"{type(exc).__name__} names no argument: {exc}"
        return None, exc


def check_decision(D, n):
    D = np.asarray(D)
    assert D.shape[0] == n and D.ndim in (1, 2), D.shape
    assert np.issubdtype(D.dtype, np.floating), D.dtype
    assert np.all(np.isfinite(D)), D


def check_predictions(P, n, classes=None):
    P = np.asarray(P)
    assert P.shape == (n,), P.shape
    if classes is not None and n:
        assert set(P.tolist()) <= set(np.asarray(classes).tolist())
    elif np.issubdtype(P.dtype, np.floating):
        assert np.all(np.isfinite(P))


# Fast settings per algorithm: small, few iterations.
FAST = {
    "dsg": {"n_iter": 3, "batch_size": 4, "block_size": 4, "random_state": 0, "backend": "cpu"},
    "tsgs3vm": {"n_iter": 3, "batch_size": 4, "block_size": 4, "random_state": 0, "backend": "cpu"},
    "sbp": {"nu": 0.5, "n_iter": 3, "random_state": 0, "backend": "cpu"},
    "s3gd": {"n_anchors": 3, "k_nearest": 2, "max_epochs": 1.0, "kmeans_iter": 1, "kmeans_sample": 50,
             "batch_size": 2, "random_state": 0, "backend": "cpu"},
    "tsgsu": {"prior": 0.7, "n_iter": 3, "batch_size": 4, "block_size": 4, "random_state": 0, "backend": "cpu"},
}
MODULES = {"dsg": dsg, "tsgs3vm": tsgs3vm, "sbp": sbp, "s3gd": s3gd}


def fit_and_check(name, X, y, params):
    module = MODULES[name]
    model, exc = check_call(lambda: module.fit(X, y, **params))
    if model is None:
        return exc
    n = X.shape[0]
    D, exc = check_call(lambda: module.decision_function(model, X))
    if D is not None:
        check_decision(D, n)
        check_predictions(module.predict(model, X), n, getattr(model, "classes", None))
    return None


# --- functional fits: data ------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODULES))
@SETTINGS
@given(X=matrices(), kind=st.sampled_from(LABEL_KINDS))
@example(X=np.ones((4, 2)), kind="pm1")
def test_fit_on_arbitrary_data(name, X, kind):
    fit_and_check(name, X, labels(kind, X.shape[0]), FAST[name])


# --- functional fits: hyper-parameters ------------------------------------------------------------

GOOD_X = np.random.default_rng(0).standard_normal((12, 3))
GOOD_Y = np.where(np.arange(12) % 2, 1, -1)


def _param_names(name):
    return [p.name for p in MODULES[name].PARAMS.params if p.name != "callback"]


ALL_PARAMS = sorted({p for name in MODULES for p in _param_names(name)})
ITERATION_PARAMS = ("n_iter", "max_epochs", "kmeans_iter", "kmeans_sample", "batch_size", "block_size", "n_anchors",
                    "inner_iter", "feature_budget", "k_nearest")


@pytest.mark.parametrize("name", list(MODULES))
@settings(max_examples=N_PARAM, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(param=st.sampled_from(ALL_PARAMS), value=st.sampled_from(BAD_VALUES))
@example(param="backend", value=-1)  # was AttributeError from the backend resolver
def test_fit_on_arbitrary_hyper_parameters(name, param, value):
    if param not in _param_names(name):
        param = _param_names(name)[ALL_PARAMS.index(param) % len(_param_names(name))]
    if param in ITERATION_PARAMS and isinstance(value, (int, float)) and not isinstance(value, bool) \
            and abs(value) > 50:
        return  # a huge iteration count is valid, just slow
    fit_and_check(name, GOOD_X, GOOD_Y, dict(FAST[name], **{param: value}))


# --- tsgsu ----------------------------------------------------------------------------------------


@st.composite
def su_pairs(draw):
    n, d = draw(st.sampled_from([0, 1, 3, 25])), draw(st.sampled_from([0, 1, 3]))
    return draw(matrices(n=n * 2, d=d)).reshape(n, 2, d) if draw(st.booleans()) else draw(matrices(n=n, d=d))


@SETTINGS
@given(X_s=su_pairs(), X_u=matrices(), prior=st.sampled_from([0.7, 0.5, 0.0, 1.0, -1, 2, None, float("nan"), "x"]))
def test_tsgsu_fit(X_s, X_u, prior):
    params = dict(FAST["tsgsu"], prior=prior)
    model, _ = check_call(lambda: tsgsu.fit(X_s, X_u, **params))
    if model is not None:
        D, _ = check_call(lambda: tsgsu.decision_function(model, X_u))
        if D is not None:
            check_decision(D, X_u.shape[0])


@settings(max_examples=N_SMALL, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(X_s=su_pairs(), X_u=matrices(), which=st.sampled_from(["estimate_prior", "select_params", "su_sl_fit"]),
       value=st.sampled_from(BAD_VALUES + [0.7]))
@example(X_s=np.zeros((0, 2, 1)), X_u=np.zeros((0, 1)), which="estimate_prior", value=0.7)  # named nothing
def test_tsgsu_helpers(X_s, X_u, which, value):
    if which == "estimate_prior":
        out, _ = check_call(lambda: tsgsu.estimate_prior(X_s, X_u, n_components=8, n_repeats=1, lam=value,
                                                         random_state=0))
        if out is not None:
            assert 0.0 <= float(out) <= 1.0
    elif which == "select_params":
        out, _ = check_call(lambda: tsgsu.select_params(
            X_s, X_u, prior=value, lams=(0.1,), gamma_scales=(1.0,), cv=2, random_state=0, backend="cpu",
            n_iter=2, batch_size=4, block_size=4))
    else:
        out, _ = check_call(lambda: tsgsu.su_sl_fit(X_s, X_u, value, lam=1e-3, random_state=0, backend="cpu"))
        if out is not None:
            D, _ = check_call(lambda: out.decision_function(X_u))
            if D is not None:
                check_decision(D, X_u.shape[0])


@settings(max_examples=N_SMALL, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(X=matrices(), kind=st.sampled_from(LABEL_KINDS), n_pairs=st.sampled_from([0, 1, 3, -1, 2.5, None, True]),
       n_unlabeled=st.sampled_from([0, 2, -1, np.int64(2), "x"]))
def test_make_su_data(X, kind, n_pairs, n_unlabeled):
    out, _ = check_call(lambda: tsgsu.make_su_data(X, labels(kind, X.shape[0]), n_pairs, n_unlabeled,
                                                   random_state=0))
    if out is not None:
        X_s, X_u = out
        assert X_s.shape == (n_pairs, 2, X.shape[1]) and X_u.shape == (n_unlabeled, X.shape[1])
        assert np.all(np.isfinite(X_s)) and np.all(np.isfinite(X_u))


# --- estimators -----------------------------------------------------------------------------------

ESTIMATORS = {
    "DSGClassifier": lambda: DSGClassifier(**FAST["dsg"]),
    "DSGRegressor": lambda: DSGRegressor(**FAST["dsg"]),
    "TSGS3VMClassifier": lambda: TSGS3VMClassifier(**FAST["tsgs3vm"]),
    "SBPClassifier": lambda: SBPClassifier(**FAST["sbp"]),
    "S3GDClassifier": lambda: S3GDClassifier(**FAST["s3gd"]),
    "TSGSUClassifier": lambda: TSGSUClassifier(**FAST["tsgsu"]),
}


@pytest.mark.parametrize("name", list(ESTIMATORS))
@SETTINGS
@given(X=matrices(), kind=st.sampled_from(LABEL_KINDS))
@example(X=np.ones((2, 1)), kind="mixed")  # was TypeError '<' not supported (scikit-learn's sort)
@example(X=np.ones((1, 0)), kind="pm1")  # scikit-learn's "0 feature(s)" named no argument
@example(X=np.ones((2, 1)), kind="nan")  # "Input y contains NaN." named no argument
def test_estimator_fit_predict(name, X, kind):
    est = ESTIMATORS[name]()
    y = labels(kind, X.shape[0])
    fitted, _ = check_call(lambda: est.fit(X, y))
    if fitted is None:
        return
    P, _ = check_call(lambda: est.predict(X))
    if P is not None:
        classes = getattr(est, "classes_", None) if name != "TSGSUClassifier" else [-1, 1]
        check_predictions(P, X.shape[0], classes)


# --- load -----------------------------------------------------------------------------------------


@settings(max_examples=N_SMALL, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.binary(max_size=300), prefix=st.sampled_from([b"", b"PK\x03\x04", b"\x93NUMPY", b"\x1f\x8b"]))
def test_load_arbitrary_bytes(tmp_path_factory, data, prefix):
    path = tmp_path_factory.mktemp("load") / "model.npz"
    path.write_bytes(prefix + data)
    try:
        algorithms.load(path)
    except ValueError as exc:
        assert str(path) in str(exc) or path.name in str(exc), exc
    else:
        pytest.fail("arbitrary bytes loaded as a model")


# --- command line ---------------------------------------------------------------------------------

CLI_OPTIONS = {
    "dsg": ["--n-iter", "--batch-size", "--block-size", "--gamma", "--lam", "--precondition", "--step"],
    "sbp": ["--nu", "--n-iter", "--gamma"],
    "s3gd": ["--n-anchors", "--k-nearest", "--lam", "--max-epochs"],
    "tsgs3vm": ["--n-iter", "--batch-size", "--C"],
}
CLI_VALUES = ["-1", "0", "1e300", "nan", "inf", "x", "", "2", "0.5", "True", "None", "--"]


@settings(max_examples=N_SMALL * 2, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(algo=st.sampled_from(list(CLI_OPTIONS)), data=st.data())
def test_cli_arbitrary_option_values(tmp_path_factory, capsys, algo, data):
    option = data.draw(st.sampled_from(CLI_OPTIONS[algo]))
    value = data.draw(st.sampled_from(CLI_VALUES))
    tmp = tmp_path_factory.mktemp("cli")
    rows = [f"{1 if i % 2 else -1} 1:{i * 0.1:.3f} 2:{(i * 7 % 5) * 0.2:.3f}" for i in range(16)]
    (tmp / "train.svm").write_text("\n".join(rows) + "\n")
    argv = ["train", str(tmp / "train.svm"), str(tmp / "m.npz"), "--algo", algo, "--seed", "0"]
    fast = {"dsg": ["--n-iter", "3", "--batch-size", "4", "--block-size", "4"],
            "sbp": ["--nu", "0.5", "--n-iter", "3"],
            "s3gd": ["--n-anchors", "3", "--k-nearest", "2", "--max-epochs", "1"],
            "tsgs3vm": ["--n-iter", "3", "--batch-size", "4", "--block-size", "4"]}[algo]
    argv += fast + [option, value]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code in (0, 1, 2), (code, err)
    if code:
        assert "internal error" not in err and "Traceback" not in err, err
        assert len(err.strip().splitlines()) <= 2, err  # usage line + one error line
        if code == 0:
            assert (tmp / "m.npz").exists()


# --- command line: data files read as written --------------------------------------------------

FILE_LABELS = [("+1", "-1"), ("1", "-1"), ("1.0", "0.0"), ("2", "10"), ("01", "a"), ("cat", "dog"), ("x, y", "z")]
MISSING_MARKERS = ["", "?", "NA", "N/A", "n/a", "nan", "NaN", "NAN", "null", "NULL"]
FILE_FIT = {"n_iter": 3, "batch_size": 8, "block_size": 8, "random_state": 0}
FILE_FLAGS = ["--n-iter", "3", "--batch-size", "8", "--block-size", "8", "--quiet"]


@st.composite
def data_files(draw):
    """A training and a test file of the same rows, as a user may write them: CSV (a
    header or none, columns of the test file in another order, a delimiter, quoted
    labels) or LIBSVM (numbered from 0 or 1, the test file leaving index 0 out), either
    with or without a byte-order mark; labels spelled in a number or text convention,
    some of them a missing-label marker."""
    n, d = draw(st.integers(10, 16)), draw(st.integers(1, 4))
    X = np.random.default_rng(draw(st.integers(0, 2**16))).normal(size=(n, d)).round(3)
    X[np.random.default_rng(n).random((n, d)) < 0.2] = 0.0  # zeros: LIBSVM leaves them out
    fmt = draw(st.sampled_from(["csv", "libsvm"]))
    numeric = [pair for pair in FILE_LABELS if all(_is_number(v) for v in pair)]
    pos, neg = draw(st.sampled_from(FILE_LABELS if fmt == "csv" else numeric))
    written = [pos if i % 2 else neg for i in range(n)]  # both classes, whatever is missing below
    algo = draw(st.sampled_from(["dsg", "tsgs3vm"]))  # tsgs3vm: its unlabelled rows are the missing labels
    missing = draw(st.lists(st.integers(2, n - 1), min_size=int(algo == "tsgs3vm"), max_size=3, unique=True))
    markers = [draw(st.sampled_from(MISSING_MARKERS if fmt == "csv" else ["?", "NA", "nan", "null"]))
               for _ in missing]
    for i, marker in zip(missing, markers):
        written[i] = marker
    case = {"X": X, "written": written, "missing": sorted(missing), "fmt": fmt, "algo": algo,
            "bom": (draw(st.booleans()), draw(st.booleans()))}
    if fmt == "csv":
        case["header"] = draw(st.booleans())
        case["order"] = draw(st.permutations(range(d + 1))) if case["header"] else list(range(d + 1))
        case["delimiter"] = draw(st.sampled_from([",", "\t", ";", " "]))
        case["quote"] = draw(st.booleans()) or any(case["delimiter"] in v for v in written)
    else:
        case["base"] = draw(st.sampled_from([0, 1]))
        if case["base"] == 0:
            X[0, 0] = 1.5  # the training file uses index 0: "auto" finds the base
    return case


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _write_case(path, case, test=False, bom=False):
    X, written = case["X"], case["written"]
    if case["fmt"] == "libsvm":
        skip = {0} if test else set()  # the test file leaves index 0 out: only the model's base reads it right
        lines = [f"{label} " + " ".join(f"{j + case['base']}:{v!r}" for j, v in enumerate(row.tolist())
                                        if v != 0 and j not in skip) for row, label in zip(X, written)]
        if test:
            X = X.copy()
            X[:, 0] = 0.0
    else:
        delimiter, d = case["delimiter"], X.shape[1]
        names = [f"f{j}" for j in range(d)] + ["label"]
        label = [f'"{v}"' if case["quote"] or v == "" and delimiter == " " else v for v in written]
        columns = [[repr(v) for v in X[:, j].tolist()] for j in range(d)] + [label]
        order = case["order"] if test else list(range(d + 1))
        lines = ([delimiter.join(names[j] for j in order)] if case["header"] else []) + [
            delimiter.join(columns[j][i] for j in order) for i in range(X.shape[0])]
    path.write_text(("\ufeff" if bom else "") + "\n".join(lines) + "\n", encoding="utf-8")
    return X


@settings(max_examples=N_SMALL * 2, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(case=data_files())
def test_cli_data_files_round_trip(tmp_path_factory, capsys, case):
    """Write a file, train, predict on a second file of the same rows: the predictions
    are the in-memory fit's on the same arrays, each class written as in the training
    file; a supervised fit refuses missing labels naming their lines."""
    import scipy.sparse as sp

    tmp, algo = tmp_path_factory.mktemp("files"), case["algo"]
    suffix = ".csv" if case["fmt"] == "csv" else ".svm"
    X_train = _write_case(tmp / f"train{suffix}", case, bom=case["bom"][0])
    X_test = _write_case(tmp / f"test{suffix}", case, test=True, bom=case["bom"][1])
    argv = ["train", str(tmp / f"train{suffix}"), str(tmp / "m.npz"), "--algo", algo, *FILE_FLAGS]
    missing = np.isin(np.arange(len(case["written"])), case["missing"])
    if algo == "dsg" and missing.any():
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code
        else:
            code = 0
        err = capsys.readouterr().err
        assert code == 1 and f"{int(missing.sum())} of {len(missing)} rows have no label" in err, err
        return
    assert main(argv) == 0
    assert main(["predict", str(tmp / "m.npz"), str(tmp / f"test{suffix}"), str(tmp / "p.txt")]) == 0
    capsys.readouterr()
    lines = (tmp / "p.txt").read_text().splitlines()

    written = np.array(case["written"])
    numeric = all(_is_number(v) for v in written[~missing])
    y = np.array(written[~missing], dtype=float if numeric else str)
    as_fit = sp.csr_matrix if case["fmt"] == "libsvm" else np.asarray  # the reader's kind of matrix
    if algo == "dsg":
        model = algorithms.dsg.fit(as_fit(X_train), y, **FILE_FIT)
        predicted = algorithms.dsg.predict(model, as_fit(X_test))
    else:
        model = algorithms.tsgs3vm.fit(as_fit(X_train[~missing]), y, as_fit(X_train[missing]), **FILE_FIT)
        predicted = algorithms.tsgs3vm.predict(model, as_fit(X_test))
    first = {}
    for typed, text in zip(y.tolist(), written[~missing].tolist()):
        first.setdefault(typed, text)  # each class as the training file first wrote it
    assert lines == [first[v] for v in np.asarray(predicted).tolist()]
