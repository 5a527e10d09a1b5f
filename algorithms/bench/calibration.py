"""``probability=True`` against the alternatives: Brier score, log loss and accuracy.

``python -m algorithms.bench.calibration [--quick]`` prints one Markdown table per
data set (docs/benchmarks.md, "Calibration"). Rows: the logistic of the raw hinge
decision (what a hinge model's margin says when read as a log-odds, uncalibrated),
``probability=True`` (Platt's sigmoid on 10% held-out rows), scikit-learn's
``CalibratedClassifierCV(method="sigmoid", cv=3)`` around the same estimator (the
peer: three fits on 2/3 of the rows each, Platt on the third left out), and for DSG
the logistic loss itself.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from algorithms import DSGClassifier, SBPClassifier
from algorithms.datasets import load

from .common import pipe_table, row_text


def _data(name, quick):
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.model_selection import train_test_split

    if name in ("breast_cancer", "digits"):
        X, y = (load_breast_cancer if name == "breast_cancer" else load_digits)(return_X_y=True)
        X = (X - X.mean(0)) / (X.std(0) + 1e-12)
        return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)

    X, y, Xt, yt = load(name)
    n = 3000 if quick else 20_000
    rows = np.random.default_rng(0).choice(len(y), min(n, len(y)), replace=False)
    return X[rows], Xt[:n], y[rows], yt[:n]


def _raw_proba(f):
    p = 1.0 / (1.0 + np.exp(-np.clip(f, -60, 60)))
    return np.stack((1 - p, p), axis=1) if f.ndim == 1 else p / p.sum(axis=1, keepdims=True)


def _scores(y, P, pred, classes):
    from sklearn.metrics import log_loss

    onehot = (np.asarray(y)[:, None] == classes[None, :]).astype(float)
    brier = float(np.mean(np.sum((P - onehot) ** 2, axis=1)))
    return brier, float(log_loss(y, np.clip(P, 1e-15, 1), labels=classes)), float(np.mean(pred == y))


def _estimators(name, n):
    gamma = {"breast_cancer": 0.02, "digits": 0.02, "ijcnn1": 1.0, "a9a": 0.05}[name]
    dsg = dict(gamma=gamma, n_iter=50, batch_size=min(1024, n // 2), random_state=0)
    return {
        "DSG (hinge)": (lambda **kw: DSGClassifier(**dsg, **kw)),
        "SBP": (lambda **kw: SBPClassifier(nu=0.01, gamma=gamma, random_state=0, **kw)),
    }, (lambda: DSGClassifier(loss="logistic", **dsg))


HEADER = ["model", "probabilities", "Brier", "log loss", "accuracy", "fit s"]


def run(names=("breast_cancer", "digits", "ijcnn1"), quick=False, progress=print):
    from sklearn.calibration import CalibratedClassifierCV

    DSGClassifier(n_iter=2, batch_size=8, random_state=0).fit(np.eye(4), [0, 1, 0, 1])  # JIT warm-up
    lines = []
    for name in names:
        X, Xt, y, yt = _data(name, quick)
        table = []
        makers, logistic = _estimators(name, len(y))
        for label, make in makers.items():
            fits = []
            start = time.perf_counter()
            plain = make().fit(X, y)
            fits.append(("logistic of the raw decision (uncalibrated)", plain,
                         _raw_proba(np.asarray(plain.decision_function(Xt), dtype=np.float64)),
                         time.perf_counter() - start))
            start = time.perf_counter()
            calibrated = make(probability=True).fit(X, y)
            fits.append(("`probability=True` (Platt, 10% held out)", calibrated, calibrated.predict_proba(Xt),
                         time.perf_counter() - start))
            start = time.perf_counter()
            peer = CalibratedClassifierCV(make(), method="sigmoid", cv=3).fit(X, y)
            fits.append(("sklearn `CalibratedClassifierCV(sigmoid, cv=3)`", peer, peer.predict_proba(Xt),
                         time.perf_counter() - start))
            for what, model, P, seconds in fits:
                brier, loss, acc = _scores(yt, np.asarray(P), np.asarray(model.predict(Xt)), model.classes_)
                table.append([label, what, f"{brier:.4f}", f"{loss:.4f}", f"{100 * acc:.2f}%", f"{seconds:.2f}"])
                progress(row_text(HEADER, table[-1]))
        start = time.perf_counter()
        clf = logistic().fit(X, y)
        seconds = time.perf_counter() - start
        brier, loss, acc = _scores(yt, np.asarray(clf.predict_proba(Xt)), np.asarray(clf.predict(Xt)), clf.classes_)
        table.append(["DSG (logistic loss)", "its own log-odds", f"{brier:.4f}", f"{loss:.4f}", f"{100 * acc:.2f}%",
                      f"{seconds:.2f}"])
        progress(row_text(HEADER, table[-1]))
        lines += [f"### {name}: {len(y)} training rows, {len(yt)} test rows, {len(np.unique(y))} classes", "",
                  pipe_table(HEADER, table), ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3,000-row subsets of the real sets")
    parser.add_argument("--data", nargs="*", default=["breast_cancer", "digits", "ijcnn1"])
    args = parser.parse_args(argv)
    print(run(tuple(args.data), args.quick, progress=lambda line: None))


if __name__ == "__main__":
    main()
