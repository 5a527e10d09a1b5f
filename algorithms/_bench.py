"""``python -m algorithms bench``: our algorithms next to the tools users pick today.

Every method runs on the same split of the same real data in one process, one
after the other; the table reports test accuracy, fit and predict seconds, the
peak memory a fit allocates (traced NumPy buffers, in a second untimed fit) and the ratio of fit +
predict time to the RBFSampler + SGDClassifier pipeline measured in the same run.

It also measures CDSG against DSG on the training objective at equal fit time
(the claim of Li & Poczos 2016), by fitting both for several lengths.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Per dataset: the kernel width every method shares, SVC's C, and our settings.
DATASETS = {
    "ijcnn1": {"gamma": 1.0, "svc_C": 10.0, "dsg": {"precondition": 0.1}, "n_iter": 200},
    "a9a": {"gamma": 0.05, "svc_C": 1.0, "dsg": {"precondition": 1.0}, "n_iter": 100},
}


@dataclass
class Row:
    dataset: str
    method: str
    accuracy: float
    fit_s: float
    predict_s: float
    peak_mb: float
    size: str

    @property
    def total_s(self):
        return self.fit_s + self.predict_s


class PeakMemory:
    """Peak of the memory traced by ``tracemalloc`` above the level at entry.

    NumPy reports its array buffers to tracemalloc, so this counts the arrays a
    fit allocates (ours and scikit-learn's); native buffers that bypass it
    (libsvm's kernel cache, BLAS workspaces, Numba's small scratch vectors) are
    not counted. It slows allocation-heavy code, so it runs in a second,
    untimed fit.
    """

    def __enter__(self):
        import tracemalloc

        self._started = not tracemalloc.is_tracing()
        if self._started:
            tracemalloc.start()
        tracemalloc.reset_peak()
        self.base = tracemalloc.get_traced_memory()[0]
        return self

    def __exit__(self, *exc):
        import tracemalloc

        self.peak = tracemalloc.get_traced_memory()[1]
        if self._started:
            tracemalloc.stop()

    @property
    def added_mb(self):
        return max(0, self.peak - self.base) / 2**20


def _measure(fit, predict, yt):
    start = time.perf_counter()
    model = fit()
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    pred = predict(model)
    predict_s = time.perf_counter() - start
    with PeakMemory() as mem:
        fit()
    return model, float(np.mean(np.asarray(pred) == yt)), fit_s, predict_s, mem.added_mb


def peers(name, X, y, Xt, yt, settings, progress):
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC, LinearSVC

    gamma = settings["gamma"]
    makers = {
        "sklearn SVC": (lambda: SVC(C=settings["svc_C"], gamma=gamma), lambda m: f"{len(m.support_)} SV"),
        "RBFSampler+SGD": (
            lambda: make_pipeline(
                RBFSampler(n_components=2048, gamma=gamma, random_state=0),
                SGDClassifier(loss="hinge", alpha=1e-5, max_iter=20, tol=None, random_state=0),
            ),
            lambda m: "2048 features",
        ),
        "Nystroem+LinearSVC": (
            lambda: make_pipeline(
                Nystroem(n_components=1024, gamma=gamma, random_state=0), LinearSVC(C=settings["svc_C"])
            ),
            lambda m: "1024 landmarks",
        ),
    }
    rows = []
    for method, (make, size) in makers.items():
        progress(f"{name}: {method} ...")
        model, acc, fit_s, pred_s, mb = _measure(lambda: make().fit(X, y), lambda m: m.predict(Xt), yt)
        rows.append(Row(name, method, acc, fit_s, pred_s, mb, size(model)))
        progress(f"  {100 * acc:.2f}%  fit {fit_s:.2f} s  predict {pred_s:.2f} s")
    return rows


def ours(name, X, y, Xt, yt, settings, progress, backend="cpu"):
    from kbackends._xp_utils import to_numpy

    from algorithms import dsg

    X32, Xt32 = X.astype(np.float32), Xt.astype(np.float32)
    base = {"gamma": settings["gamma"], "random_state": 0, "backend": backend, **settings["dsg"]}
    dsg.fit(X32[:1000], y[:1000], **{**base, "n_iter": 2})  # load the compiled kernels outside the timer
    rows = []
    for variant in ("dsg", "udsg", "cdsg"):
        n_iter = settings["n_iter"] * (3 if variant == "udsg" else 2) // 2
        progress(f"{name}: {variant.upper()} ({backend}) ...")
        model, acc, fit_s, pred_s, mb = _measure(
            lambda: dsg.fit(X32, y, variant=variant, n_iter=n_iter, **base),
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
    from algorithms import dsg

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


def markdown_table(rows, peer="RBFSampler+SGD"):
    lines = [
        "| dataset | method | accuracy | fit s | predict s | fit + predict vs " + peer + " | peak traced MiB | size |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ref = next((p for p in rows if p.dataset == r.dataset and p.method == peer), None)
        ratio = f"{r.total_s / ref.total_s:.2f}x" if ref else "-"
        lines.append(
            f"| {r.dataset} | {r.method} | {100 * r.accuracy:.2f}% | {r.fit_s:.2f} | {r.predict_s:.2f} | "
            f"{ratio} | {r.peak_mb:.0f} | {r.size} |"
        )
    return "\n".join(lines)


def objective_table(points):
    lines = [
        "| dataset | setting | variant | iterations | fit s | training objective |",
        "|---|---|---|---|---|---|",
    ]
    for dataset, (setting, variant, seconds, obj, n_iter) in points:
        lines.append(f"| {dataset} | {setting} | {variant.upper()} | {n_iter} | {seconds:.2f} | {obj:.4f} |")
    return "\n".join(lines)


def plot(rows, curves, out_dir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    datasets = sorted({r.dataset for r in rows})
    fig, axes = plt.subplots(1, len(datasets), figsize=(6 * len(datasets), 4.5), squeeze=False)
    for ax, name in zip(axes[0], datasets):
        for r in (r for r in rows if r.dataset == name):
            ax.scatter(r.total_s, 100 * r.accuracy, s=50)
            ax.annotate(r.method, (r.total_s, 100 * r.accuracy), textcoords="offset points", xytext=(5, 4), fontsize=8)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("fit + predict time (s, log scale)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"{name}: accuracy vs time")
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    acc_path = Path(out_dir) / "accuracy_vs_time.png"
    fig.savefig(acc_path, dpi=110)
    plt.close(fig)
    paths = [acc_path]
    if curves:
        names = sorted({d for d, _ in curves})
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
        obj_path = Path(out_dir) / "dsg_objective_vs_time.png"
        fig.savefig(obj_path, dpi=110)
        plt.close(fig)
        paths.append(obj_path)
    return paths


def run(data_dir=None, out_dir="bench-out", quick=False, backend="cpu", progress=print):
    from algorithms.datasets import load_or_digits

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows, curves = [], []
    for name, settings in DATASETS.items():
        used, X, y, Xt, yt = load_or_digits(name, data_dir)
        if used != name:
            settings = {"gamma": 0.02, "svc_C": 10.0, "dsg": {"precondition": 0.1}, "n_iter": 60}
        if quick:
            X, y, Xt, yt = X[:10_000], y[:10_000], Xt[:10_000], yt[:10_000]
        progress(f"== {used}: train {X.shape[0]} x {X.shape[1]}, test {Xt.shape[0]}")
        rows += peers(used, X, y, Xt, yt, settings, progress)
        rows += ours(used, X, y, Xt, yt, settings, progress, backend)
        if not quick:
            curves += [(used, p) for p in objective_curves(used, X, y, settings, progress)]
        if used != name:
            break  # the fallback dataset once is enough
    table = markdown_table(rows)
    text = "## Accuracy and time\n\n" + table + "\n"
    if curves:
        text += "\n## CDSG vs DSG: training objective at equal fit time\n\n" + objective_table(curves) + "\n"
    (out / "results.md").write_text(text)
    paths = plot(rows, curves, out)
    progress(text)
    progress("written: " + ", ".join(str(p) for p in [out / "results.md", *paths]))
    return rows, curves
