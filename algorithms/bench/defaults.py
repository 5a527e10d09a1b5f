"""Bench section ``defaults``: ``DSGClassifier()`` with default arguments, as a new user runs it.

The acceptance of issue 14 (point 3): on ijcnn1 and a9a exactly as
``load_svmlight_file`` returns them (CSR, float64), and made dense (float64),
``DSGClassifier()`` (default arguments, ``random_state`` 0, 1, 2: the defaults use
None) next to ``RBFSampler(2048, gamma) + SGDClassifier()`` (default SGD) and the
DSG bench's tuned peer ``SGDClassifier(alpha=1e-5, max_iter=20, tol=None)``, in the
same process; float32 input against float64 input; ``DSGClassifier()`` on the
398-row split of breast_cancer. ``python -m algorithms bench --only defaults``.
"""

from __future__ import annotations

import os
import time

import numpy as np

from algorithms import DSGClassifier

from ..datasets import data_dir as default_dir
from .common import Row

SEEDS = (0, 1, 2)
GAMMA = {"ijcnn1": 1.0, "a9a": 0.05}  # the peers' kernel width (DSG's default: the median heuristic)


def _load(name, data_dir):
    from sklearn.datasets import load_svmlight_file

    if name == "ijcnn1":
        X, y = load_svmlight_file(os.path.join(data_dir, "ijcnn1.trn.bz2"), n_features=22)
        Xt, yt = load_svmlight_file(os.path.join(data_dir, "ijcnn1.tst.bz2"), n_features=22)
    else:
        X, y = load_svmlight_file(os.path.join(data_dir, "a9a"), n_features=123)
        Xt, yt = load_svmlight_file(os.path.join(data_dir, "a9a.t"), n_features=123)
    return X, y, Xt, yt


def _timed(make, X, y, Xt, yt):
    start = time.perf_counter()
    model = make().fit(X, y)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    accuracy = float(np.mean(model.predict(Xt) == yt))
    return model, accuracy, fit_s, time.perf_counter() - start


def _repeat(label, name, make, X, y, Xt, yt, seeds, progress):
    runs = [_timed(lambda: make(seed), X, y, Xt, yt) for seed in seeds]
    acc = np.array([r[1] for r in runs])
    fit_s = float(np.mean([r[2] for r in runs]))
    pred_s = float(np.mean([r[3] for r in runs]))
    n_iter = [getattr(r[0], "n_iter_", None) for r in runs]
    size = f"n_iter_ {n_iter}" if n_iter[0] is not None else "2048 features"
    progress(f"  {name} {label}: {100 * acc.mean():.2f}% ± {100 * acc.std():.2f}  fit {fit_s:.2f} s  "
             f"predict {pred_s:.2f} s  ({size})")
    return Row(name, label, float(acc.mean()), fit_s, pred_s, float("nan"), size,
               accuracy_std=float(acc.std()) if len(seeds) > 1 else None)


def run_section(data_dir=None, quick=False, backend="cpu", progress=print):
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline

    data_dir = data_dir or default_dir()
    seeds = SEEDS[:1] if quick else SEEDS
    rows = []
    # Load the compiled kernels outside the timers.
    DSGClassifier(n_iter=2, backend=backend).fit(np.random.default_rng(0).standard_normal((64, 3)),
                                                 np.arange(64) % 2)
    for name in ("ijcnn1", "a9a"):
        X, y, Xt, yt = _load(name, data_dir)
        gamma = GAMMA[name]

        def peer(seed, gamma=gamma):
            return make_pipeline(RBFSampler(n_components=2048, gamma=gamma, random_state=0),
                                 SGDClassifier(random_state=seed))

        def tuned(seed, gamma=gamma):
            return make_pipeline(RBFSampler(n_components=2048, gamma=gamma, random_state=0),
                                 SGDClassifier(alpha=1e-5, max_iter=20, tol=None, random_state=seed))

        def ours(seed):
            return DSGClassifier(random_state=seed, backend=backend)

        for form, (A, At) in (("CSR", (X, Xt)), ("dense", (X.toarray(), Xt.toarray()))):
            label = f"{name} {form} float64"
            progress(f"{label} ...")
            rows.append(_repeat("DSGClassifier()", label, ours, A, y, At, yt, seeds, progress))
            rows.append(_repeat("RBFSampler+SGDClassifier()", label, peer, A, y, At, yt, seeds, progress))
            rows.append(_repeat("RBFSampler+SGD tuned", label, tuned, A, y, At, yt, seeds, progress))
        A, At = X.toarray().astype(np.float32), Xt.toarray().astype(np.float32)
        label = f"{name} dense float32"
        rows.append(_repeat("DSGClassifier()", label, ours, A, y, At, yt, seeds, progress))
        rows.append(_repeat("RBFSampler+SGDClassifier()", label, peer, A, y, At, yt, seeds, progress))

    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)  # 398 training rows
    label = "breast_cancer (398 rows)"
    rows.append(_repeat("DSGClassifier()", label, lambda s: DSGClassifier(random_state=s, backend=backend),
                        X, y, Xt, yt, seeds, progress))
    rows.append(_repeat("RBFSampler+SGDClassifier()", label, lambda s: make_pipeline(
        RBFSampler(n_components=2048, gamma=1.0 / (X.shape[1] * X.var()), random_state=0),
        SGDClassifier(random_state=s)), X, y, Xt, yt, seeds, progress))
    note = ("Default arguments on the data as loaders return it; accuracy is the mean ± standard deviation "
            f"over random_state {list(seeds)}, times the mean per fit. The ratio column divides by "
            "RBFSampler(2048) + SGDClassifier() (default SGD) on the same rows in the same run.")
    return {"title": "DSG defaults (issue 14)", "rows": rows, "peer": "RBFSampler+SGDClassifier()",
            "markdown": note, "plots": []}
