"""The GPU report as Markdown: device, tests, ops against the roofline, whole fits."""

from __future__ import annotations


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def _ms(row, key):
    return _fmt(row[key] * 1e3 if key in row else None, ".3f")


def _pct(row, key):
    return _fmt(100 * row[key] if key in row else None, ".2f")


def _table_head(title, caption, columns):
    """A section's heading, its caption and the header of its table."""
    return ["", f"## {title}", "", caption, "", "| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]


def _error_rows(name, row, keys, n_columns):
    """One table row per error the measurement of ``row`` recorded."""
    return [f"| {name} | {key}: {row[key][:200]} |" + "|" * (n_columns - 2) for key in keys if key in row]


def markdown(report):
    dev, lines = report["device"], []
    lines += ["# GPU report", "",
              (f"{report['started']} UTC, {report['seconds']:.1f} s in all; backend `{report['backend']}`, "
               f"sizes `{report['sizes']}`; host {report['host']}."), "",
              "## Device", ""]
    lines.append(f"{dev['name']}: {dev['sms']} SMs x {dev['fp32_lanes']} FP32 lanes at {dev['clock_hz'] / 1e9:.3f} GHz "
                 f"-> **{dev['peak_flops'] / 1e12:.1f} TFLOP/s** FP32 FMA; memory {dev['mem_clock_hz'] / 1e9:.3f} GHz x "
                 f"{dev['bus_bits']} bits x 2 -> **{dev['peak_bytes'] / 1e12:.2f} TB/s**"
                 + (" (nominal figures: no device was read" + (f"; {dev['read_error']}" if "read_error" in dev else "")
                    + ")" if dev.get("nominal") else "") + ".")
    if "launch_path" in dev:
        lines.append(f"Fast launch: `{dev['launch_path']}`.")
    lines += ["", "## Tests", ""]
    tests = report.get("tests")
    if tests is None:
        lines.append("skipped (`--pytest-args none`).")
    else:
        lines.append(f"`{tests['command']}`: **{tests['summary']}** (exit {tests['returncode']}, "
                     f"{tests['seconds']:.1f} s; output in tests.log).")
    lines += _table_head(
        "Ops against the roofline",
        "float32; model = max(flops / FP32 peak, bytes / bandwidth); % roofline = model / measured "
        "(median of warm calls); cpu = the cpu engine on the same arrays, same run.",
        ["op", "shape", "GFLOP", "MB", "model ms", "device ms", "GFLOP/s", "GB/s", "% roofline", "cpu ms", "vs cpu"])
    for r in report["ops"]:
        lines.append(f"| {r['op']} | {r['shape']} | {r['flops'] / 1e9:.3g} | {r['bytes'] / 1e6:.3g} | {_ms(r, 'model_s')} | "
                     f"{_ms(r, 'device_s')} | {_fmt(r.get('gflops'), '.1f')} | {_fmt(r.get('gbytes'), '.1f')} | "
                     f"{_fmt(r.get('roofline_pct'), '.1f')} | {_ms(r, 'cpu_s')} | {_fmt(r.get('speedup_vs_cpu'), '.1f')}x |")
        lines += _error_rows(r["op"], r, ("device_error", "cpu_error"), 11)
    lines += _table_head(
        "Whole fits against the cpu engine",
        "launches: the device fit's kernel launches through cuda.core / through Numba; device s with "
        "Numba's launches: the same fit with `KBACKENDS_FAST_LAUNCH=0`, same run.",
        ["fit", "device s", "device acc %", "cpu s", "cpu acc %", "speed-up", "launches",
         "device s with Numba's launches"])
    for r in report["fits"]:
        counts = r.get("launches")
        launches = "-" if counts is None else f"{counts['fast']} / {counts['numba']}"
        lines.append(f"| {r['title']} | {_fmt(r.get('device_s'), '.3f')} | {_pct(r, 'device_acc')} | "
                     f"{_fmt(r.get('cpu_s'), '.3f')} | {_pct(r, 'cpu_acc')} | {_fmt(r.get('speedup_vs_cpu'), '.1f')}x | "
                     f"{launches} | "
                     f"{_fmt(r.get('device_numba_s'), '.3f')} |")
        lines += _error_rows(r["title"], r, ("error", "device_error", "cpu_error", "device_numba_error"), 8)
    return "\n".join(lines) + "\n"
