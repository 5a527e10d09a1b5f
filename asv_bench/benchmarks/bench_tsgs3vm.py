"""TSGS3VM next to scikit-learn's semi-supervised peers on the same split.

The protocol of `python -m algorithms bench` (algorithms/bench/protocols.py) on the
HIGGS sample (../shared/data/higgs.csv, standardised): 200 labeled rows drawn at
random, 20,000 held-out test rows, the rest unlabeled. Peers: LabelSpreading with
the knn kernel and SelfTrainingClassifier over a calibrated SVC, on the same rows.
"""

import numpy as np

from algorithms import tsgs3vm
from algorithms.bench.protocols import s3vm_peers, s3vm_split

from .common import _FitPredictSuite

DATASET = "higgs"


class TSGS3VM(_FitPredictSuite):
    algorithm = tsgs3vm

    def setup_cache(self):
        return s3vm_split(DATASET, 0)

    def prepare(self, data, bk):
        X_l, y_l, X_u, X_t, y_t = data
        X_l, y_l, X_u, X_t = (bk.asarray(a.astype(np.float32)) for a in (X_l, y_l, X_u, X_t))
        return (X_l, y_l, X_u), {"random_state": 0}, X_t, y_t


# asv's names of the peers -> the protocol's.
PEERS = {"SelfTraining(SVC)": "SelfTraining (SVC)", "LabelSpreading(knn)": "LabelSpreading (knn)"}


def _make_peer(peer):
    return s3vm_peers(DATASET)[PEERS[peer]]()


class SemiSupervisedPeers:
    """Fit / predict time and accuracy of the peers (no peakmem: the bench command reports memory)."""

    params = (list(PEERS),)
    param_names = ["peer"]
    timeout = 900
    number = 1
    repeat = (1, 2, 120.0)

    def setup_cache(self):
        X_l, y_l, X_u, X_t, y_t = s3vm_split(DATASET, 0)
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
