"""``python -m algorithms demo``: DSG, UDSG and CDSG on a real dataset next to the
bench's SVC (oneDAL's where scikit-learn-intelex is installed, scikit-learn's else:
:func:`algorithms.bench.protocols.svc_peer`), with the bench command's protocol for
that dataset."""

from __future__ import annotations

import sys
import time

import numpy as np

from algorithms import dsg
from algorithms.bench.protocols import DSG_VARIANTS, dsg_fit_kwargs, dsg_peers, dsg_settings, svc_peer
from algorithms.datasets import load_or_digits
from kbackends import to_numpy


def run_demo(dataset="ijcnn1", data_dir=None, *, quick=False, backend="cpu", svc=True):
    """Train the DSG family (and SVC) on ``dataset`` and print a table; returns 0."""
    name, X, y, Xt, yt = load_or_digits(dataset, data_dir)
    if quick:
        X, y = X[:10_000], y[:10_000]
        Xt, yt = Xt[:20_000], yt[:20_000]
    X32, Xt32 = X.astype(np.float32), Xt.astype(np.float32)
    settings = dsg_settings(name)  # the bench command's protocol for this dataset
    print(f"dataset {name}: train {X.shape[0]} x {X.shape[1]}, test {Xt.shape[0]}, backend {backend}")
    print("(first fit includes loading the compiled kernels)\n", file=sys.stderr)
    rows = []
    for variant in DSG_VARIANTS:
        kwargs = {**dsg_fit_kwargs(settings, variant), "backend": backend}
        model, fit_s = _timed(lambda: dsg.fit(X32, y, **kwargs))
        pred, pred_s = _timed(lambda: to_numpy(dsg.predict(model, Xt32)))
        rows.append((variant.upper(), float(np.mean(pred == yt)), fit_s, pred_s, model.n_blocks * model.block_size))
        _print_row(rows[-1], header=len(rows) == 1)
    if svc:
        svc_name = svc_peer()[0]
        make_svc = dsg_peers(settings)[svc_name][0]
        model, fit_s = _timed(lambda: make_svc().fit(X, y))
        pred, pred_s = _timed(lambda: model.predict(Xt))
        rows.append((svc_name, float(np.mean(pred == yt)), fit_s, pred_s, len(model.support_)))
        _print_row(rows[-1], header=False, unit="support vectors")
    return 0


def _print_row(row, header, unit="features"):
    if header:
        print(f"{'algorithm':<14}{'accuracy':>10}{'fit s':>9}{'predict s':>11}  size")
    name, acc, fit_s, pred_s, size = row
    print(f"{name:<14}{100 * acc:>9.2f}%{fit_s:>9.2f}{pred_s:>11.2f}  {size} {unit}", flush=True)


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start
