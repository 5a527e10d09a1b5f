"""The device's roofline (FP32 FMA peak and memory bandwidth) and the timing of one call."""

from __future__ import annotations

import time

import numpy as np

from kbackends import launch_path

# FP32 lanes per SM by compute capability (CUDA C Programming Guide, "Arithmetic
# Instructions" throughput table); 128 for anything newer than listed.
_FP32_LANES = {(6, 0): 64, (7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128}
# H100 SXM5: 132 SMs at 1.98 GHz boost (67 TFLOP/s FP32 FMA), HBM3 3.35 TB/s.
NOMINAL_H100 = {"name": "nominal H100 SXM (no device read)", "sms": 132, "clock_hz": 1.98e9, "fp32_lanes": 128,
                "mem_clock_hz": 2.619e9, "bus_bits": 5120, "nominal": True}

def device_roofline(backend):
    """Peak FP32 FMA rate (flop/s) and memory bandwidth (byte/s) of the backend's device.

    Each figure is read from CuPy's ``Device().attributes`` (cudaDevAttr* names
    without the prefix), else ``getDeviceProperties`` (CUDA 13 dropped the clocks
    from it), else Numba's device attributes. The simulator, or a device that
    reports none of them, gets :data:`NOMINAL_H100`, marked ``nominal``.
    """
    info = dict(NOMINAL_H100)
    if backend.name == "cuda":
        try:
            info = _read_device()
        except Exception as exc:  # noqa: BLE001 - the report goes on with nominal figures, saying why
            info["read_error"] = f"{type(exc).__name__}: {exc}"
    if backend.name == "cuda":
        info["launch_path"] = launch_path()  # cuda.core, its experimental home, or none (Numba)
    info["peak_flops"] = info["sms"] * info["fp32_lanes"] * 2 * info["clock_hz"]
    info["peak_bytes"] = 2 * info["mem_clock_hz"] * info["bus_bits"] / 8  # double data rate
    return info


def _read_device():
    import cupy

    dev = cupy.cuda.Device()
    attrs = dev.attributes
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)

    def read(attr, prop, numba_attr):
        value = attrs.get(attr) or props.get(prop)
        if not value:
            from numba import cuda

            value = getattr(cuda.get_current_device(), numba_attr, 0)
        if not value:
            msg = f"the device reports neither attribute {attr!r}, property {prop!r} nor {numba_attr}"
            raise RuntimeError(msg)
        return int(value)

    cc = divmod(int(dev.compute_capability), 10)  # "90" -> (9, 0), "100" -> (10, 0)
    name = props.get("name", b"")
    return {
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "compute_capability": f"{cc[0]}.{cc[1]}",
        "sms": read("MultiProcessorCount", "multiProcessorCount", "MULTIPROCESSOR_COUNT"),
        "clock_hz": 1e3 * read("ClockRate", "clockRate", "CLOCK_RATE"),  # kHz
        "fp32_lanes": _FP32_LANES.get(cc, 128),
        "mem_clock_hz": 1e3 * read("MemoryClockRate", "memoryClockRate", "MEMORY_CLOCK_RATE"),
        "bus_bits": read("GlobalMemoryBusWidth", "memoryBusWidth", "GLOBAL_MEMORY_BUS_WIDTH"),
        "memory_bytes": int(props.get("totalGlobalMem", 0)),
        "nominal": False,
    }


def median_seconds(bk, fn, repeat):
    """Median wall time of ``fn`` after one warm-up call (compiles), synchronised.
    The simulator compiles nothing: no warm-up there (a dry run's time goes to it)."""
    if bk.name != "cudasim":
        fn()
        bk.synchronize()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        bk.synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def pool_reset(bk):
    """Empty CuPy's memory pool (device backends), so that what it holds after a run is the
    run's high-water mark: the pool keeps every block it allocated until emptied."""
    if bk.name == "cuda":
        import cupy

        bk.synchronize()
        cupy.get_default_memory_pool().free_all_blocks()


def pool_mb(bk):
    """MiB CuPy's memory pool holds (after :func:`pool_reset` and a run: its high-water
    mark); None off the device."""
    if bk.name != "cuda":
        return None
    import cupy

    return cupy.get_default_memory_pool().total_bytes() / 2**20
