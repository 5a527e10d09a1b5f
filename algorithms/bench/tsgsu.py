"""Bench section for TSGSU (SU classification): the acceptance protocol of issue 5.

Protocol (the paper's, Shi et al. 2021, Sect. 6): from a labeled training set draw
5,000 similar pairs and n_U = 10,000 unlabeled points at the true class prior
(:func:`algorithms.tsgsu.make_su_data`; with replacement where a class has too few
points), test on the loader's held-out split, true prior = the class proportion
of the training set, seeds 0-4. SU data cannot tell which class is which, so +1 is
the larger class (the paper's pi_+ > pi_- convention); labels are flipped where
the loader's +1 is the smaller class (a9a, skin).

Methods on the same points:
- TSGSU, correction "abs" (the paper's) and "none" (Bao et al.'s unbiased risk),
  true prior; "abs" with the library's default sign rule (averaged, 2-standard-error
  margin) and with the paper's batch rule (``correction_smoothing=0``,
  ``correction_margin=0``); "abs" with the prior from :func:`estimate_prior`;
- SU-SL (Bao et al. 2018, closed form, squared loss), linear and on 500 random
  Fourier features (300 in quick mode; the paper's SU-SL uses the full kernel,
  which does not fit in memory at this size); its ridge (and on random features its
  width, from ``GAMMA_SCALES``) is chosen from {1e-4, 1e-3, 1e-2, 1e-1} as TSGSU's
  are (below), then refit on all;
- supervised DSG (:func:`algorithms.dsg.fit`, hinge loss, 60 iterations; 30 in
  quick mode) on the same 20,000 points with their true labels: the ceiling.

Peak memory is measured (a second, traced fit) on the first seed only.

TSGSU's ``lam`` and width are chosen as the paper does, without labels: by
:func:`algorithms.tsgsu.select_params` (``CV_FOLDS``-fold cross-validated SU risk
of the 0-1 loss, an unbiased estimate of the test error, over ``lam`` in
{0.01, 0.03, 0.1, 0.3} and ``gamma`` in ``GAMMA_SCALES`` x the median heuristic),
then refit on all; the selection's time is added to every TSGSU row's fit time
(and the prior estimate's to its row).
The library's defaults otherwise.

Also: the prior-estimation table (true and estimated pi_+ per seed) and the
Skin_NonSkin timing with n_U = 100,000 on the chosen backend.

Run alone::

    python -c "from algorithms.bench.tsgsu import run_section as r; s = r(); print(s['markdown'])"
"""

from __future__ import annotations

import time

import numpy as np

from kbackends import resolve, to_numpy

from .. import dsg, tsgsu
from .._boundary.validation import median_gamma
from ._optional import pyplot
from .common import Row, measure, pipe_table
from .protocols import SU_DATASETS, SU_N_PAIRS, SU_N_UNLABELED, su_split
from .protocols import su_prepare as prepare

SU_SL_LAMS = (1e-4, 1e-3, 1e-2, 1e-1)
# Width candidates (x the median heuristic) and folds for SU-SL on random features:
# select_params' defaults, which choose TSGSU's.
GAMMA_SCALES, CV_FOLDS = tsgsu.SELECT_GAMMA_SCALES, tsgsu.SELECT_CV


def su_sl_selected(X_s, X_u, prior, features, seed, n_components=500):
    """SU-SL with its ridge (and, on random features, its width) chosen as TSGSU's are:
    by the ``CV_FOLDS``-fold SU risk of the 0-1 loss (label-free), then refit on all."""
    folds = tsgsu._split_folds(np.random.default_rng(seed), len(X_s), len(X_u), CV_FOLDS)  # whole pairs
    X_pts = X_s.reshape(-1, X_s.shape[2])
    risk = tsgsu._SURisk(prior, *tsgsu.CRITERIA["zero_one"])
    g0 = median_gamma(np.concatenate([X_pts, X_u]), resolve("cpu"), seed)
    scales = GAMMA_SCALES if features == "rff" else (1.0,)
    risks = dict.fromkeys(((lam, scale) for lam in SU_SL_LAMS for scale in scales), 0.0)
    for fit_s, val_s, fit_u, val_u in tsgsu._fold_rows(*folds, pairs=True):
        for lam, scale in risks:
            m = tsgsu.su_sl_fit(X_pts[fit_s], X_u[fit_u], prior, lam=lam, features=features,
                                n_components=n_components, gamma=scale * g0, random_state=seed)
            f_s, f_u = m.decision_function(X_pts[val_s])[:, None], m.decision_function(X_u[val_u])[:, None]
            risks[(lam, scale)] += risk.risk(f_s, f_u, np) / CV_FOLDS
    lam, scale = min(risks, key=risks.get)
    model = tsgsu.su_sl_fit(X_s, X_u, prior, lam=lam, features=features, n_components=n_components,
                            gamma=scale * g0, random_state=seed)
    return model, f"lam {lam:g}" + (f", gamma {scale:g} x median" if features == "rff" else "")


