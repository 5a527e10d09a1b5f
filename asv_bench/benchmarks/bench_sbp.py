"""SBP next to scikit-learn's SVC on the same split (USPS digit 8 versus the rest).

The protocol of `python -m algorithms bench` (algorithms/bench/protocols.py):
usps.h5 (../shared/data), standard split, float32, RBF gamma = 1 / (d var X),
SVC(C=10) and the SBP at the nu that ``sbp.nu_from_svm`` gives on that SVC, with
bias, the protocol's iterations. The a9a and letter protocols run in the bench
command only (too long for an asv repeat loop).
"""

import numpy as np

from algorithms import sbp
from algorithms.bench.protocols import SBP_DATASETS, sbp_data

from .common import _FitPredictSuite

DATASET = "usps8"
SETTINGS = SBP_DATASETS[DATASET]


def _svc(gamma):
    from sklearn.svm import SVC

    return SVC(C=SETTINGS["svc_C"], gamma=gamma)


class SBP(_FitPredictSuite):
    algorithm = sbp

    def setup_cache(self):
        return sbp_data(DATASET)

    def prepare(self, data, bk):
        X, y, Xt, yt, gamma = data
        kwargs = {"nu": SETTINGS["nu"], "gamma": gamma, "bias": SETTINGS["bias"], "n_iter": SETTINGS["n_iter"],
                  "random_state": 0}
        return (bk.asarray(X), bk.asarray(y)), kwargs, bk.asarray(Xt), yt


class SVCPeer:
    """scikit-learn SVC on the same data and kernel."""

    timeout = 600

    def setup_cache(self):
        X, y, Xt, yt, gamma = sbp_data(DATASET)
        return X, y, Xt, yt, gamma, _svc(gamma).fit(X, y)

    def setup(self, data):
        self.X, self.y, self.Xt, self.yt, self.gamma, self.model = data

    def time_fit(self, data):
        _svc(self.gamma).fit(self.X, self.y)

    def time_predict(self, data):
        self.model.predict(self.Xt)

    def peakmem_fit(self, data):
        _svc(self.gamma).fit(self.X, self.y)

    def track_test_accuracy(self, data):
        return float(np.mean(self.model.predict(self.Xt) == self.yt))

    track_test_accuracy.unit = "fraction"
