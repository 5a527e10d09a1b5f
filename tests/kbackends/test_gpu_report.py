"""``python -m kbackends gpu-report`` end to end at small sizes: under the simulator
in CI (a dry run of the GPU host's one command), on the GPU where there is one."""

import json
import os

import pytest

import kbackends

pytestmark = pytest.mark.cuda


def test_small_report_has_every_section(tmp_path):
    from kbackends.__main__ import main

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        backend = "cudasim"
    elif "cuda" in kbackends.available_backends():
        backend = "cuda"
    else:
        pytest.skip("no CUDA GPU here and the simulator is off")
    here = os.path.dirname(__file__)
    main(["gpu-report", "--out", str(tmp_path), "--small", "--backend", backend,
          "--pytest-args", f"{here}/test_waterfill_cuda.py -k no_segment"])
    text = (tmp_path / "report.md").read_text()
    for heading in ("## Device", "## Tests", "## Ops against the roofline", "## Whole fits against the cpu engine"):
        assert heading in text
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["tests"]["returncode"] == 0 and "1 passed" in report["tests"]["summary"]
    assert report["device"]["peak_flops"] > 1e12 and report["device"]["peak_bytes"] > 1e11
    ops = {row["op"]: row for row in report["ops"]}
    assert set(ops) >= {"rff_predict", "rff_weighted_sum", "water_level", "water_level_biased", "prox_sgd_run"}
    for row in ops.values():
        assert row["device_s"] > 0 and row["cpu_s"] > 0, row
    fits = {row["fit"]: row for row in report["fits"]}
    assert set(fits) == {"dsg-ijcnn1", "tsgs3vm-skin", "sbp-a9a", "s3gd-a9a", "dsg-synthetic"}
    synthetic = fits["dsg-synthetic"]  # needs no data files: it must have run on both engines
    assert synthetic["device_acc"] == pytest.approx(synthetic["cpu_acc"], abs=0.05)
    for row in fits.values():  # each fit either ran on both or says why not (a missing data folder)
        assert ("device_s" in row and "cpu_s" in row) or "error" in row, row
