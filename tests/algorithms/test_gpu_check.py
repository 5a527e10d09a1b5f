"""``python -m algorithms gpu-check``: the five-minute GPU check. Its dry run under the
simulator (what CI runs: the steps the report's own dry run does not cover), each step in a
process of its own; and a step that overruns its limit is killed and recorded, the check
going on."""

import json
import sys

import pytest

from algorithms.bench.gpu_report import check


@pytest.mark.cuda
def test_dry_run_writes_every_step(tmp_path, device_tool_backend):
    from algorithms._cli.main import main

    backend = device_tool_backend
    steps = "env,gate,probe,scale,sweep,asv,suite,shapes"  # fits and ops: what test_gpu_report's dry run runs
    assert main(["gpu-check", "--out", str(tmp_path), "--small", "--backend", backend, "--only", steps]) == 0
    report = json.loads((tmp_path / "check.json").read_text())
    assert list(report["steps"]) == steps.split(",")
    assert all(step["status"] == "ok" for step in report["steps"].values()), report["steps"]
    env, gate = report["steps"]["env"], report["steps"]["gate"]
    assert env["versions"]["numpy"] and env["fast_equals_numba_bitwise"] is True
    assert gate["returncode"] == 0 and "passed" in gate["summary"] and (tmp_path / "tests.log").exists()
    suite = report["steps"]["suite"]
    assert suite["returncode"] == 0 and "passed" in suite["summary"] and suite["failed_tests"] == []
    assert " PASSED" in (tmp_path / "suite.log").read_text()  # -v: each outcome as it ends
    assert "skipped" in report["steps"]["probe"] if backend == "cudasim" else "solve" in report["steps"]["probe"]
    for row in report["steps"]["scale"]["scale"]:
        assert row["fit_s"] > 0 and 0.4 < row["accuracy"] <= 1.0, row
    for row in report["steps"]["sweep"]["sweep"]:  # the same rows on both engines: the same model
        assert row["device_acc"] == pytest.approx(row["cpu_acc"], abs=0.02), row
    asv = report["steps"]["asv"]["asv"]
    assert {row["backend"] for row in asv} == {backend, "cpu"} and all("median_s" in row for row in asv), asv
    shapes = report["steps"]["shapes"]["shapes"]  # cuBLAS's path, then the shapes: each the same values
    assert len(shapes) == 3 and all(row["predict_ms"] > 0 for row in shapes), shapes
    assert all(row["predict_rel_diff"] < 1e-5 and row["weighted_sum_rel_diff"] < 1e-5 for row in shapes[1:]), shapes
    text = (tmp_path / "check.md").read_text()
    for heading in ("## env", "## gate", "## probe", "## scale", "## sweep", "## asv", "## suite", "## shapes"):
        assert heading in text


def test_a_step_past_its_limit_is_killed_and_the_check_goes_on(tmp_path, monkeypatch, table_rows):
    calls, run_limited = [], check._run_limited

    def fake_run_limited(cmd, limit):
        calls.append(cmd[cmd.index("--step") + 1])
        if calls[-1] == "env":  # a step that hangs: the real limit kills it
            return run_limited([sys.executable, "-c", "import time; time.sleep(30)"], 1.0)
        return "ok"

    monkeypatch.setattr(check, "_run_limited", fake_run_limited)
    report = check.run(tmp_path, backend="cpu", only="env,gate", progress=lambda *a, **k: None)
    assert calls == ["env", "gate"]
    assert report["steps"]["env"]["status"] == "killed at its limit (1 s)" and report["steps"]["gate"]["status"] == "ok"
    header, _, *rows = table_rows((tmp_path / "check.md").read_text())[:4]  # the steps' table
    assert header == ["step", "status", "seconds"]
    assert [row[:2] for row in rows] == [["env", "killed at its limit (1 s)"], ["gate", "ok"]]


@pytest.mark.cuda
def test_the_shape_sweep_restores_the_kernels_constants(device_tool_backend):
    """The sweep sets the fused kernels' constants one shape at a time; after it (and after
    a shape that fails) they are the library's again."""
    from algorithms.bench.gpu_report.shapes import CONSTANTS, sweep_shapes
    from kbackends import resolve
    from kbackends.testing import kernel_module

    fused = kernel_module("rff", "cuda_fused")
    before = {name: getattr(fused, name) for name in CONSTANTS}
    rows = sweep_shapes(resolve(device_tool_backend), n=8, d=3, m=5, changes=({"R": 2}, {"R": 0}), repeat=1)
    assert rows[1]["predict_rel_diff"] < 1e-5 and "error" in rows[2]  # no rows a thread: a shape that fails
    assert {name: getattr(fused, name) for name in CONSTANTS} == before


def test_a_test_step_cut_at_its_limit_still_names_its_failures(tmp_path, monkeypatch):
    """The suite's log is read by the check itself after the step: the outcome lines of
    ``-v`` (with and without pytest-xdist) and ``-rA`` summaries name the failed tests,
    also when the step was killed before pytest's summary."""
    log = "\n".join([
        "tests/a/test_x.py::test_one PASSED                       [  1%]",
        "[gw3] [ 40%] FAILED tests/a/test_y.py::test_two[float32]",
        "tests/b/test_z.py::test_three ERROR                      [ 50%]",
        "[gw1] [ 60%] PASSED tests/a/test_y.py::test_four",
        "FAILED tests/a/test_y.py::test_two[float32] - AssertionError: 3 != 4",
    ])

    def fake_run_limited(cmd, limit):
        (tmp_path / "suite.log").write_text(log)  # what a suite cut by its limit leaves
        return f"killed at its limit ({limit:.0f} s)"

    monkeypatch.setattr(check, "_run_limited", fake_run_limited)
    report = check.run(tmp_path, backend="cpu", only="suite", progress=lambda *a, **k: None)
    step = report["steps"]["suite"]
    assert step["status"].startswith("killed") and "summary" not in step
    assert step["failed_tests"] == ["tests/a/test_y.py::test_two[float32]", "tests/b/test_z.py::test_three"]
    assert "failed: tests/a/test_y.py::test_two[float32], tests/b/test_z.py::test_three" in (
        (tmp_path / "check.md").read_text())


def test_unknown_steps_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown step"):
        check.run(tmp_path, only="env,warp")


@pytest.mark.cuda
def test_the_sbp_run_probe_times_both_engines_on_the_same_rows(gpu):
    from algorithms.bench.gpu_report.probe import sbp_run_costs

    (row,) = sbp_run_costs(gpu, shapes=((96, 4),), n_iter=12)["rows"]
    assert (row["rows"], row["values"]) == (96, 4)
    for run in ("device", "window", "window_graph", "cpu"):
        assert row[f"{run}_ms_an_iteration"] > 0
    assert sum(row["launches"].values()) >= 1  # the run, and again after each cold level
    assert all(0 <= m <= 96 for m in row["bands_at_end"])
    for run in ("window", "window_graph"):  # three launches an iteration; the first level of a fit was cold
        assert sum(row[f"{run}_launches"].values()) >= 3 * 12 and row[f"{run}_cold_levels"] >= 1
