"""The command line's options that mirror the estimators': DSG's early stopping
(--early-stopping, --validation-fraction, --n-iter-no-change, --tol), S3GD's --tol, and
--probability (DSG family, SBP) with predict --proba."""

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from algorithms import load
from algorithms._cli.main import main

RNG = np.random.default_rng(1)
X = RNG.normal(size=(300, 3))
Y = np.where(X[:, 0] + 0.3 * RNG.normal(size=300) > 0, 1, -1)
FAST_DSG = ["--n-iter", "12", "--batch-size", "64", "--block-size", "16"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli_options")
    dump_svmlight_file(X[:200], Y[:200], str(tmp / "train.svm"))
    dump_svmlight_file(X[200:], Y[200:], str(tmp / "test.svm"))
    return tmp


def test_dsg_early_stopping_options_reach_the_model(data, tmp_path):
    model = tmp_path / "m.npz"
    assert main(["train", str(data / "train.svm"), str(model), "--quiet", *FAST_DSG, "--early-stopping", "true",
                 "--validation-fraction", "0.25", "--n-iter-no-change", "3", "--tol", "0.05"]) == 0
    params = load(model).params
    assert params["early_stopping"] is True
    assert (params["validation_fraction"], params["n_iter_no_change"], params["tol"]) == (0.25, 3, 0.05)
    assert main(["train", str(data / "train.svm"), str(model), "--quiet", *FAST_DSG, "--early-stopping", "false"]) == 0
    assert load(model).params["early_stopping"] is False and load(model).params["n_iter_done"] == 12


@pytest.mark.parametrize("tol, recorded", [("none", None), ("0.01", 0.01), ("auto", "default")])
def test_s3gd_tol(data, tmp_path, tol, recorded):
    """'auto' is the default tolerance with the default step (s3gd's table), 'none' never stops early."""
    from algorithms.s3gd._setup import DEFAULT_TOL

    recorded = DEFAULT_TOL if recorded == "default" else recorded
    model = tmp_path / "m.npz"
    assert main(["train", str(data / "train.svm"), str(model), "--algo", "s3gd", "--quiet", "--max-epochs", "2",
                 "--tol", tol]) == 0
    assert load(model).params["tol"] == recorded


@pytest.mark.parametrize("algo, fast", [("dsg", FAST_DSG), ("sbp", ["--nu", "0.05", "--n-iter", "300"])])
def test_probability_then_predict_proba(data, tmp_path, capsys, algo, fast):
    model, out = tmp_path / "m.npz", tmp_path / "p.txt"
    assert main(["train", str(data / "train.svm"), str(model), "--algo", algo, "--quiet", "--probability", *fast]) == 0
    fitted = load(model)
    assert fitted.has_proba and fitted.params["calibration"]["n_rows"] == 20  # 10% held out
    assert main(["predict", str(model), str(data / "test.svm"), str(out), "--proba"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "labels -1 1" and len(lines) == 1 + 100
    rows = np.array([line.split() for line in lines[1:]], dtype=float)
    np.testing.assert_allclose(rows[:, 1:].sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(rows[:, 1:], fitted.predict_proba(X[200:]), atol=1e-5)
    plain = tmp_path / "plain.txt"  # the labels are predict's, as without --proba
    assert main(["predict", str(model), str(data / "test.svm"), str(plain)]) == 0
    assert [line.split()[0] for line in lines[1:]] == plain.read_text().splitlines()
    assert np.mean(rows[:, 0] == Y[200:]) > 0.8
    capsys.readouterr()


def _usage_error(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("options, message", [
    (["--early-stopping", "maybe"], "--early-stopping: must be 'auto', 'true' or 'false'"),
    (["--validation-fraction", "1.5"], "--validation-fraction: must be a number in (0, 1)"),
    (["--n-iter-no-change", "0"], "--n-iter-no-change: must be an integer >= 1"),
    (["--tol", "-1"], "--tol: must be a finite number >= 0"),
    (["--tol", "auto"], "--tol: `tol` must be"),
    (["--tol", "none"], "--tol: `tol` must be"),
    (["--algo", "sbp", "--early-stopping", "true"], "--early-stopping does not apply to --algo sbp"),
    (["--algo", "s3gd", "--probability"], "--probability does not apply to --algo s3gd"),
    (["--loss", "squared", "--probability"], "--probability needs a classifier"),
])
def test_bad_values_are_usage_errors(data, tmp_path, capsys, options, message):
    model = tmp_path / "m.npz"
    err = _usage_error(["train", str(data / "train.svm"), str(model), "--quiet", *options], capsys)
    assert message in err, err
    assert not model.exists()


def test_proba_needs_a_model_with_probabilities(data, tmp_path, capsys):
    model = tmp_path / "m.npz"
    assert main(["train", str(data / "train.svm"), str(model), "--quiet", *FAST_DSG]) == 0
    err = _usage_error(["predict", str(model), str(data / "test.svm"), str(tmp_path / "p.txt"), "--proba"], capsys)
    assert "has no probabilities" in err and not (tmp_path / "p.txt").exists()
