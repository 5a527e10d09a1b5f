"""The bench runner: sections in, one Markdown report and PNG plots out."""

import sys
import types

import numpy as np
import pytest

from algorithms import bench as _bench
from algorithms._cli.main import main
from algorithms.bench.common import pipe_table


@pytest.fixture
def fake_section(monkeypatch):
    calls = []

    def run_section(data_dir=None, quick=False, backend="cpu", progress=print):
        calls.append((data_dir, quick, backend))
        rows = [
            _bench.Row("toy", "peer", 0.80, 2.0, 1.0, 5.0, "10 SV"),
            _bench.Row("toy", "ours", 0.90, 0.5, 0.25, float("nan"), "64 features", accuracy_std=0.01),
        ]
        return {"title": "Toy section", "rows": rows, "peer": "peer", "markdown": "extra study text\n",
                "plots": [("toy.png", _bench.accuracy_time_figure(rows, "toy"))]}

    module = types.ModuleType("fake_bench_section")
    module.run_section = run_section
    monkeypatch.setitem(sys.modules, "fake_bench_section", module)
    monkeypatch.setitem(_bench.SECTIONS, "toy", "fake_bench_section")
    return calls


def test_run_writes_table_ratio_and_plot(fake_section, tmp_path, table_rows):
    lines = []
    sections = _bench.run(out_dir=tmp_path, quick=True, only=["toy"], progress=lines.append)
    assert fake_section == [(None, True, "cpu")]
    assert len(sections) == 1 and sections[0]["seconds"] >= 0
    report = (tmp_path / "results.md").read_text()
    assert "by `python -m algorithms bench` (--quick, backend cpu) at commit" in report
    assert "## Toy section" in report and "extra study text" in report
    # fit + predict over the peer's: 0.75 / 3.0
    rows = table_rows(report)
    assert ["dataset", "method", "accuracy", "fit s", "predict s", "time vs peer", "peak traced MiB", "size"] in rows
    assert ["toy", "ours", "90.00% ± 1.00", "0.50", "0.25", "0.25x", "-", "64 features"] in rows
    assert ["toy", "peer", "80.00%", "2.00", "1.00", "1.00x", "5", "10 SV"] in rows
    png = (tmp_path / "toy.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![toy.png](toy.png)" in report
    assert any("section toy done" in line for line in lines)


def test_unknown_section_is_named(tmp_path):
    with pytest.raises(ValueError, match="unknown bench section.*nope"):
        _bench.run(out_dir=tmp_path, only=["nope"], progress=lambda line: None)


def test_cli_only_option_reaches_runner(fake_section, tmp_path, capsys):
    assert main(["bench", "--quick", "--only", "toy", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "results.md").exists()
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--only", "nope", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "unknown bench section" in capsys.readouterr().err


def test_subsample_is_random_and_keeps_pairs():
    X = np.arange(100.0)[:, None]
    y = np.arange(100)
    Xs, ys = _bench.subsample(X, y, 10, 0)
    assert len(ys) == 10 and np.array_equal(Xs[:, 0], ys) and np.all(np.diff(ys) > 0)
    assert not np.array_equal(ys, np.arange(10))
    assert _bench.subsample(X, y, 1000, 0)[1] is y


def test_a_missing_extra_is_named(fake_section, tmp_path, monkeypatch, capsys):
    """The core install has no matplotlib: the bench says which extra brings it, in
    Python and on the command line (one line, exit 1), before any section runs."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ModuleNotFoundError
    with pytest.raises(ModuleNotFoundError, match=r'matplotlib.*pip install "kbackends\[bench\]"') as exc:
        _bench.run(out_dir=tmp_path, only=["toy"], progress=lambda line: None)
    assert exc.value.name == "matplotlib"
    assert fake_section == [] and not (tmp_path / "results.md").exists()
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--only", "toy", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and 'pip install "kbackends[bench]"' in err and "internal error" not in err


def _digits_8():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:400] / 16.0, np.where(y[:400] == 8, 1, -1)
    return X[:300], y[:300], X[300:], y[300:]


def test_the_svc_peer_falls_back_to_scikit_learns_without_sklearnex(monkeypatch):
    """scikit-learn-intelex absent (its import mocked to fail): libsvm's SVC, named so in
    the rows and the note."""
    import sklearn.svm

    from algorithms.bench import dsg, protocols, sbp

    monkeypatch.setitem(sys.modules, "sklearnex", None)
    monkeypatch.setitem(sys.modules, "sklearnex.svm", None)
    name, svc = protocols.svc_peer()
    assert (name, svc) == (protocols.SKLEARN_SVC, sklearn.svm.SVC)
    assert "sklearn SVC" in protocols.svc_peer_note() and "not installed" in protocols.svc_peer_note()
    X, y, Xt, yt = _digits_8()
    model, row = sbp._svc_row("digits", X, y, Xt, yt, 10.0, 0.05, lambda line: None)
    assert type(model) is sklearn.svm.SVC and row.method == "sklearn SVC" and row.accuracy > 0.9
    rows = dsg.peers("digits", X, y, Xt, yt, {"gamma": 0.05, "svc_C": 10.0}, lambda line: None)
    assert [r.method for r in rows][0] == "sklearn SVC"


def test_the_svc_peer_is_onedals_where_sklearnex_is_installed(monkeypatch):
    """A stand-in ``sklearnex.svm`` module: the bench's SVC rows run its SVC and say so."""
    import sklearn.svm

    from algorithms.bench import demo, protocols, sbp

    made = []

    class OneDalSVC(sklearn.svm.SVC):
        def fit(self, X, y, sample_weight=None):
            made.append(self.get_params()["C"])
            return super().fit(X, y, sample_weight)

    package, module = types.ModuleType("sklearnex"), types.ModuleType("sklearnex.svm")
    module.SVC = OneDalSVC
    package.svm = module
    monkeypatch.setitem(sys.modules, "sklearnex", package)
    monkeypatch.setitem(sys.modules, "sklearnex.svm", module)
    assert protocols.svc_peer() == (protocols.ONEDAL_SVC, OneDalSVC)
    assert protocols.svc_peer_note().startswith("SVC peer: oneDAL SVC, scikit-learn-intelex")
    X, y, Xt, yt = _digits_8()
    model, row = sbp._svc_row("digits", X, y, Xt, yt, 10.0, 0.05, lambda line: None)
    assert isinstance(model, OneDalSVC) and row.method == "oneDAL SVC" and made and set(made) == {10.0}
    assert protocols.ONEDAL_SVC in protocols.dsg_peers({"gamma": 0.05, "svc_C": 1.0})
    assert "sklearn SVC" not in protocols.dsg_peers({"gamma": 0.05, "svc_C": 1.0})
    assert demo.svc_peer is protocols.svc_peer  # the demo names the same SVC


def test_onedals_svc_when_it_is_really_installed():
    """With scikit-learn-intelex installed, the peer is its SVC and learns like libsvm's."""
    sklearnex_svm = pytest.importorskip("sklearnex.svm")
    from sklearn.svm import SVC

    from algorithms.bench import protocols, sbp

    assert protocols.svc_peer() == (protocols.ONEDAL_SVC, sklearnex_svm.SVC)
    X, y, Xt, yt = _digits_8()
    _, row = sbp._svc_row("digits", X, y, Xt, yt, 10.0, 0.05, lambda line: None)
    reference = SVC(C=10.0, gamma=0.05).fit(X, y).score(Xt, yt)
    assert row.method == "oneDAL SVC" and abs(row.accuracy - reference) <= 0.02


def test_pipe_table_keeps_the_cells_text_and_aligns_in_the_rule(table_rows):
    text = pipe_table(["name", "count", "share"], [["a", "007", "1e5"], ["long name", 12, "1.50"]],
                      align=["left", "right", "center"])
    header, rule, *rows = table_rows(text)
    assert header == ["name", "count", "share"]
    assert rows == [["a", "007", "1e5"], ["long name", "12", "1.50"]]  # never re-read as numbers
    assert [(c.startswith(":"), c.endswith(":")) for c in rule] == [(True, False), (False, True), (True, True)]
    assert all(set(c) <= set(":-") for c in rule)
    lines = text.splitlines()
    assert len(lines) == 4 and len({len(line) for line in lines}) == 1  # padded to common widths
    assert lines[3].startswith("| long name |") and lines[3].endswith("|  1.50   |")


def test_pipe_table_escapes_bars_and_line_breaks(table_rows):
    text = pipe_table(["a|b", "error"], [["x", "ValueError: p | q\nsecond line"]])
    assert "a\\|b" in text and "p \\| q<br>second line" in text and len(text.splitlines()) == 3
    assert table_rows(text)[0] == ["a|b", "error"]
    assert table_rows(text)[2] == ["x", "ValueError: p | q<br>second line"]


def test_pipe_table_of_no_rows_is_its_header(table_rows):
    text = pipe_table(["x", "y"], [], align=["right", "left"])
    assert len(text.splitlines()) == 2 and table_rows(text)[0] == ["x", "y"]
    assert pipe_table(["x", "y"], iter([])) == pipe_table(["x", "y"], [])


def test_pipe_table_refuses_ragged_rows_and_unknown_alignments():
    with pytest.raises(ValueError, match="a row of 1 cells under a header of 2"):
        pipe_table(["x", "y"], [["1", "2"], ["3"]])
    with pytest.raises(ValueError, match="align must give one of"):
        pipe_table(["x", "y"], [], align=["right"])
    with pytest.raises(ValueError, match="align must give one of"):
        pipe_table(["x"], [], align=["decimal"])


def test_pipe_table_names_the_extra_when_tabulate_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "tabulate", None)
    with pytest.raises(ModuleNotFoundError, match=r'tabulate.*pip install "kbackends\[bench\]"'):
        pipe_table(["x"], [["1"]])
