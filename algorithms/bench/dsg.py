"""Bench section: DSG / UDSG / CDSG next to SVC, RBFSampler + SGD and Nystroem + LinearSVC.

The SVC is oneDAL's where scikit-learn-intelex is installed, scikit-learn's (libsvm)
otherwise (:func:`.protocols.svc_peer`); its row and the section's text name the one run.

Every method runs on the same split of the same real data (ijcnn1, a9a); the ratio
column is fit + predict time over the RBFSampler + SGDClassifier pipeline's. The
full run also measures CDSG against DSG on the training objective at equal fit
time (the claim of Li & Poczos 2016), by fitting both for several lengths.
"""

from __future__ import annotations

import time

import numpy as np

from algorithms import dsg
from algorithms.datasets import load_or_digits
from kbackends import to_numpy

from ._optional import pyplot
from .common import Row, accuracy_time_figure, measure, pipe_table, subsample
from .protocols import DSG_DATASETS as DATASETS
from .protocols import DSG_PEER as PEER
from .protocols import DSG_VARIANTS, dsg_fit_kwargs, dsg_peers, dsg_settings, svc_peer_note


def gpu_svc_maker(settings, progress):
    """RAPIDS cuML's SVC, the GPU peer users pick, when it is installed (it is not a
    dependency of this project); None otherwise."""
    try:
        from cuml.svm import SVC as CumlSVC
    except ImportError:
        progress("cuML is not installed: no GPU SVC row (pip install cuml-cu12 to add it)")
        return None
    return (lambda: CumlSVC(C=settings["svc_C"], gamma=settings["gamma"]), lambda m: f"{len(m.support_)} SV")


def peers(name, X, y, Xt, yt, settings, progress, backend="cpu"):
    makers = dsg_peers(settings)
    if backend == "cuda":
        gpu_svc = gpu_svc_maker(settings, progress)
        if gpu_svc is not None:
            makers["cuML SVC (GPU)"] = gpu_svc
    rows = []
    for method, (make, size) in makers.items():
        progress(f"{name}: {method} ...")
        model, acc, fit_s, pred_s, mb = measure(lambda: make().fit(X, y), lambda m: m.predict(Xt), yt)
        rows.append(Row(name, method, acc, fit_s, pred_s, mb, size(model)))
        progress(f"  {100 * acc:.2f}%  fit {fit_s:.2f} s  predict {pred_s:.2f} s")
    return rows


def ours(name, X, y, Xt, yt, settings, progress, backend="cpu", quick=False):
    X32, Xt32 = X.astype(np.float32), Xt.astype(np.float32)
    warm = {**dsg_fit_kwargs(settings, "dsg"), "n_iter": 2, "backend": backend}
    dsg.fit(X32[:1000], y[:1000], **warm)  # load the compiled kernels outside the timer
    rows = []
    for variant in DSG_VARIANTS:
        kwargs = {**dsg_fit_kwargs(settings, variant, quick), "backend": backend}
        progress(f"{name}: {variant.upper()} ({backend}) ...")
        model, acc, fit_s, pred_s, mb = measure(
            lambda: dsg.fit(X32, y, **kwargs),
            lambda m: to_numpy(dsg.predict(m, Xt32)),
            yt,
        )
        rows.append(Row(name, f"{variant.upper()} ({backend})", acc, fit_s, pred_s, mb,
                        f"{model.n_blocks * model.block_size} features"))
        progress(f"  {100 * acc:.2f}%  fit {fit_s:.2f} s  predict {pred_s:.2f} s")
    return rows


# Two settings for the CDSG-vs-DSG curves: the paper's (plain steps theta / t, the
# mini-batch evaluated over all blocks every iteration, so fewer blocks are faster)
# and this library's default (preconditioned block steps, f cached on the rows).
CURVE_SETTINGS = {
    "paper": {"precondition": None, "step": 5.0, "batch_size": 1024, "cache_predictions": False},
    "default": {},
}


def objective_curves(name, X, y, settings, progress, lengths=(50, 100, 200)):
    """Training objective after fits of several lengths, DSG and CDSG, in both settings.

    Returns (setting, variant, seconds, objective, n_iter) tuples.
    """
    X32 = X.astype(np.float32)
    points = []
    for setting, extra in CURVE_SETTINGS.items():
        base = {"gamma": settings["gamma"], "random_state": 0, **(settings["dsg"] if setting == "default" else {}),
                **extra}
        for variant in ("dsg", "cdsg"):
            for n_iter in lengths:
                start = time.perf_counter()
                model = dsg.fit(X32, y, variant=variant, n_iter=n_iter, **base)
                seconds = time.perf_counter() - start
                points.append((setting, variant, seconds, dsg.objective(model, X32, y), n_iter))
            progress(f"{name}: objective curve of {variant.upper()} ({setting} setting) done")
    return points


def objective_table(points):
    return pipe_table(["dataset", "setting", "variant", "iterations", "fit s", "training objective"],
                      [[dataset, setting, variant.upper(), n_iter, f"{seconds:.2f}", f"{obj:.4f}"]
                       for dataset, (setting, variant, seconds, obj, n_iter) in points])



def objective_figure(curves):
    plt = pyplot()  # matplotlib: the bench extra

    names = list(dict.fromkeys(d for d, _ in curves))
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.5), squeeze=False)
    for ax, name in zip(axes[0], names):
        for setting, style in (("paper", "--"), ("default", "-")):
            for variant in ("dsg", "cdsg"):
                pts = sorted((s, o) for d, (st, v, s, o, _) in curves if d == name and v == variant and st == setting)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o",
                        label=f"{variant.upper()} ({setting} setting)")
        ax.set_xlabel("fit time (s)")
        ax.set_ylabel("training objective (mean hinge + penalty)")
        ax.set_title(f"{name}: objective vs time")
        ax.legend()
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def run_section(data_dir=None, quick=False, backend="cpu", progress=print):
    rows, curves = [], []
    for name, settings in DATASETS.items():
        used, X, y, Xt, yt = load_or_digits(name, data_dir)
        settings = dsg_settings(used)
        if quick:
            # random rows: the files are not shuffled (ijcnn1's first 10k rows are unrepresentative)
            X, y, Xt, yt = subsample(X, y, 10_000, 0) + subsample(Xt, yt, 10_000, 1)
        progress(f"== {used}: train {X.shape[0]} x {X.shape[1]}, test {Xt.shape[0]}; {svc_peer_note()}")
        rows += peers(used, X, y, Xt, yt, settings, progress, backend)
        rows += ours(used, X, y, Xt, yt, settings, progress, backend, quick)
        if not quick:
            curves += [(used, p) for p in objective_curves(used, X, y, settings, progress)]
        if used != name:
            break  # the fallback dataset once is enough
    text = svc_peer_note() + "\n\n"
    plots = [("dsg_accuracy_vs_time.png", accuracy_time_figure(rows, "DSG family"))]
    if curves:
        text = "### CDSG vs DSG: training objective at equal fit time\n\n" + objective_table(curves) + "\n"
        plots.append(("dsg_objective_vs_time.png", objective_figure(curves)))
    return {"title": "DSG, UDSG, CDSG (supervised kernel machines)", "rows": rows, "peer": PEER,
            "markdown": text, "plots": plots}
