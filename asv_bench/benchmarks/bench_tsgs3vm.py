"""TSGS3VM next to scikit-learn's semi-supervised peers on the same split.

HIGGS sample (../shared/data/higgs.csv): 200 labeled rows drawn at random, 2,000
held-out test rows, the rest unlabeled (the paper's protocol at a size the peers
can run). Peers: SelfTrainingClassifier over a calibrated SVC and
LabelSpreading with the knn kernel, both on the same rows.
"""

import numpy as np

from algorithms import tsgs3vm
from algorithms.datasets import load

from .common import _FitPredictSuite


def _split(seed=0):
    X, y, Xt, yt = load("higgs")
    X = np.vstack([X, Xt])
    y = np.concatenate([y, yt])
    X = (X - X.mean(0)) / X.std(0)
    perm = np.random.default_rng(seed).permutation(len(y))
    lab, test, unl = perm[:200], perm[200:2200], perm[2200:]
    return X[lab], y[lab], X[unl], X[test], y[test]


class TSGS3VM(_FitPredictSuite):
    algorithm = tsgs3vm

    def setup_cache(self):
        return _split()

    def prepare(self, data, bk):
        X_l, y_l, X_u, X_t, y_t = data
        X_l, y_l, X_u, X_t = (bk.asarray(a.astype(np.float32)) for a in (X_l, y_l, X_u, X_t))
        return (X_l, y_l, X_u), {"random_state": 0}, X_t, y_t


def _make_peer(peer):
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier
    from sklearn.svm import SVC

    if peer == "SelfTraining(SVC)":
        # SVC's own probability=True is deprecated in scikit-learn 1.9; this is its replacement.
        return SelfTrainingClassifier(CalibratedClassifierCV(SVC(gamma="scale"), ensemble=False))
    return LabelSpreading(kernel="knn", n_neighbors=7)


class SemiSupervisedPeers:
    """Fit / predict time and accuracy of the peers (no peakmem: the bench command reports memory)."""

    params = (["SelfTraining(SVC)", "LabelSpreading(knn)"],)
    param_names = ["peer"]
    timeout = 900
    number = 1
    repeat = (1, 2, 120.0)

    def setup_cache(self):
        X_l, y_l, X_u, X_t, y_t = _split()
        # The loader's labels are -1/+1 and -1 marks "unlabeled" for these peers: use 0/1.
        y_l, y_t = (y_l == 1).astype(int), (y_t == 1).astype(int)
        X = np.vstack([X_l, X_u])
        y = np.concatenate([y_l, np.full(len(X_u), -1)])
        models = {peer: _make_peer(peer).fit(X, y) for peer in self.params[0]}
        return X, y, X_t, y_t, models

    def setup(self, data, peer):
        self.X, self.y, self.X_t, self.y_t, models = data
        self.model = models[peer]

    def time_fit(self, data, peer):
        _make_peer(peer).fit(self.X, self.y)

    def time_predict(self, data, peer):
        self.model.predict(self.X_t)

    def track_test_accuracy(self, data, peer):
        return float(np.mean(self.model.predict(self.X_t) == self.y_t))

    track_test_accuracy.unit = "fraction"
