"""The GPU report as Markdown: device, tests, ops against the roofline, whole fits."""

from __future__ import annotations

from ..common import pipe_table


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def _ms(row, key):
    return _fmt(row[key] * 1e3 if key in row else None, ".3f")


def _pct(row, key):
    return _fmt(100 * row[key] if key in row else None, ".2f")


def _section(title, caption, columns, rows):
    """A section's heading, its caption and its table."""
    return ["", f"## {title}", "", caption, "", pipe_table(columns, rows)]


def _error_rows(name, row, keys, n_columns):
    """One table row per error the measurement of ``row`` recorded (the other cells empty)."""
    return [[name, f"{key}: {row[key][:200]}"] + [""] * (n_columns - 2) for key in keys if key in row]


def _op_rows(measured):
    """The ops table's rows: one per op and shape, then one per error it recorded."""
    rows = []
    for r in measured:
        rows.append([r["op"], r["shape"], f"{r['flops'] / 1e9:.3g}", f"{r['bytes'] / 1e6:.3g}", _ms(r, "model_s"),
                     _ms(r, "device_s"), _fmt(r.get("gflops"), ".1f"), _fmt(r.get("gbytes"), ".1f"),
                     _fmt(r.get("roofline_pct"), ".1f"), _ms(r, "cpu_s"), f"{_fmt(r.get('speedup_vs_cpu'), '.1f')}x"])
        rows += _error_rows(r["op"], r, ("device_error", "cpu_error"), 11)
    return rows


def _fit_rows(measured):
    """The fits table's rows: one per fit, then one per error it recorded."""
    rows = []
    for r in measured:
        counts = r.get("launches")
        launches = "-" if counts is None else f"{counts['fast']} / {counts['numba']}"
        rows.append([r["title"], _fmt(r.get("device_s"), ".3f"), _pct(r, "device_acc"), _fmt(r.get("cpu_s"), ".3f"),
                     _pct(r, "cpu_acc"), f"{_fmt(r.get('speedup_vs_cpu'), '.1f')}x", launches,
                     _fmt(r.get("device_numba_s"), ".3f")])
        rows += _error_rows(r["title"], r, ("error", "device_error", "cpu_error", "device_numba_error"), 8)
    return rows


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
    lines += _section(
        "Ops against the roofline",
        "float32; model = max(flops / FP32 peak, bytes / bandwidth); % roofline = model / measured "
        "(median of warm calls); cpu = the cpu engine on the same arrays, same run.",
        ["op", "shape", "GFLOP", "MB", "model ms", "device ms", "GFLOP/s", "GB/s", "% roofline", "cpu ms", "vs cpu"],
        _op_rows(report["ops"]))
    lines += _section(
        "Whole fits against the cpu engine",
        "launches: the device fit's kernel launches through cuda.core / through Numba; device s with "
        "Numba's launches: the same fit with `KBACKENDS_FAST_LAUNCH=0`, same run.",
        ["fit", "device s", "device acc %", "cpu s", "cpu acc %", "speed-up", "launches",
         "device s with Numba's launches"], _fit_rows(report["fits"]))
    return "\n".join(lines) + "\n"
