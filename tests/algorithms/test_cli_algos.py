"""The command line for every algorithm: train then predict on LIBSVM and gzipped CSV
files with the labels as written, and one-line errors with exit codes 1 (data) / 2 (usage)."""

import bz2
import gzip
import os

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from algorithms import load
from algorithms._models import persistence as _persistence
from algorithms._cli.main import build_parser, main
from algorithms._catalog import ALGORITHMS
from algorithms.tsgsu import make_su_data

RNG = np.random.default_rng(0)
N_TRAIN, N_TEST = 240, 200
X = RNG.normal(size=(N_TRAIN + N_TEST, 4))
# 70% positive, a wide margin: every algorithm learns it in a few iterations
Y = np.where(RNG.random(N_TRAIN + N_TEST) < 0.7, 1, -1)
X[:, 0] += 1.5 * Y
NAMES = {1: "cat", -1: "dog"}

FAST = {
    "dsg": ["--n-iter", "10", "--batch-size", "64", "--block-size", "16"],
    "tsgs3vm": ["--n-iter", "10", "--batch-size", "64", "--block-size", "16"],
    "tsgsu": ["--n-iter", "20", "--batch-size", "100", "--block-size", "16", "--prior", "0.7"],
    "sbp": ["--nu", "0.05"],
    "s3gd": ["--max-epochs", "2"],
}
FAST["udsg"] = FAST["cdsg"] = FAST["dsg"]


def _csv_gz(path, X, labels, header=True):
    with gzip.open(path, "wt") as fh:
        if header:
            fh.write(",".join([f"x{i}" for i in range(X.shape[1])] + ["label"]) + "\n")
        for row, label in zip(X, labels):
            fh.write(",".join(f"{v:.6f}" for v in row) + f",{label}\n")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    Xtr, ytr, Xte, yte = X[:N_TRAIN], Y[:N_TRAIN], X[N_TRAIN:], Y[N_TRAIN:]
    names_tr, names_te = np.vectorize(NAMES.get)(ytr), np.vectorize(NAMES.get)(yte)
    f = {"dir": tmp}
    dump_svmlight_file(Xtr, ytr, str(tmp / "train.svm"))
    dump_svmlight_file(Xte, yte, str(tmp / "test.svm"))
    f["train.csv.gz"] = _csv_gz(tmp / "train.csv.gz", Xtr, names_tr)
    f["test.csv.gz"] = _csv_gz(tmp / "test.csv.gz", Xte, names_te)
    # semi-supervised: 40 labelled rows; LIBSVM marks the others 0 (SVMlight's convention),
    # the CSV leaves their label empty or writes '?'
    unlabeled = np.arange(N_TRAIN) >= 40
    dump_svmlight_file(Xtr, np.where(unlabeled, 0, ytr), str(tmp / "ssl.svm"))
    f["ssl.csv.gz"] = _csv_gz(tmp / "ssl.csv.gz", Xtr,
                              np.where(unlabeled, np.where(np.arange(N_TRAIN) % 2, "", "?"), names_tr))
    # SU: the label column is the indicator, 1 for points of similar pairs, 0 for unlabelled
    X_s, X_u = make_su_data(Xtr, ytr, 60, 120, prior=0.7, replace=True, random_state=0)
    X_su = np.concatenate([X_s.reshape(-1, 4), X_u])
    s = np.r_[np.ones(120, dtype=int), np.zeros(120, dtype=int)]
    dump_svmlight_file(X_su, s, str(tmp / "su.svm"))
    f["su.csv.gz"] = _csv_gz(tmp / "su.csv.gz", X_su, s)
    return f


def _train_args(algo, kind, files):
    tmp = files["dir"]
    if algo == "tsgs3vm":
        data = [str(tmp / "ssl.svm"), "--unlabeled-label", "0"] if kind == "libsvm" else [str(files["ssl.csv.gz"])]
    elif algo == "tsgsu":
        data = [str(tmp / "su.svm")] if kind == "libsvm" else [
            str(files["su.csv.gz"]), "--positive-class", "cat", "--negative-class", "dog"]
    else:
        data = [str(tmp / "train.svm")] if kind == "libsvm" else [str(files["train.csv.gz"])]
    return data[:1], data[1:]


