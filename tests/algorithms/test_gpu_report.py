"""``python -m algorithms gpu-report``: end to end at small sizes (under the simulator in CI,
a dry run of the GPU host's one command; on the GPU where there is one), and the roofline
read from a device (a stand-in CuPy here)."""

import json
import os

import pytest



@pytest.mark.cuda
def test_small_report_has_every_section(tmp_path, device_tool_backend, table_rows):
    from algorithms._cli.main import main

    backend = device_tool_backend
    kernels_tests = os.path.join(os.path.dirname(os.path.dirname(__file__)), "kbackends")
    assert main(["gpu-report", "--out", str(tmp_path), "--small", "--backend", backend,
                 "--pytest-args", f"{kernels_tests}/test_waterfill_cuda.py -k no_segment"]) == 0
    text = (tmp_path / "report.md").read_text()
    for heading in ("## Device", "## Tests", "## Ops against the roofline", "## Whole fits against the cpu engine"):
        assert heading in text
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["tests"]["returncode"] == 0 and "1 passed" in report["tests"]["summary"]
    assert report["device"]["peak_flops"] > 1e12 and report["device"]["peak_bytes"] > 1e11
    ops = {row["op"]: row for row in report["ops"]}
    assert set(ops) >= {"rff_predict", "rff_weighted_sum", "water_level", "water_level_biased", "prox_sgd_run",
                        "rff_predict@cublas", "rff_weighted_sum@cublas", "rff_predict@d32", "rff_predict@d32@cublas",
                        "rff_predict@numba", "water_level@numba"}
    assert set(ops) <= {row[0] for row in table_rows(text)}  # each op a row of the Markdown table
    for name, row in ops.items():  # the product-path and launch-path variants are timed on the device alone
        device_only = "@" in name
        assert row["device_s"] > 0 and (("cpu_s" not in row) if device_only else row["cpu_s"] > 0), row
    fits = {row["fit"]: row for row in report["fits"]}
    assert set(fits) == {"dsg-ijcnn1", "dsg-ijcnn1-dask", "tsgs3vm-skin", "tsgsu-a9a", "sbp-a9a", "s3gd-a9a",
                         "dsg-synthetic", "dsg-defaults-ijcnn1", "dsg-a9a-csr", "sbp-a9a-csr", "s3gd-a9a-csr"}
    sparse = fits["dsg-a9a-csr"]  # CSR on the device: the same model as on the cpu engine where a9a is there
    if "error" not in sparse:
        assert sparse["device_acc"] == pytest.approx(sparse["cpu_acc"], abs=0.02), sparse
    synthetic = fits["dsg-synthetic"]  # needs no data files: it must have run on both engines
    assert synthetic["device_acc"] == pytest.approx(synthetic["cpu_acc"], abs=0.05)
    for row in fits.values():  # each fit ran on both or says why not (a missing data folder or optional package)
        missing = "not installed" in row.get("device_error", "") and "not installed" in row.get("cpu_error", "")
        assert ("device_s" in row and "cpu_s" in row) or "error" in row or missing, row


def _fake_cupy(attributes, properties):
    import types

    class Device:
        id = 0
        compute_capability = "90"

    Device.attributes = attributes
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(Device=Device,
                                      runtime=types.SimpleNamespace(getDeviceProperties=lambda i: properties))
    return cupy


@pytest.mark.parametrize("where", ["attributes", "properties"])
def test_roofline_read_from_the_device(monkeypatch, where):
    """An H100 SXM's figures give its datasheet peaks: 132 SMs x 128 lanes x 2 x 1.98 GHz
    = 66.9 TFLOP/s; 2 x 2.619 GHz x 5120 bits / 8 = 3.35 TB/s. CUDA 13 dropped the
    clocks from the properties: the attributes come first."""
    import sys
    import types

    from algorithms.bench.gpu_report import device_roofline

    attrs = {"MultiProcessorCount": 132, "ClockRate": 1_980_000, "MemoryClockRate": 2_619_000,
             "GlobalMemoryBusWidth": 5120}
    props = {"multiProcessorCount": 132, "clockRate": 1_980_000, "memoryClockRate": 2_619_000,
             "memoryBusWidth": 5120}
    cupy = _fake_cupy(attrs if where == "attributes" else {}, {"name": b"NVIDIA H100 80GB HBM3",
                                                              **(props if where == "properties" else {})})
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    roof = device_roofline(types.SimpleNamespace(name="cuda"))
    assert roof["name"] == "NVIDIA H100 80GB HBM3" and not roof["nominal"]
    assert roof["peak_flops"] == pytest.approx(66.9e12, rel=1e-3)
    assert roof["peak_bytes"] == pytest.approx(3.352e12, rel=1e-3)


