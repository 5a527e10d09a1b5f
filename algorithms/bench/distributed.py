"""Measurements of the distributed fit: ``python -m algorithms.bench.distributed PART``.

Parts (each prints a Markdown table; figures go to docs/benchmarks.md, "Distributed"):

``scheme``
    ijcnn1 (all 49,990 training rows, 8 row chunks) on a LocalCluster of 2 worker
    processes, 1 thread each: DSG with ``kbackends.sync_every`` 1, 4, 8 and 16
    (round trips, bytes per iteration, time per iteration, test accuracy) next to
    the single-process fit with the same settings.
``scaling``
    The same fit on 1 worker and on 2 workers: rows sampled per second.
``ooc [--rows N] [--chunk-rows C] [--memory-limit 1GB] [--dir PATH]``
    Out-of-core: N x 28 float32 synthetic rows (default 20,000,000: 2.24 GB)
    generated chunk by chunk to ``.npy`` files, one streamed pass on 2 workers
    with the memory limit, each worker's resident memory sampled every 0.2 s
    (peak reported), time per row next to the in-memory single-process fit on
    the first 10% of the rows.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from algorithms import dsg
from algorithms.datasets import load

from ._optional import require
from .common import pipe_table

_PURPOSE = "the distributed fit's measurements"  # dask and distributed: the bench (or dask) extra
DSG_SETTINGS = dict(gamma=1.0, n_iter=32, batch_size=2048, block_size=256, random_state=0)


def _cluster(n_workers, memory_limit="auto"):
    distributed = require("distributed", _PURPOSE)
    Client, LocalCluster = distributed.Client, distributed.LocalCluster

    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                           memory_limit=memory_limit)
    return cluster, Client(cluster)


def _ijcnn1():
    return load("ijcnn1")


def _fit_on_cluster(n_workers, X, y, settings, config):
    dask, da = require("dask", _PURPOSE), require("dask.array", _PURPOSE)

    cluster, client = _cluster(n_workers)
    try:
        Xd = da.from_array(X, chunks=(-(-X.shape[0] // 8), -1))
        yd = da.from_array(y, chunks=Xd.chunks[0])
        with dask.config.set(config):
            dsg.fit(Xd, yd, **{**settings, "n_iter": 8})  # warm-up: the workers compile the kernels
            started = time.perf_counter()
            model = dsg.fit(Xd, yd, **settings)
            seconds = time.perf_counter() - started
    finally:
        client.close()
        cluster.close()
    return model, seconds


def scheme():
    X, y, Xt, yt = _ijcnn1()
    s = DSG_SETTINGS
    dsg.fit(X[:5000], y[:5000], **{**s, "n_iter": 4, "cache_predictions": False})
    started = time.perf_counter()
    single = dsg.fit(X, y, cache_predictions=False, **s)
    single_s = time.perf_counter() - started
    rows = [("single process", "-", "-", f"{single_s / s['n_iter'] * 1e3:.0f}", "-",
             f"{(dsg.predict(single, Xt) == yt).mean():.4f}", "-")]
    for sync_every in (1, 4, 8, 16):
        model, seconds = _fit_on_cluster(2, X, y, s, {"kbackends.sync_every": sync_every})
        st = model.params["distributed"]
        per_round_overhead = (st["seconds_rounds"] - st["seconds_worker"]) / max(st["rounds"], 1)
        rows.append((
            f"2 workers, sync_every={sync_every}", str(st["rounds"]),
            f"{(st['bytes_up'] + st['bytes_down']) / s['n_iter'] / 1e3:.1f}",
            f"{seconds / s['n_iter'] * 1e3:.0f}", f"{per_round_overhead * 1e3:.0f}",
            f"{(dsg.predict(model, Xt) == yt).mean():.4f}", str(st["recoveries"]),
        ))
    header = ("fit", "round trips", "kB per iteration (up+down, all workers)", "ms per iteration",
              "ms per round not in the engine", "test accuracy", "recoveries")
    return pipe_table(header, rows) + "\n"


def scaling():
    X, y, Xt, yt = _ijcnn1()
    s = DSG_SETTINGS
    rows = []
    for n_workers in (1, 2):
        model, seconds = _fit_on_cluster(n_workers, X, y, s, {"kbackends.sync_every": 8})
        sampled = n_workers * s["batch_size"] * s["n_iter"]
        st = model.params["distributed"]
        rows.append((str(n_workers), f"{seconds:.1f}", f"{sampled / seconds:,.0f}",
                     f"{(dsg.predict(model, Xt) == yt).mean():.4f}", str(st["recoveries"])))
    header = ("workers", "fit seconds", "rows sampled per second", "test accuracy", "recoveries")
    return pipe_table(header, rows) + "\n"


class _PeakMemory(threading.Thread):
    """Samples every worker's resident set size (psutil, in the worker) until stopped."""

    def __init__(self, client, every=0.2):
        super().__init__(daemon=True)
        self.client, self.every, self.peak = client, every, {}
        self.done = threading.Event()

    def run(self):
        import psutil

        def rss():
            return psutil.Process().memory_info().rss

        while not self.done.is_set():
            try:
                for addr, value in self.client.run(rss).items():
                    self.peak[addr] = max(self.peak.get(addr, 0), value)
            except Exception:  # a worker between restarts: sample again
                pass
            time.sleep(self.every)

    def stop(self):
        self.done.set()
        self.join()
        return self.peak