@pytest.mark.parametrize("kind", ["libsvm", "csv.gz"])
@pytest.mark.parametrize("algo", list(ALGORITHMS))
def test_train_then_predict_every_algo(algo, kind, files, tmp_path, capsys):
    data, extra = _train_args(algo, kind, files)
    model = tmp_path / "m.npz"
    assert main(["train", *data, str(model), "--algo", algo, "--quiet", *FAST[algo], *extra]) == 0
    out = capsys.readouterr().out
    assert f"trained {algo}" in out
    assert load(model).algorithm == algo

    test = str(files["dir"] / "test.svm") if kind == "libsvm" else str(files["test.csv.gz"])
    preds = tmp_path / "p.txt"
    assert main(["predict", str(model), test, str(preds)]) == 0
    out = capsys.readouterr().out
    lines = preds.read_text().splitlines()
    assert len(lines) == N_TEST
    truth = Y[N_TRAIN:]
    expected = [str(v) for v in truth] if kind == "libsvm" else [NAMES[v] for v in truth]
    assert set(lines) <= set(expected)  # the labels as written: "-1" (not "-1.0"), "cat"
    accuracy = float(out.split("accuracy ")[1].split("%")[0])
    assert accuracy == pytest.approx(100 * np.mean(np.array(lines) == np.array(expected)), abs=0.01)
    assert accuracy > 80


def test_dsg_regression_and_float_labels(files, tmp_path, capsys):
    tmp = files["dir"]
    target = X[:, 1] * 2.0 + 0.5
    dump_svmlight_file(X[:N_TRAIN], target[:N_TRAIN], str(tmp_path / "r.svm"))
    dump_svmlight_file(X[N_TRAIN:], target[N_TRAIN:], str(tmp_path / "rt.svm"))
    model = tmp_path / "r.npz"
    assert main(["train", str(tmp_path / "r.svm"), str(model), "--loss", "squared", "--quiet",
                 *FAST["dsg"], "--n-iter", "40"]) == 0
    assert main(["predict", str(model), str(tmp_path / "rt.svm"), str(tmp_path / "p.txt")]) == 0
    assert "mean squared error" in capsys.readouterr().out
    values = np.loadtxt(tmp_path / "p.txt")
    assert values.shape == (N_TEST,) and np.corrcoef(values, target[N_TRAIN:])[0, 1] > 0.8
    del tmp


