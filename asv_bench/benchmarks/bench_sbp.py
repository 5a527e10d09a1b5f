"""SBP next to scikit-learn's SVC on the same split (USPS digit 8 versus the rest).

usps.h5 (../shared/data), standard split, float32, RBF gamma = 1 / (d var X),
SVC(C=10) and the SBP at nu = 5e-6 (``sbp.nu_from_svm`` on that SVC), 500
iterations, with bias. The a9a and letter protocols live in
``algorithms/_bench/sbp.py`` (too long for an asv repeat loop).
"""

import numpy as np

from algorithms import sbp
from algorithms.datasets import load

from .common import BACKENDS, backend_or_skip, synchronize

NU, C, N_ITER = 5e-6, 10.0, 500


def _data():
    X, y, Xt, yt = load("usps8")
    X, Xt = X.astype(np.float32), Xt.astype(np.float32)
    return X, y, Xt, yt, float(1.0 / (X.shape[1] * X.var()))


class SBP:
    params = (BACKENDS,)
    param_names = ["backend"]
    timeout = 600

    def setup_cache(self):
        return _data()

    def setup(self, data, backend):
        self.bk = bk = backend_or_skip(backend)
        X, y, Xt, self.yt, gamma = data
        self.X, self.y, self.Xt = bk.asarray(X), bk.asarray(y), bk.asarray(Xt)
        self.kwargs = {"nu": NU, "gamma": gamma, "n_iter": N_ITER, "random_state": 0, "backend": bk}
        self.model = sbp.fit(self.X, self.y, **self.kwargs)

    def time_fit(self, data, backend):
        sbp.fit(self.X, self.y, **self.kwargs)
        synchronize(self.bk)

    def time_predict(self, data, backend):
        sbp.predict(self.model, self.Xt)
        synchronize(self.bk)

    def peakmem_fit(self, data, backend):
        sbp.fit(self.X, self.y, **self.kwargs)

    def track_test_accuracy(self, data, backend):
        return float(np.mean(self.bk.to_numpy(sbp.predict(self.model, self.Xt)) == self.yt))

    track_test_accuracy.unit = "fraction"


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