def test_roofline_falls_back_to_nominal_saying_why(monkeypatch):
    import sys
    import types

    from algorithms.bench.gpu_report import NOMINAL_H100, device_roofline

    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy({}, {"name": b"mystery"}))
    monkeypatch.setattr("numba.cuda.get_current_device", lambda: types.SimpleNamespace(), raising=False)
    roof = device_roofline(types.SimpleNamespace(name="cuda"))
    assert roof["nominal"] and roof["sms"] == NOMINAL_H100["sms"]
    assert "MultiProcessorCount" in roof["read_error"]


def test_parts_choose_the_sections(tmp_path, capsys, table_rows):
    """``--parts`` splits the report over calls (the GPU host allows ten minutes a
    command): only the named sections run; an unknown one is a usage error."""
    from algorithms._cli.main import main
    from algorithms.bench.gpu_report import run

    ops = ("rff_predict", "kernel_response_update", "water_level", "water_level_biased", "prox_sgd_run")
    report = run(tmp_path, small=True, backend="cpu", parts=["ops"],
                 skip=["rff_features", *ops[1:], "rff_weighted_sum", "rff_predict@cublas", "rff_weighted_sum@cublas",
                       "rff_predict@d32", "rff_predict@d32@cublas", *[f"{op}@numba" for op in ops]])
    assert report["tests"] is None and report["fits"] == []
    assert [row["op"] for row in report["ops"]] == ["rff_predict"]
    assert [row[0] for row in table_rows((tmp_path / "report.md").read_text())].count("rff_predict") == 1
    with pytest.raises(SystemExit) as exc:
        main(["gpu-report", "--out", str(tmp_path), "--parts", "tests,figures"])
    assert exc.value.code == 2 and "'figures'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="figures"):
        run(tmp_path, parts=["figures"])


def test_profile_writes_where_the_host_time_goes(tmp_path):
    """``--profile``: each fit that ran on the device is profiled once more (cProfile)
    into one file, a section per fit."""
    from algorithms._cli.main import main

    others = ["dsg-ijcnn1-dask", "tsgs3vm-skin", "tsgsu-a9a", "sbp-a9a", "s3gd-a9a", "dsg-defaults-ijcnn1",
              "dsg-a9a-csr", "sbp-a9a-csr", "s3gd-a9a-csr", "dsg-ijcnn1"]
    assert main(["gpu-report", "--out", str(tmp_path), "--small", "--backend", "cpu", "--parts", "fits", "--profile",
                 *[a for key in others for a in ("--skip", key)]]) == 0
    text = (tmp_path / "profiles.txt").read_text()
    assert text.startswith("## dsg-synthetic") and "tottime" in text and "_engine" in text
    report = json.loads((tmp_path / "report.json").read_text())
    assert [row["fit"] for row in report["fits"]] == ["dsg-synthetic"]
    assert report["fits"][0]["launches"] == {"fast": 0, "numba": 0}  # the cpu engine launches no CUDA kernel


def test_kbackends_command_says_where_the_report_moved(capsys):
    """kbackends knows nothing of the algorithms above it: its command line names the
    new home of the GPU report and stops (usage error)."""
    from kbackends.__main__ import main

    with pytest.raises(SystemExit) as exc:
        main(["gpu-report", "--out", "somewhere"])
    assert exc.value.code == 2
    assert "python -m algorithms gpu-report --out somewhere" in capsys.readouterr().err