def _chosen(selection):
    return f"lam {selection.params['lam']:g}, gamma {selection.params['gamma'] / selection.gamma_median:g} x median"


def run_dataset(name, seeds, n_pairs, n_unlabeled, backend, progress, data_dir=None, with_prior=True,
                n_components=500, dsg_iter=60):
    """Rows (one per method and seed) and the prior-estimation records of one dataset."""
    X, y, Xt, yt = prepare(name, data_dir)
    X32, Xt32 = X.astype(np.float32), Xt.astype(np.float32)
    rows, priors = [], []
    for seed in seeds:
        (X_s, X_u, y_s, y_u), prior = su_split(X32, y, n_pairs, n_unlabeled, seed)
        size = f"{n_pairs} pairs + {n_unlabeled} U"
        tsgsu.fit(X_s[:200], X_u[:200], prior=prior, n_iter=2, backend=backend)  # compile outside the timer
        start = time.perf_counter()
        selection = tsgsu.select_params(X_s, X_u, prior=prior, random_state=seed, backend=backend)
        select_s = time.perf_counter() - start
        cfg, chosen = selection.params, _chosen(selection)
        progress(f"{name} seed {seed}: {chosen} chosen by the {CV_FOLDS}-fold SU risk ({select_s:.1f} s)")

        def add(method, fit, predict, extra=""):
            progress(f"{name} seed {seed}: {method} ...")
            # peak memory (a second, traced fit) on the first seed only
            model, acc, fit_s, pred_s, mb = measure(fit, predict, yt, memory=seed == seeds[0])
            rows.append(Row(name, method, acc, fit_s, pred_s, mb, size + extra))
            progress(f"  {100 * acc:.2f}%  fit {fit_s:.2f} s  predict {pred_s:.2f} s")
            return model

        # (correction, its sign smoothing and margin): the defaults, "none", the paper's batch rule
        variants = (("abs", {}, "abs"), ("none", {}, "none"),
                    ("abs", {"correction_smoothing": 0.0, "correction_margin": 0.0}, "abs, batch sign"))
        for corr, rule, label in variants:
            add(f"TSGSU {label} ({backend})",
                lambda corr=corr, rule=rule: tsgsu.fit(X_s, X_u, **{**cfg, "correction": corr, **rule},
                                                       backend=backend),
                lambda m: to_numpy(tsgsu.predict(m, Xt32)))
            rows[-1].fit_s += select_s  # the label-free choice of lam and gamma is part of the fit
            rows[-1].size += f", {chosen}"
        if with_prior:
            start = time.perf_counter()
            try:
                est = tsgsu.estimate_prior(X_s, X_u, random_state=seed)
            except ValueError as exc:  # undefined estimate: recorded, no fit
                est = float("nan")
                progress(f"  prior estimate undefined: {exc}")
            est_s = time.perf_counter() - start
            priors.append({"dataset": name, "seed": seed, "true": prior, "estimated": est, "seconds": est_s})
            progress(f"  prior: true {prior:.3f} estimated {est:.3f} ({est_s:.1f} s)")
            if np.isfinite(est):
                start = time.perf_counter()  # the risk needs the prior too: select again
                sel_est = tsgsu.select_params(X_s, X_u, prior=est, random_state=seed, backend=backend)
                select_est_s = time.perf_counter() - start
                add(f"TSGSU abs, estimated prior ({backend})",
                    lambda: tsgsu.fit(X_s, X_u, **sel_est.params, backend=backend),
                    lambda m: to_numpy(tsgsu.predict(m, Xt32)))
                rows[-1].fit_s += select_est_s + est_s
                rows[-1].size += f", {_chosen(sel_est)}"
        for features in ("linear", "rff"):
            box = {}

            def fit_susl(features=features, box=box):
                model, box["chosen"] = su_sl_selected(X_s, X_u, prior, features, seed, n_components)
                return model

            label = "SU-SL linear" if features == "linear" else f"SU-SL RFF ({n_components})"
            add(label, fit_susl, lambda m: m.predict(Xt32))
            rows[-1].size += f", {box['chosen']}"
        X_all = np.concatenate([X_s.reshape(-1, X.shape[1]), X_u])
        y_all = np.concatenate([np.repeat(y_s, 2), y_u])
        add(f"supervised DSG ({backend})",
            lambda: dsg.fit(X_all, y_all, n_iter=dsg_iter, random_state=seed, backend=backend),
            lambda m: to_numpy(dsg.predict(m, Xt32)), extra=" (true labels)")
    return rows, priors


