"""Benchmark section for the SBP (issue 6): SBP next to scikit-learn's SVC.

Protocol (full mode; every row of a dataset in one process, one after the other):

* a9a (train a9a / test a9a.t), RBF gamma = 0.05 (the paper's sigma^2 = 10),
  with bias; SVC(C=1) beside it. nu = 0.011: the paper's Table 2 value for
  Adult at lambda = 1/n (C = 1), which :func:`algorithms.sbp.nu_from_svm`
  reproduces from the SVC of the same run (printed).
* USPS digit 8 versus the rest (usps.h5, standard split), gamma = 1 / (d var X)
  (scikit-learn's "scale"), SVC(C=10); nu = 5e-6 from ``nu_from_svm`` on that SVC.
* letter (letter.scale, 26 classes, 80/20 split), gamma = 1, SVC(C=10)
  (one-vs-one inside libsvm), SBP one-vs-rest without bias: all 26 classes'
  levels from one segmented water-fill call per iteration. The markdown also
  times that segmented call against 26 separate calls on the same responses.

Run alone::

    python -c "from algorithms.bench.sbp import run_section as r; s=r(); print(s['markdown'])"

``quick=True`` subsamples (a9a 4000 / 4000, USPS 2000 / 1000, letter 3000 / 1000)
and shortens the runs so the section finishes in well under a minute.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from algorithms import sbp
from kbackends import resolve, to_numpy
from kbackends.ops import water_level

from ._optional import pyplot
from .common import Row, measure, pipe_table
from .protocols import SBP_DATASETS as SETTINGS
from .protocols import sbp_data, svc_peer, svc_peer_note


def _svc_row(name, X, y, Xt, yt, C, gamma, progress):
    svc_name, SVC = svc_peer()
    progress(f"{name}: {svc_name}(C={C:g}, gamma={gamma:.4g}) ...")
    model, acc, fit_s, pred_s, mb = measure(lambda: SVC(C=C, gamma=gamma).fit(X, y), lambda m: m.predict(Xt), yt)
    progress(f"  {100 * acc:.2f}%  fit {fit_s:.2f} s  predict {pred_s:.2f} s")
    return model, Row(name, svc_name, acc, fit_s, pred_s, mb, f"{len(model.support_)} SV")


def _sbp_row(name, X, y, Xt, yt, *, nu, gamma, bias, n_iter, backend, progress, label="SBP"):
    progress(f"{name}: {label} (nu={nu:g}, T={n_iter}, bias={bias}, {backend}) ...")
    args = {"nu": nu, "gamma": gamma, "bias": bias, "n_iter": n_iter, "random_state": 0, "backend": backend}
    model, acc, fit_s, pred_s, mb = measure(
        lambda: sbp.fit(X, y, **args), lambda m: to_numpy(sbp.predict(m, Xt)), yt
    )
    progress(f"  {100 * acc:.2f}%  fit {fit_s:.2f} s  predict {pred_s:.2f} s")
    return model, Row(name, f"{label} ({backend})", acc, fit_s, pred_s, mb,
                      f"{model.params['n_support']} SV, T={n_iter}")


def _segmented_timing(model, X, y, nu, repeats=20):
    """Median seconds of one segmented water_level call for all classes versus
    one call per class, on the responses c_k = y_k f_k(x) of the fitted model."""
    bk = resolve("cpu")
    f = np.asarray(model.raw_decision(X, bk), dtype=X.dtype)
    classes = np.asarray(model.classes)
    Y = np.where(y[None, :] == classes[:, None], 1.0, -1.0).astype(X.dtype)
    C = np.ascontiguousarray((Y * f.T))
    k, n = C.shape
    volume = n * nu
    offsets = np.arange(k + 1, dtype=np.int64) * n
    flat = C.ravel()
    vols = np.full(k, volume)
    water_level(flat, vols, segments=offsets)  # compiled outside the timer
    times = {"segmented": [], "separate": []}
    for _ in range(repeats):
        t0 = time.perf_counter()
        together = water_level(flat, vols, segments=offsets, check_finite=False)
        t1 = time.perf_counter()
        apart = [water_level(C[j], volume, check_finite=False) for j in range(k)]
        t2 = time.perf_counter()
        times["segmented"].append(t1 - t0)
        times["separate"].append(t2 - t1)
    np.testing.assert_allclose(np.asarray(together, dtype=np.float64), np.asarray(apart, dtype=np.float64),
                               rtol=1e-5, atol=1e-6)
    return k, n, float(np.median(times["segmented"])), float(np.median(times["separate"]))


def run_section(data_dir=None, quick=False, backend="cpu", progress=print):
    """The SBP section of ``python -m algorithms bench`` (see the module docstring)."""
    import os

    plt = pyplot()  # matplotlib: the bench extra

    rows, notes, plots = [], [], []
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    notes.append(f"Load average at start: {load:.2f} (2-core machine; timings are noisy, read the ratios).")
    notes.append(svc_peer_note())
    progress(notes[-1])
    curve = None
    segmented = None
    for name, st in SETTINGS.items():
        try:
            X, y, Xt, yt, gamma = sbp_data(name, data_dir, quick)
        except (FileNotFoundError, OSError, ImportError) as exc:
            progress(f"{name}: skipped ({exc})")
            notes.append(f"{name}: skipped ({type(exc).__name__}: {exc})")
            continue
        n_iter = st["quick_iter"] if quick else st["n_iter"]
        with warnings.catch_warnings():  # the 3-iteration warm-up (compiles outside the timers) may warn on nu
            warnings.simplefilter("ignore", RuntimeWarning)
            sbp.fit(X[:200], y[:200], nu=0.01, gamma=gamma, bias=st["bias"], n_iter=3, random_state=0,
                    backend=backend)
        svc, svc_row = _svc_row(name, X, y, Xt, yt, st["svc_C"], gamma, progress)
        model, sbp_row = _sbp_row(name, X, y, Xt, yt, nu=st["nu"], gamma=gamma, bias=st["bias"], n_iter=n_iter,
                                  backend=backend, progress=progress)
        rows += [svc_row, sbp_row]
        ratio = sbp_row.fit_s / svc_row.fit_s
        line = (f"**{name}** (n={len(y)}, test {len(yt)}): SBP {100 * (1 - sbp_row.accuracy):.2f}% test error, "
                f"SVC {100 * (1 - svc_row.accuracy):.2f}%; SBP fit time = {ratio:.2f} x SVC's "
                f"({sbp_row.fit_s:.1f} s vs {svc_row.fit_s:.1f} s).")
        if len(svc.classes_) == 2:
            nu_svc = sbp.nu_from_svm(X, y, svm=svc)
            line += f" nu from this run's SVC by the paper's relation: {nu_svc:.3g} (used: {st['nu']:g})."
        notes.append(line)
        if "curve" in st:
            lengths = st["quick_curve"] if quick else st["curve"]
            errors, seconds = [], []
            for T in lengths:
                progress(f"{name}: SBP curve T={T} ...")
                t0 = time.perf_counter()
                m = sbp.fit(X, y, nu=st["nu"], gamma=gamma, bias=st["bias"], n_iter=T, random_state=0,
                            backend=backend)
                seconds.append(time.perf_counter() - t0)
                errors.append(100 * float(np.mean(np.asarray(sbp.predict(m, Xt)) != yt)))
            curve = (name, lengths, seconds, errors, svc_row)
        if name == "letter":
            segmented = _segmented_timing(model, X, y, st["nu"])

    md = ["### SBP (kernelized Stochastic Batch Perceptron) vs SVC", "", *[f"- {n}" for n in notes], ""]
    if curve is not None:
        name, lengths, seconds, errors, svc_row = curve
        points = [[T, f"{s:.1f}", f"{e:.2f}"] for T, s, e in zip(lengths, seconds, errors)]
        md += [f"SBP test error against fit time on {name} (SVC: {100 * (1 - svc_row.accuracy):.2f}% "
               f"in {svc_row.fit_s:.1f} s):", "", pipe_table(["T", "fit s", "test error %"], points, ["right"] * 3), ""]
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.plot(seconds, errors, "o-", label="SBP (averaged iterate)")
        ax.plot([svc_row.fit_s], [100 * (1 - svc_row.accuracy)], "s", label=svc_row.method)
        ax.set_xlabel("fit time (s)")
        ax.set_ylabel("test error (%)")
        ax.set_title(f"SBP vs SVC on {name}")
        ax.legend()
        fig.tight_layout()
        plots.append((f"sbp_{name}_error_vs_time.png", fig))
    if segmented is not None:
        k, n, t_seg, t_sep = segmented
        md += [f"Segmented water-fill on letter's final responses ({k} classes x {n} rows, cpu): "
               f"one call {1e3 * t_seg:.2f} ms, {k} separate calls {1e3 * t_sep:.2f} ms "
               f"({t_sep / t_seg:.1f} x), same levels.", ""]
    return {"title": "SBP vs SVC", "rows": rows, "peer": svc_peer()[0], "markdown": "\n".join(md), "plots": plots}
