"""
# The GPU against the CPU as rows grow (recorded figures)

Figures recorded by `python -m algorithms gpu-check` on one NVIDIA H100 (the reports are
`docs/gpu/h100-8cf2c63-check.json` for the size sweep and `docs/gpu/h100-849b5f8-check.json`
for the one-pass fits; docs/benchmarks.md "GPU" says how they were run): this page plots
them and runs no GPU code, so the documentation builds anywhere. Left: DSG's fit time, 200
iterations of 4,096 rows, on the cuda engine (its fused random-feature kernels, and again
with cuBLAS's product in memory) and on the cpu engine of the same host (16 cores), same
rows and same model; then one pass over 10 and 100 million rows drawn on the device with a
16,384-feature budget. Right: the cuda engine's speed-up over the cpu engine. At 200
iterations the device's time hardly grows with the rows (the host's time per iteration
sets most of it), while the cpu engine's grows with the rows (its predictions over the
blocks) until it stops at the feature budget.
"""

import json
from pathlib import Path

import matplotlib.pyplot as plt


def recorded(name):
    """The check's report, found from this file or from the working directory (the build's)."""
    here = Path(globals().get("__file__", "examples/plot_gpu_against_cpu.py")).resolve()
    for base in (here.parent.parent, Path.cwd(), Path.cwd().parent):
        path = base / "docs" / "gpu" / name
        if path.exists():
            return json.loads(path.read_text())
    raise FileNotFoundError(f"docs/gpu/{name} (the recorded GPU check) is not in this checkout")


sweep = recorded("h100-8cf2c63-check.json")["steps"]["sweep"]["sweep"]
scale = recorded("h100-849b5f8-check.json")["steps"]["scale"]["scale"]
for row in sweep:
    print(f"{row['rows']:>11,} rows  device {row['device_s']:6.3f} s (cuBLAS product {row['device_cublas_s']:6.3f} s)  "
          f"cpu {row['cpu_s']:6.2f} s  "
          f"{row['speedup_vs_cpu']:5.1f}x  accuracy {row['device_acc']:.3f} / {row['cpu_acc']:.3f}")
for row in scale:
    print(f"{row['rows']:>11,} rows  device {row['fit_s']:6.2f} s  one pass, {row['iterations']:,} iterations, "
          f"accuracy {row['accuracy']:.3f}, device memory {row['device_pool_mb'] / 1024:.1f} GiB")

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
n_sweep = [row["rows"] for row in sweep]
left.plot(n_sweep, [row["device_s"] for row in sweep], "o-", label="cuda engine, 200 iterations")
left.plot(n_sweep, [row["device_cublas_s"] for row in sweep], "x--", label="the same, cuBLAS product in memory")
left.plot(n_sweep, [row["cpu_s"] for row in sweep], "s-", label="cpu engine (16 cores), 200 iterations")
left.plot([row["rows"] for row in scale], [row["fit_s"] for row in scale], "^-",
          label="cuda engine, one pass, 16,384 features")
left.set(xscale="log", yscale="log", xlabel="training rows", ylabel="fit seconds")
left.legend(fontsize=8)
right.plot(n_sweep, [row["speedup_vs_cpu"] for row in sweep], "o-")
right.set(xscale="log", xlabel="training rows", ylabel="cuda engine's speed / cpu engine's", ylim=(0, None))
fig.suptitle("Recorded by gpu-check on an H100 (not run in this build)", fontsize=10)
fig.tight_layout()
plt.show()