def skin_scaling(backend, progress, data_dir=None, n_unlabeled=100_000):
    """TSGSU on Skin_NonSkin with 5,000 pairs and 100,000 unlabeled points: fit time."""
    X, y, Xt, yt = prepare("skin", data_dir)
    (X_s, X_u, _, _), prior = su_split(X.astype(np.float32), y, 5000, n_unlabeled, 0)
    tsgsu.fit(X_s[:200], X_u[:200], prior=prior, n_iter=2, backend=backend)
    progress(f"skin n_U={n_unlabeled}: TSGSU abs ({backend}) ...")
    model, acc, fit_s, pred_s, mb = measure(
        lambda: tsgsu.fit(X_s, X_u, prior=prior, random_state=0, backend=backend),
        lambda m: to_numpy(tsgsu.predict(m, Xt.astype(np.float32))), yt)
    progress(f"  {100 * acc:.2f}%  fit {fit_s:.2f} s")
    return Row("skin", f"TSGSU abs ({backend})", acc, fit_s, pred_s, mb, f"5000 pairs + {n_unlabeled} U")


def aggregate(rows):
    """One row per (dataset, method, problem size): accuracy mean and std over the seeds,
    mean times, the first seed's peak memory (the only one traced)."""
    groups = {}
    for r in rows:
        groups.setdefault((r.dataset, r.method, r.size.split(", lam")[0]), []).append(r)
    out = []
    for (dataset, method, size), rs in groups.items():
        acc = np.array([r.accuracy for r in rs])
        out.append(Row(dataset, method, float(acc.mean()), float(np.mean([r.fit_s for r in rs])),
                       float(np.mean([r.predict_s for r in rs])), rs[0].peak_mb,
                       f"{size}, {len(rs)} seed{'s' if len(rs) > 1 else ''}",
                       float(acc.std()) if len(rs) > 1 else None))
    return out


def summary_table(rows):
    """Mean +- std accuracy over seeds, mean fit seconds, per dataset and method."""
    cells = []
    keys = []
    for r in rows:
        if (r.dataset, r.method) not in keys:
            keys.append((r.dataset, r.method))
    for ds, method in keys:
        sel = [r for r in rows if r.dataset == ds and r.method == method]
        acc = np.array([r.accuracy for r in sel]) * 100
        cells.append([ds, method, f"{acc.mean():.2f} +- {acc.std():.2f}", len(sel),
                      f"{np.mean([r.fit_s for r in sel]):.2f}", f"{np.mean([r.predict_s for r in sel]):.3f}"])
    return pipe_table(["dataset", "method", "accuracy % (mean +- std)", "seeds", "fit s (mean)", "predict s"], cells)


def acceptance(rows, priors, backend):
    """The issue's three claims, checked on the measured numbers."""
    out = []
    datasets = sorted({r.dataset for r in rows})

    def mean_acc(ds, method):
        sel = [r.accuracy for r in rows if r.dataset == ds and r.method == method]
        return float(np.mean(sel)) if sel else float("nan")

    abs_m, none_m, est_m = f"TSGSU abs ({backend})", f"TSGSU none ({backend})", f"TSGSU abs, estimated prior ({backend})"
    beats = [ds for ds in datasets if mean_acc(ds, abs_m) > mean_acc(ds, "SU-SL linear")]
    not_worse = [ds for ds in datasets if mean_acc(ds, abs_m) >= mean_acc(ds, none_m) - 0.005]
    out.append(f"- TSGSU abs beats SU-SL linear (mean over seeds) on {len(beats)} of {len(datasets)}: "
               f"{', '.join(beats) or 'none'}")
    out.append(f"- TSGSU abs not worse than TSGSU none (within 0.5 point) on {len(not_worse)} of {len(datasets)}: "
               f"{', '.join(not_worse) or 'none'}")
    if priors:
        close = []
        for ds in datasets:
            sel = [p for p in priors if p["dataset"] == ds]
            err = np.nanmean([abs(p["estimated"] - p["true"]) for p in sel]) if sel else np.nan
            loss = (mean_acc(ds, abs_m) - mean_acc(ds, est_m)) * 100
            ok = err <= 0.05
            close.append(ok)
            out.append(f"- {ds}: mean |estimated - true pi_+| = {err:.3f} ({'<=' if ok else '>'} 0.05); "
                       f"accuracy lost with the estimated prior: {loss:+.2f} points")
        out.append(f"- prior within 0.05 on {sum(close)} of {len(close)} datasets")
    return "\n".join(out)