def test_tsv_bz2_first_column_no_header_and_stdout(tmp_path, capsys):
    lines = [f"{'a' if y > 0 else 'b'}\t" + "\t".join(f"{v:.5f}" for v in row) for row, y in zip(X, Y)]
    (tmp_path / "d.tsv.bz2").write_bytes(bz2.compress("\n".join(lines[:N_TRAIN]).encode()))
    # compressed, but named as plain text: read by its first bytes
    (tmp_path / "t.txt").write_bytes(gzip.compress("\n".join(lines[N_TRAIN:]).encode()))
    model = tmp_path / "m.npz"
    assert main(["train", str(tmp_path / "d.tsv.bz2"), str(model), "--algo", "s3gd", "--label-column", "first",
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["predict", str(model), str(tmp_path / "t.txt"), "-", "--format", "csv", "--label-column",
                 "first"]) == 0
    captured = capsys.readouterr()
    assert set(captured.out.split()) <= {"a", "b"} and len(captured.out.split()) == N_TEST
    assert "accuracy" in captured.err


def test_label_column_by_header_name(tmp_path, capsys):
    path = tmp_path / "d.csv"
    rows = [f"{'yes' if y > 0 else 'no'},{a:.4f},{b:.4f}" for (a, b), y in zip(X[:, :2], Y)]
    path.write_text("answer,f1,f2\n" + "\n".join(rows) + "\n")
    assert main(["train", str(path), str(tmp_path / "m.npz"), "--algo", "s3gd", "--label-column", "answer",
                 "--quiet"]) == 0
    assert load(tmp_path / "m.npz").classes.tolist() == ["no", "yes"]
    capsys.readouterr()
    # a file of features only: no label column, with or without --no-labels
    (tmp_path / "f.csv").write_text("f1,f2\n" + "\n".join(f"{a:.4f},{b:.4f}" for a, b in X[:5, :2]) + "\n")
    for flags in ([], ["--no-labels"]):
        assert main(["predict", str(tmp_path / "m.npz"), str(tmp_path / "f.csv"), str(tmp_path / "p.txt"), *flags]) == 0
        assert set((tmp_path / "p.txt").read_text().split()) <= {"yes", "no"}
        assert "accuracy" not in capsys.readouterr().out


# --- errors: one line, exit code 1 (data / files) or 2 (usage) ---------------------------


def _fails(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return stop.value.code, lines[0]


def test_usage_errors_exit_2(files, tmp_path, capsys):
    train = str(files["dir"] / "train.svm")
    cases = [
        (["train"], "required"),
        (["train", train, "--algo", "svm"], "invalid choice"),
        (["train", train, "--n-iter", "0"], "--n-iter: must be an integer >= 1"),
        (["train", train, "--precondition", "-1"], "must be a finite number > 0"),
        (["train", train, "--gamma", "wide"], "must be a number > 0"),
        (["train", train, "--dtype", "None"], "invalid choice"),
        (["train", train, "--nu", "0.1"], "--nu does not apply to --algo dsg"),
        (["train", train, "--algo", "sbp", "--loss", "hinge"], "--loss does not apply to --algo sbp"),
        (["train", train, "--algo", "tsgsu", "--loss", "hinge"], "must be one of squared, logistic"),
        (["train", train, "--positive-class", "a"], "applies to --algo tsgsu only"),
        (["train", train, "--prior", "1.5", "--algo", "tsgsu"], "in (0, 1)"),
        (["train", train, "--seed", "-1"], "--seed: must be an integer in [0, 2**63)"),
        (["train", train, "--seed", str(2**64)], "--seed: must be an integer in [0, 2**63)"),
        (["train", str(files["su.csv.gz"]), str(tmp_path / "m.npz"), "--algo", "tsgsu", "--lam", "0", "--quiet"],
         "--lam: `lam` must be"),
        (["train", str(files["su.csv.gz"]), str(tmp_path / "m.npz"), "--algo", "tsgsu", "--prior", "0.5", "--quiet"],
         "--prior: `prior`"),
        (["predict"], "required"),
        (["frobnicate"], "invalid choice"),
    ]
    for argv, what in cases:
        code, line = _fails(argv, capsys)
        assert code == 2, (argv, line)
        assert what in line, (argv, line)
    assert not (tmp_path / "model.npz").exists() and not (tmp_path / "m.npz").exists()


def _write(path, data):
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(path)


def _truncated_gzip():
    text = "\n".join(f"{a:.6f},{b:.6f},{int(a > 0)}" for a, b in RNG.normal(size=(500, 2)))
    data = gzip.compress(text.encode())
    return data[: len(data) // 2]


def test_data_errors_exit_1(files, tmp_path, capsys):
    tmp = files["dir"]
    train = str(tmp / "train.svm")
    model = tmp_path / "m.npz"
    assert main(["train", str(files["train.csv.gz"]), str(model), "--algo", "s3gd", "--quiet"]) == 0
    capsys.readouterr()
    other = tmp_path / "plain.npz"
    np.savez(other, a=np.ones(2))
    cases = [
        (["train", str(tmp_path / "missing.svm")], "does not exist"),
        (["train", str(tmp_path)], "is a directory"),
        (["train", _write(tmp_path / "empty.csv", "")], "has no data rows"),
        (["train", _write(tmp_path / "header.csv", "a,b,label\n")], "has no data rows"),
        (["train", _write(tmp_path / "bad.svm", "1 1:0.5\n1 3\n")], "line 2: '3' is not an index:value pair"),
        (["train", _write(tmp_path / "word.svm", "cat 1:0.5\n")], "line 1: label 'cat' is not a number"),
        (["train", _write(tmp_path / "ragged.csv", "1,2,0\n1,0\n")], "not a valid CSV file"),
        (["train", _write(tmp_path / "text.csv", "1,2,0\nx,2,1\n")], "not a valid CSV file"),
        (["train", _write(tmp_path / "broken.csv.gz", _truncated_gzip())], "cannot be read"),
        (["train", _write(tmp_path / "gaps.csv", "1,2,a\n3,4,\n")], "have no label"),
        (["train", _write(tmp_path / "one.csv", "1,2,a\n3,4,a\n"), "--quiet"], "only one class"),
        (["train", train, "--algo", "tsgs3vm"], "needs unlabelled rows"),
        (["train", train, "--algo", "tsgsu"], "neither the similar marker"),
        (["train", train, str(tmp_path)], "is a directory"),
        (["train", train, str(tmp_path / "no" / "m.npz")], "does not exist"),
        (["predict", str(other), train], "without the model header"),
        (["predict", _write(tmp_path / "notes.txt", "hello"), train], "is not a model file"),
        (["predict", str(tmp_path / "missing.npz"), train], "No such file"),
        (["predict", str(model), train, str(tmp_path)], "is a directory"),
        (["predict", str(model), train, str(tmp_path / "no" / "p.txt")], "does not exist"),
        (["predict", str(model), _write(tmp_path / "wide.csv", "1,2,3,4,5,6,a\n")], "expects 4"),
        (["predict", str(model), train, "/dev/full"], "No space left on device"),
    ]
    for argv, what in cases:
        code, line = _fails(argv, capsys)
        assert code == 1, (argv, line)
        assert what in line, (argv, line)


def test_output_is_checked_before_training(files, tmp_path, capsys, monkeypatch):
    import algorithms.dsg

    def no_fit(*args, **kwargs):
        raise AssertionError("trained before checking the output path")

    monkeypatch.setattr(algorithms.dsg, "fit", no_fit)
    code, line = _fails(["train", str(files["dir"] / "train.svm"), str(tmp_path / "no" / "m.npz")], capsys)
    assert code == 1 and "does not exist" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_read_only_directory(files, tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    code, line = _fails(["train", str(files["dir"] / "train.svm"), str(folder / "m.npz")], capsys)
    assert code == 1 and "not writable" in line


def test_unwritable_directory_is_reported_before_training(files, tmp_path, capsys, monkeypatch):
    """(As root every directory is writable, so the check is driven through os.access.)"""
    import algorithms._cli.main as cli

    monkeypatch.setattr(cli.os, "access", lambda path, mode: False)
    code, line = _fails(["train", str(files["dir"] / "train.svm"), str(tmp_path / "m.npz")], capsys)
    assert code == 1 and "is not writable" in line
    assert not (tmp_path / "m.npz").exists()


def test_labels_keep_their_type():
    from algorithms._cli.datafile import Data, format_labels, typed_labels

    assert typed_labels(np.array(["+1", "-1", " 2"])).tolist() == [1, -1, 2]
    assert typed_labels(np.array(["1.0", "2"])).dtype == np.float64
    assert typed_labels(np.array(["a", "1"])).tolist() == ["a", "1"]
    assert typed_labels(np.array([1.0, -1.0])).dtype == np.int64  # LIBSVM's integral labels
    assert typed_labels(np.array([0.5, 1.0])).dtype == np.float64
    assert format_labels(np.array([1.0, -2.0, 0.25])) == ["1.0", "-2.0", "0.25"]
    assert format_labels(np.array([-1, 1])) == ["-1", "1"]
    data = Data(X=np.zeros((4, 1)), raw=np.array(["1", "1.0", "?", "x"]), path="d.csv")
    assert data.matches("1").tolist() == [True, True, False, False]
    assert data.missing().tolist() == [False, False, True, False]
    assert data.matches("x").tolist() == [False, False, False, True]


def test_full_disk_at_save_keeps_the_previous_model(files, tmp_path, capsys, monkeypatch):
    model = tmp_path / "m.npz"
    assert main(["train", str(files["train.csv.gz"]), str(model), "--algo", "s3gd", "--quiet"]) == 0
    before = model.read_bytes()

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_persistence.os, "fsync", disk_full)
    code, line = _fails(["train", str(files["dir"] / "train.svm"), str(model), "--algo", "sbp", "--quiet"], capsys)
    assert code == 1 and "No space left on device" in line
    assert model.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["m.npz"]


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_shows_the_traceback_before_or_after_the_subcommand(tmp_path, where):
    argv = ["train", str(tmp_path / "missing.svm")]
    with pytest.raises(FileNotFoundError):
        main(["--debug", *argv] if where == "before" else [*argv, "--debug"])


def test_version_is_the_distribution_s(capsys):
    from importlib.metadata import version

    import algorithms
    import kbackends

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.split()[-1] == version("kbackends") == kbackends.__version__ == algorithms.__version__


def test_every_option_has_help():
    parser = build_parser()
    for action in parser._subparsers._group_actions[0].choices["train"]._actions:
        assert action.help, action.dest
        assert "None" not in (action.help or ""), action.dest
    choices = parser._subparsers._group_actions[0].choices["train"]._option_string_actions["--dtype"].choices
    assert None not in choices


def test_registry_matches_the_modules():
    """The table's choices and options agree with the functions they feed."""
    import inspect

    from algorithms import dsg, s3gd, sbp, tsgs3vm, tsgsu
    from kbackends.random import KERNELS

    for row in ALGORITHMS.values():
        params = inspect.signature(row.fit).parameters
        assert set(row.options) - {"probability"} <= set(params), row.name  # probability: the estimators'
        assert "probability" not in row.options or "probability" in row.load_module().__dict__[
            {"sbp": "SBPClassifier"}.get(row.name, "DSGClassifier")]._params, row.name
        assert set(row.fixed) <= set(params), row.name
    assert set(ALGORITHMS["dsg"].choices["loss"]) == set(dsg.LOSSES)
    for name in ("dsg", "udsg", "cdsg", "tsgs3vm", "tsgsu"):
        assert set(ALGORITHMS[name].choices["kernel"]) <= set(KERNELS)  # "gaussian" is an alias of rbf
    assert set(ALGORITHMS["sbp"].choices["kernel"]) == set(sbp.KERNELS)
    assert set(ALGORITHMS["tsgs3vm"].choices["unlabeled_loss"]) == set(tsgs3vm.UNLABELED_LOSSES)
    assert set(ALGORITHMS["tsgsu"].choices["loss"]) == set(tsgsu.MARGIN_LOSSES)
    assert set(ALGORITHMS["tsgsu"].choices["correction"]) == set(tsgsu.CORRECTIONS)
    assert set(ALGORITHMS["s3gd"].names) == set(s3gd.DEFAULT_INNER_ITER)


def test_sbp_keeps_libsvm_rows_sparse(files, tmp_path, capsys):
    """--algo sbp trains on the LIBSVM file's CSR rows as read (cpu): the model holds CSR
    support vectors (saved as CSR parts) and predicts the sparse test file; a CSV file
    trains dense."""
    import scipy.sparse as sp

    # about a third of the entries stored: sparse in fact (a CSR with half or more stored is made dense)
    Xs = np.where(np.abs(X) < 1.0, 0.0, X)
    dump_svmlight_file(Xs[:N_TRAIN], Y[:N_TRAIN], str(tmp_path / "train.svm"))
    dump_svmlight_file(Xs[N_TRAIN:], Y[N_TRAIN:], str(tmp_path / "test.svm"))
    model = tmp_path / "m.npz"
    assert main(["train", str(tmp_path / "train.svm"), str(model), "--algo", "sbp", "--quiet", *FAST["sbp"]]) == 0
    assert sp.issparse(load(model).support_vectors)
    assert main(["predict", str(model), str(tmp_path / "test.svm"), str(tmp_path / "p.txt")]) == 0
    assert float(capsys.readouterr().out.split("accuracy ")[1].split("%")[0]) > 70
    assert main(["train", str(files["train.csv.gz"]), str(model), "--algo", "sbp", "--quiet", *FAST["sbp"]]) == 0
    assert not sp.issparse(load(model).support_vectors)


@pytest.mark.parametrize("algo, options", [
    ("dsg", ["--n-iter", "auto"]),
    ("tsgs3vm", ["--n-iter", "auto"]),
    ("sbp", ["--nu", "auto", "--gamma", "scale", "--n-iter", "auto"]),
    ("s3gd", ["--step", "auto"]),
])
def test_auto_values_on_the_command_line(files, tmp_path, algo, options):
    """'auto' (and SBP's 'scale') are the tables' data-driven values; a word an option
    does not take is a usage error."""
    data = files["dir"] / ("ssl.svm" if algo == "tsgs3vm" else "train.svm")
    extra = ["--unlabeled-label", "0"] if algo == "tsgs3vm" else []
    model = tmp_path / "m.npz"
    assert main(["train", str(data), str(model), "--algo", algo, "--quiet", *options, *extra]) == 0
    assert load(model).n_features_in == X.shape[1]
    with pytest.raises(SystemExit) as stop:
        main(["train", str(data), str(model), "--algo", algo, "--quiet", "--batch-size", "auto"])
    assert stop.value.code == 2


@pytest.mark.parametrize("how", ["same path", "dot path", "symbolic link", "hard link"])
@pytest.mark.parametrize("case", ["train: model is the data", "predict: output is the model",
                                  "predict: output is the data"])
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(files, tmp_path, capsys, case, how):
    """Writing the model or the predictions over an input destroys the user's file: refused
    before anything runs, in one line, exit 2, the input byte for byte as it was."""
    data = tmp_path / "train.svm"
    data.write_bytes((files["dir"] / "train.svm").read_bytes())
    model = tmp_path / "m.npz"
    assert main(["train", str(data), str(model), "--algo", "dsg", "--quiet", *FAST["dsg"]]) == 0
    capsys.readouterr()
    victim = data if case.endswith("the data") else model
    before = victim.read_bytes()
    if how == "same path":
        out = victim
    elif how == "dot path":
        out = tmp_path / "." / victim.name
    elif how == "symbolic link":
        out = tmp_path / "link"
        out.symlink_to(victim)
    else:
        out = tmp_path / "hard"
        os.link(victim, out)
    argv = (["train", str(data), str(out), "--algo", "dsg", "--quiet"] if case.startswith("train")
            else ["predict", str(model), str(data), str(out)])
    code, line = _fails(argv, capsys)
    assert code == 2 and "would destroy" in line and line.count("\n") == 0
    assert victim.read_bytes() == before


def test_the_catalog_and_the_model_classes_agree_on_the_algorithms():
    """Every row's model.algorithm values are among its model class's ALGORITHMS (what the
    loader accepts), and every value a model class accepts has the row that predicts it."""
    import algorithms
    from algorithms._catalog import for_model

    for row in ALGORITHMS.values():
        assert set(row.names) <= set(getattr(algorithms, row.model_type).ALGORITHMS), row.name
    for cls in (algorithms.RFFModel, algorithms.LinearModel, algorithms.KernelExpansionModel):
        for name in cls.ALGORITHMS:
            assert for_model(name) is not None and for_model(name).model_type == cls.__name__, name
