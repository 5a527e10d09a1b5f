"""The command line: train / predict on LIBSVM and CSV files, the demo table."""

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from algorithms._cli.main import main, read_data
from algorithms.bench.protocols import svc_peer


@pytest.fixture
def files(tmp_path, cancer):
    X, y = cancer
    y = np.where(y == 1, 1, -1)
    dump_svmlight_file(X[:400], y[:400], str(tmp_path / "train.svm"))
    dump_svmlight_file(X[400:], y[400:], str(tmp_path / "test.svm"))
    np.savetxt(tmp_path / "test.csv", np.column_stack([X[400:], y[400:]]), delimiter=",",
               header=",".join([f"f{i}" for i in range(30)] + ["label"]), comments="")
    return tmp_path, X, y


def test_train_then_predict_libsvm_and_csv(files, capsys):
    tmp, X, y = files
    model = tmp / "m.npz"
    assert main(["train", str(tmp / "train.svm"), str(model), "--n-iter", "20", "--batch-size", "256",
                 "--block-size", "64", "--quiet"]) == 0
    assert model.exists()
    out = capsys.readouterr().out
    assert "trained dsg" in out and "training accuracy" in out

    preds = tmp / "p.txt"
    assert main(["predict", str(model), str(tmp / "test.svm"), str(preds)]) == 0
    out = capsys.readouterr().out
    accuracy = float(out.split("accuracy ")[1].split("%")[0])
    written = np.loadtxt(preds)
    assert written.shape == (len(y) - 400,)
    assert accuracy == pytest.approx(100 * np.mean(written == y[400:]), abs=0.01)
    assert accuracy > 93

    csv_preds = tmp / "c.txt"
    assert main(["predict", str(model), str(tmp / "test.csv"), str(csv_preds)]) == 0
    np.testing.assert_array_equal(np.loadtxt(csv_preds), written)


def test_progress_bar_on_stderr(files, capsys):
    tmp, _, _ = files
    main(["train", str(tmp / "train.svm"), str(tmp / "m.npz"), "--n-iter", "5", "--batch-size", "64",
          "--block-size", "16"])
    err = capsys.readouterr().err
    assert "5/5" in err and "loss=" in err  # the fit's own bar (verbose=1), its last loss read at the end


def test_read_data_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_data(tmp_path / "nope.svm")
    X, y = read_data(_csv(tmp_path), label_column="first")
    assert X.shape == (2, 2) and list(y) == [1.0, 0.0]


def _csv(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("1,0.5,0.25\n0,1.5,2.0\n")
    return p


def test_demo_runs_on_the_bundled_fallback(tmp_path, capsys):
    """With no data folder the demo's real part trains on scikit-learn's digits; the
    synthetic part prints DSG, the SVC on doubling subsamples and RBF + SGD; each part
    ends with DSG against its most accurate peer; the picture is written."""
    picture = tmp_path / "demo.png"
    assert main(["demo", "--quick", "--data", str(tmp_path / "no-such-folder"), "--plot", str(picture)]) == 0
    out = capsys.readouterr().out
    synthetic, digits = out[out.index("nonlinear 10,000 rows"):].split("digits-8-vs-rest")
    models = [row for row in synthetic.splitlines()[2:] if row.strip() and not row.startswith("DSG against")]
    assert models[0].startswith("DSGClassifier() ") and models[-1].startswith("RBFSampler(2048) + SGD ")
    svc_rows = [int(row.split()[2].replace(",", "")) for row in models[1:-1]]
    assert all(row.startswith(svc_peer()[0] + "() ") for row in models[1:-1]) and svc_rows[0] == 500
    assert svc_rows == [500 * 2**k for k in range(len(svc_rows))]
    for name in ("DSGClassifier()", svc_peer()[0] + "(C="):
        line = next(row for row in digits.splitlines() if row.startswith(name))
        accuracy = next(tok for tok in line.split() if tok.endswith("%"))
        assert float(accuracy.rstrip("%")) > 90
    assert synthetic.count("DSG against the most accurate peer") == digits.count("DSG against the most") == 1
    assert picture.stat().st_size > 10_000 and picture.read_bytes()[:4] == b"\x89PNG"


def test_demo_refuses_an_unknown_set_before_it_trains(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["demo", "--quick", "--dataset", "ijcnn1,nope", "--plot", "none"])
    assert stop.value.code == 2
    err = capsys.readouterr()
    assert "--dataset: unknown set(s) 'nope'" in err.err and "a9a" in err.err and err.out == ""


def test_demo_never_replaces_an_existing_picture(tmp_path, capsys):
    picture = tmp_path / "demo.png"
    picture.write_text("the user's file")
    assert main(["demo", "--quick", "--no-svc", "--dataset", "a9a", "--data", str(tmp_path),
                 "--plot", str(picture)]) == 0
    assert picture.read_text() == "the user's file"
    assert "picture not drawn: " + str(picture) + " exists" in capsys.readouterr().out


def test_user_errors_print_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["train", str(tmp_path / "missing.svm")])
    assert stop.value.code == 1  # a data error (exit 2 is for usage errors: options)
    err = capsys.readouterr().err
    assert "train: error:" in err and "does not exist" in err and "Traceback" not in err
    (tmp_path / "d.csv").write_text("1,0.5\n0,1.5\n")
    with pytest.raises(SystemExit) as stop:
        main(["train", str(tmp_path / "d.csv"), "--n-iter", "0", "--quiet"])
    assert stop.value.code == 2
    assert "--n-iter: must be an integer >= 1" in capsys.readouterr().err


def test_kernel_choices_are_the_one_kernel_table():
    """`--kernel` takes the names of kbackends.random.KERNELS (RFF algorithms) or of the
    response kernels (SBP) and nothing else."""
    from algorithms._catalog import ALGORITHMS
    from kbackends.ops import RESPONSE_KERNELS
    from kbackends.random import KERNELS

    for name, row in ALGORITHMS.items():
        expected = RESPONSE_KERNELS if name == "sbp" else KERNELS
        if "kernel" in row.choices:
            assert row.choices["kernel"] == tuple(expected)
    with pytest.raises(SystemExit) as stop:
        main(["train", "d.svm", "m.npz", "--kernel", "gaussian"])
    assert stop.value.code == 2


def test_the_installed_command_resolves_to_the_command_line(capsys, monkeypatch):
    """pyproject.toml's [project.scripts] names a callable that runs the command line under
    its own name (and, where this checkout is installed, the installed entry point is it)."""
    import importlib
    import importlib.metadata
    import tomllib
    from pathlib import Path

    from algorithms._cli.main import COMMAND

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    scripts = pyproject["project"]["scripts"]
    assert list(scripts) == [COMMAND]
    module, _, name = scripts[COMMAND].partition(":")
    console = getattr(importlib.import_module(module), name)
    monkeypatch.setattr("sys.argv", [COMMAND, "--version"])
    with pytest.raises(SystemExit) as exit_:
        console()
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"{COMMAND} ")
    monkeypatch.setattr("sys.argv", [COMMAND, "train", "no-such-file.svm", "m.npz"])
    with pytest.raises(SystemExit) as exit_:
        console()
    assert exit_.value.code == 1 and capsys.readouterr().err.startswith(f"{COMMAND} train: error:")
    installed = [ep for ep in importlib.metadata.entry_points(group="console_scripts") if ep.name == COMMAND]
    if installed:  # an install from this pyproject (CI's pip install -e .[test])
        assert installed[0].value == scripts[COMMAND]
