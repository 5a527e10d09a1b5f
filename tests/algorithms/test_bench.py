"""The bench runner: sections in, one Markdown report and PNG plots out."""

import sys
import types

import numpy as np
import pytest

from algorithms import bench as _bench
from algorithms._cli.main import main


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


def test_run_writes_table_ratio_and_plot(fake_section, tmp_path):
    lines = []
    sections = _bench.run(out_dir=tmp_path, quick=True, only=["toy"], progress=lines.append)
    assert fake_section == [(None, True, "cpu")]
    assert len(sections) == 1 and sections[0]["seconds"] >= 0
    report = (tmp_path / "results.md").read_text()
    assert "by `python -m algorithms bench` (--quick, backend cpu) at commit" in report
    assert "## Toy section" in report and "extra study text" in report
    # fit + predict over the peer's: 0.75 / 3.0
    assert "| toy | ours | 90.00% ± 1.00 | 0.50 | 0.25 | 0.25x | - | 64 features |" in report
    assert "| toy | peer | 80.00% | 2.00 | 1.00 | 1.00x | 5 | 10 SV |" in report
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
