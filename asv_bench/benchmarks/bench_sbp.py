"""SBP next to scikit-learn's SVC on the same split (USPS digit 8 versus the rest).

The protocol of `python -m algorithms bench` (algorithms/bench/protocols.py):
usps.h5 (../shared/data), standard split, float32, RBF gamma = 1 / (d var X),
SVC(C=10) and the SBP at the nu that ``sbp.nu_from_svm`` gives on that SVC, with
bias, the protocol's iterations. ``SBPOneHot``: the a9a protocol's fit on the cpu engine, the
rows dense or as CSR (a9a's rows hold only ones: the CSR fit runs on their bits). The SVC
peer on a9a and the letter protocol run in the bench command only (a minute a fit).
"""

import numpy as np
import scipy.sparse

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


class SBPOneHot:
    """The a9a protocol's SBP fit (its nu, gamma and 4,000 iterations, with bias) on the cpu
    engine: 32,561 one-hot rows dense, or as CSR, where the kernel row runs on the rows' bits
    (``kbackends.kernel_tools.binary_rows``: a popcount a product, the RBF value from a table)."""

    params = (["dense", "csr"],)
    param_names = ["format"]
    timeout = 300

    def setup_cache(self):
        return sbp_data("a9a")

    def setup(self, data, fmt):
        X, self.y = data[0], data[1]
        self.X = X if fmt == "dense" else scipy.sparse.csr_matrix(X)
        settings = SBP_DATASETS["a9a"]
        self.kwargs = {"nu": settings["nu"], "gamma": data[4], "bias": settings["bias"],
                       "n_iter": settings["n_iter"], "random_state": 0, "backend": "cpu"}
        sbp.fit(self.X[:2000], self.y[:2000], **{**self.kwargs, "n_iter": 100})  # compile outside the timer

    def time_fit(self, data, fmt):
        sbp.fit(self.X, self.y, **self.kwargs)

    def track_test_accuracy(self, data, fmt):
        model = sbp.fit(self.X, self.y, **self.kwargs)
        return float(np.mean(sbp.predict(model, data[2]) == data[3]))

    track_test_accuracy.unit = "fraction"