def _labels(block):
    # A non-linear rule with 10% label noise, so the kernel machine has something to learn.
    x = block.astype(np.float64)
    score = np.sin(2 * x[:, 0]) + x[:, 1] * x[:, 2] + 0.5 * x[:, 3] ** 2 - 0.5
    noise = np.random.default_rng(int(abs(x[0, 0]) * 1e6) if len(x) else 0).random(len(x)) < 0.1
    return np.where((score > 0) ^ noise, 1, -1).astype(np.int8)


def ooc(rows=20_000_000, chunk_rows=250_000, memory_limit="1GB", folder=None, n_iter=80):
    dask, da = require("dask", _PURPOSE), require("dask.array", _PURPOSE)

    folder = Path(folder or tempfile.mkdtemp(prefix="kbackends-ooc-"))
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if not (folder / "X" / "info").exists():
        with dask.config.set(scheduler="threads", num_workers=1):
            X = da.random.default_rng(0).standard_normal((rows, 28), chunks=(chunk_rows, 28), dtype=np.float32)
            da.to_npy_stack(folder / "X", X)
            Xd = da.from_npy_stack(folder / "X", mmap_mode="r")
            da.to_npy_stack(folder / "y", Xd.map_blocks(_labels, drop_axis=1, dtype=np.int8))
    generate_s = time.perf_counter() - started
    X = da.from_npy_stack(folder / "X", mmap_mode="r")
    y = da.from_npy_stack(folder / "y", mmap_mode="r")
    settings = dict(gamma=0.05, n_iter=n_iter, batch_size=4096, block_size=256, random_state=0)

    test = np.random.default_rng(1).standard_normal((50_000, 28)).astype(np.float32)
    test_y = _labels(test)
    cluster, client = _cluster(2, memory_limit)
    try:
        # Warm-up on a few chunks: the workers compile the kernels.
        with dask.config.set({"kbackends.mode": "stream"}):
            dsg.fit(X[: 4 * chunk_rows], y[: 4 * chunk_rows], **{**settings, "n_iter": 4})
        monitor = _PeakMemory(client)
        monitor.start()
        started = time.perf_counter()
        model = dsg.fit(X, y, **settings)  # mode "auto": the data exceed the workers' memory, so streamed
        ooc_s = time.perf_counter() - started
        peak = monitor.stop()
        stats = model.params["distributed"]
    finally:
        client.close()
        cluster.close()
    ooc_accuracy = float((dsg.predict(model, test) == test_y).mean())

    n_mem = rows // 10
    X_mem = np.ascontiguousarray(X[:n_mem].compute(scheduler="threads"))
    y_mem = y[:n_mem].compute(scheduler="threads")
    dsg.fit(X_mem[:10_000], y_mem[:10_000], **{**settings, "n_iter": 4})
    started = time.perf_counter()
    mem_model = dsg.fit(X_mem, y_mem, **settings)
    mem_s = time.perf_counter() - started
    mem_accuracy = float((dsg.predict(mem_model, test) == test_y).mean())
    rows_out = [
        (f"streamed, 2 workers x {memory_limit}", f"{rows:,}", f"{ooc_s:.1f}", f"{ooc_s / rows * 1e9:.0f}",
         ", ".join(f"{v / 2**20:.0f} MiB" for v in peak.values()), f"{ooc_accuracy:.4f}"),
        ("in memory, single process", f"{n_mem:,}", f"{mem_s:.1f}", f"{mem_s / n_mem * 1e9:.0f}", "-",
         f"{mem_accuracy:.4f}"),
    ]
    table = pipe_table(("fit", "rows", "seconds", "ns per row", "peak worker RSS", "accuracy"), rows_out) + "\n"
    extra = (f"\n(generated in {generate_s:.0f} s; {stats['rounds']} rounds, "
             f"{(stats['bytes_up'] + stats['bytes_down']) / 1e6:.2f} MB of coefficients moved)\n")
    return table + extra


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m algorithms.bench.distributed", description=__doc__.split("\n")[0])
    parser.add_argument("part", choices=("scheme", "scaling", "ooc"))
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--chunk-rows", type=int, default=250_000)
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--n-iter", type=int, default=80)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("KBACKENDS_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    if args.part == "ooc":
        print(ooc(args.rows, args.chunk_rows, args.memory_limit, args.dir, args.n_iter))
    else:
        print({"scheme": scheme, "scaling": scaling}[args.part]())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
