"""SBP next to scikit-learn's SVC on the same split (USPS digit 8 versus the rest).

usps.h5 (../shared/data), standard split, float32, RBF gamma = 1 / (d var X),
SVC(C=10) and the SBP at nu = 5e-6 (``sbp.nu_from_svm`` on that SVC), 500
iterations, with bias. The a9a and letter protocols live in
``algorithms/_bench/sbp.py`` (too long for an asv repeat loop).
"""

import numpy as np

from algorithms import sbp
from algorithms.datasets import load

from .common import _FitPredictSuite

NU, C, N_ITER = 5e-6, 10.0, 500


def _data():
    X, y, Xt, yt = load("usps8")
    X, Xt = X.astype(np.float32), Xt.astype(np.float32)
    return X, y, Xt, yt, float(1.0 / (X.shape[1] * X.var()))


class SBP(_FitPredictSuite):
    algorithm = sbp

    def setup_cache(self):
        return _data()

    def prepare(self, data, bk):
        X, y, Xt, yt, gamma = data
        kwargs = {"nu": NU, "gamma": gamma, "n_iter": N_ITER, "random_state": 0}
        return (bk.asarray(X), bk.asarray(y)), kwargs, bk.asarray(Xt), yt


class SVCPeer:
    """scikit-learn SVC on the same data and kernel."""

    timeout = 600

    def setup_cache(self):
        from sklearn.svm import SVC

        X, y, Xt, yt, gamma = _data()
        return X, y, Xt, yt, gamma, SVC(C=C, gamma=gamma).fit(X, y)

    def setup(self, data):
        self.X, self.y, self.Xt, self.yt, self.gamma, self.model = data

    def time_fit(self, data):
        from sklearn.svm import SVC

        SVC(C=C, gamma=self.gamma).fit(self.X, self.y)

    def time_predict(self, data):
        self.model.predict(self.Xt)

    def peakmem_fit(self, data):
        from sklearn.svm import SVC

        SVC(C=C, gamma=self.gamma).fit(self.X, self.y)

    def track_test_accuracy(self, data):
        return float(np.mean(self.model.predict(self.Xt) == self.yt))

    track_test_accuracy.unit = "fraction"