def prior_table(priors):
    return pipe_table(["dataset", "seed", "true pi_+", "estimated pi_+", "error", "seconds"],
                      [[p["dataset"], p["seed"], f"{p['true']:.3f}", f"{p['estimated']:.3f}",
                        f"{p['estimated'] - p['true']:+.3f}", f"{p['seconds']:.1f}"] for p in priors])


def plot(rows, backend):
    plt = pyplot()  # matplotlib: the bench extra

    datasets = sorted({r.dataset for r in rows if r.size.find("100000") < 0})
    methods = []
    for r in rows:
        if r.method not in methods and "100000" not in r.size:
            methods.append(r.method)
    fig, ax = plt.subplots(figsize=(max(6, 2.2 * len(datasets)) + 2.5, 4.5))
    width = 0.8 / len(methods)
    for j, method in enumerate(methods):
        means, stds = [], []
        for ds in datasets:
            acc = [100 * r.accuracy for r in rows if r.dataset == ds and r.method == method and "100000" not in r.size]
            means.append(np.mean(acc) if acc else np.nan)
            stds.append(np.std(acc) if acc else 0)
        ax.bar(np.arange(len(datasets)) + j * width, means, width, yerr=stds, label=method)
    ax.set_xticks(np.arange(len(datasets)) + 0.4 - width / 2)
    ax.set_xticklabels(datasets)
    ax.set_ylabel("test accuracy (%)")
    ax.set_xlabel("dataset")
    lo = np.nanmin([100 * r.accuracy for r in rows]) - 5
    ax.set_ylim(max(0, lo), 100)
    ax.set_title("SU classification: 5,000 similar pairs + 10,000 unlabeled points (mean +- std over seeds)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, not over them
    fig.tight_layout()
    return fig


def run_section(data_dir=None, quick=False, backend="cpu", progress=print):
    """The TSGSU section: rows, markdown (summary, acceptance, prior table), one plot."""
    import os

    load_note = ""
    if hasattr(os, "getloadavg"):
        load_note = "load average at start: " + ", ".join(f"{v:.2f}" for v in os.getloadavg())
    rows, priors = [], []
    if quick:
        datasets, seeds, n_pairs, n_u = ("magic04",), (0,), 2000, 4000
    else:
        datasets, seeds, n_pairs, n_u = tuple(SU_DATASETS), range(5), SU_N_PAIRS, SU_N_UNLABELED
    for name in datasets:
        r, p = run_dataset(name, seeds, n_pairs, n_u, backend, progress, data_dir,
                           n_components=300 if quick else 500, dsg_iter=30 if quick else 60)
        rows += r
        priors += p
    skin = None
    if not quick:
        skin = skin_scaling(backend, progress, data_dir)
    parts = [
        f"Protocol: {n_pairs} similar pairs + {n_u} unlabeled points per seed (seeds {list(seeds)}), "
        f"held-out test split, backend {backend}; {load_note}.",
        "",
        summary_table(rows),
        "",
        "Acceptance checks:",
        "",
        acceptance(rows, priors, backend),
        "",
        "Class-prior estimation (estimate_prior: best-bin MPE of the unlabeled density in the similar one, "
        "on cross-fitted SU-SL scores):",
        "",
        prior_table(priors),
    ]
    if skin is not None:
        rows.append(skin)
        parts += ["", f"Skin_NonSkin, 5,000 pairs + 100,000 unlabeled points, {backend}: fit {skin.fit_s:.1f} s "
                  f"(target < 60 s), accuracy {100 * skin.accuracy:.2f}%."]
    return {
        "title": "TSGSU: similar-unlabeled classification",
        "rows": aggregate(rows),
        "peer": "SU-SL linear",
        "markdown": "\n".join(parts),
        "plots": [("tsgsu_accuracy.png", plot(rows, backend))],
    }
