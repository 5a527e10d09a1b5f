"""Bench section: TSGS3VM next to SVC on the labels, LabelSpreading and self-training.

The paper's protocol (Geng et al. 2019, Sec. 6): 200 labeled rows drawn at random
from the whole file (train and test files joined), 20,000 other rows held out for
testing (HIGGS: half of what remains), the rest unlabeled. RBF kernel,
``gamma="median"``, the library's defaults otherwise (C = 1, C* = C n_l / n_u, one
pass, batch 256, class balance). Peers on the same rows: SVC(gamma="scale") on the
200 labels; "supervised" is TSGS3VM with C* = 0 (no unlabeled source, so no
balance either); LabelSpreading(knn) on labeled + unlabeled rows; on HIGGS also
SelfTrainingClassifier over a calibrated SVC (it refits SVC on up to all rows, so it is
not run on the large sets). HIGGS's columns are standardised (their scales differ by
orders of magnitude). The ratio column divides by SVC-on-labels' time.
"""

from __future__ import annotations

import numpy as np

from algorithms import tsgs3vm
from kbackends import to_numpy

from .common import Row, accuracy_time_figure, measure
from .protocols import S3VM_DATASETS as FULL
from .protocols import S3VM_N_LABELED as N_LABELED
from .protocols import S3VM_N_TEST as N_TEST
from .protocols import S3VM_PEER as PEER
from .protocols import S3VM_QUICK as QUICK
from .protocols import s3vm_peers
from .protocols import s3vm_split as split


def _methods(name, backend):
    from sklearn.svm import SVC

    def ours(**extra):
        def fit(X_l, y_l, X_u, seed):
            return tsgs3vm.fit(X_l.astype(np.float32), y_l, X_u.astype(np.float32), random_state=seed,
                               backend=backend, **extra)

        return fit, lambda m, Xt: to_numpy(tsgs3vm.predict(m, Xt.astype(np.float32)))

    def both(make):
        # scikit-learn's semi-supervised estimators mark unlabeled rows with -1: use 0/1 labels.
        def fit(X_l, y_l, X_u, seed):
            X = np.vstack([X_l, X_u])
            return make().fit(X, np.concatenate([(y_l == 1).astype(int), np.full(len(X_u), -1)]))

        return fit, lambda m, Xt: 2 * m.predict(Xt) - 1

    methods = {
        PEER: (lambda X_l, y_l, X_u, seed: SVC(gamma="scale").fit(X_l, y_l), lambda m, Xt: m.predict(Xt)),
        f"TSGS3VM ({backend})": ours(),
        f"supervised, C*=0 ({backend})": ours(C_star=0.0),
    }
    methods.update({peer: both(make) for peer, make in s3vm_peers(name).items()})
    return methods


def run_section(data_dir=None, quick=False, backend="cpu", progress=print):
    seeds = (0,) if quick else (0, 1, 2, 3, 4)
    names = QUICK if quick else FULL
    max_unlabeled = 20_000 if quick else None
    rows = []
    # compile the kernels outside the timers
    rng = np.random.default_rng(0)
    Xw = rng.normal(size=(300, 5)).astype(np.float32)
    tsgs3vm.fit(Xw[:50], np.where(Xw[:50, 0] > 0, 1, -1), Xw[50:], n_iter=2, backend=backend)
    for name in names:
        try:
            data = [split(name, seed, data_dir, max_unlabeled) for seed in seeds]
        except (FileNotFoundError, OSError) as exc:
            progress(f"{name}: skipped ({exc})")
            continue
        X_l, _, X_u, X_t, _ = data[0]
        label = "higgs (standardised)" if name == "higgs" else name
        progress(f"== {label}: {len(X_l)} labeled, {len(X_u)} unlabeled, {len(X_t)} test, {X_l.shape[1]} dims")
        for method, (fit, predict) in _methods(name, backend).items():
            results = []
            for seed, (X_l, y_l, X_u, X_t, y_t) in zip(seeds, data):
                results.append(measure(lambda: fit(X_l, y_l, X_u, seed), lambda m: predict(m, X_t), y_t,
                                       memory=seed == seeds[0]))
            acc = np.array([r[1] for r in results])
            rows.append(Row(label, method, float(acc.mean()), float(np.mean([r[2] for r in results])),
                            float(np.mean([r[3] for r in results])), results[0][4],
                            f"{len(seeds)} seed{'s' if len(seeds) > 1 else ''}",
                            float(acc.std()) if len(seeds) > 1 else None))
            progress(f"  {method}: {100 * acc.mean():.2f}%  fit {rows[-1].fit_s:.2f} s")
    text = (f"{N_LABELED} labels, test {N_TEST} held-out rows, the rest unlabeled"
            + (" (at most 20,000 in --quick)" if quick else "")
            + f"; accuracy mean ± std over seeds {list(seeds)}, times are means.\n")
    plots = [("tsgs3vm_accuracy_vs_time.png", accuracy_time_figure(rows, "TSGS3VM"))] if rows else []
    return {"title": "TSGS3VM (semi-supervised SVM)", "rows": rows, "peer": PEER, "markdown": text, "plots": plots}
