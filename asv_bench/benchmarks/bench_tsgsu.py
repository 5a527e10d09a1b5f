"""TSGSU (similar-unlabeled classification) next to the closed-form SU-SL on the same split.

magic04, the paper's protocol (algorithms/bench/protocols.py): 5,000 similar pairs and
10,000 unlabeled points drawn at the class prior from the training rows, the
held-out split for testing, the true prior. Fit / predict time, peak memory and
test accuracy of TSGSU (correction "abs") per backend, and of SU-SL linear and
on 500 random features (ridge, and on random features the width, chosen by the
held-out SU risk).
"""

import numpy as np

from algorithms import tsgsu
from algorithms.bench.protocols import SU_N_PAIRS, SU_N_UNLABELED, su_prepare, su_split
from algorithms.bench.tsgsu import su_sl_selected

from .common import _FitPredictSuite

DATASET = "magic04"


def _data():
    X, y, Xt, yt = su_prepare(DATASET)
    (X_s, X_u, _, _), prior = su_split(X.astype(np.float32), y, SU_N_PAIRS, SU_N_UNLABELED, 0)
    return X_s, X_u, Xt.astype(np.float32), yt, prior


class TSGSU(_FitPredictSuite):
    algorithm = tsgsu

    def setup_cache(self):
        return _data()

    def prepare(self, data, bk):
        X_s, X_u, X_t, y_t, prior = data
        return (bk.asarray(X_s), bk.asarray(X_u)), {"prior": prior, "random_state": 0}, bk.asarray(X_t), y_t


class EstimatePrior:
    timeout = 300

    def setup_cache(self):
        return _data()

    def time_estimate_prior(self, data):
        tsgsu.estimate_prior(data[0], data[1], random_state=0)

    def track_prior_error(self, data):
        return abs(tsgsu.estimate_prior(data[0], data[1], random_state=0) - data[4])

    track_prior_error.unit = "|pi_+ estimate - pi_+|"


class SUSL:
    """The closed-form SU-SL baseline: fit time and accuracy (prediction is one matrix product)."""

    params = (["linear", "rff"],)
    param_names = ["features"]
    timeout = 600
    number = 1

    def setup_cache(self):
        return _data()

    def setup(self, data, features):
        X_s, X_u, X_t, self.y_t, prior = data
        self.model, _ = su_sl_selected(X_s, X_u, prior, features, 0)

    def time_fit(self, data, features):
        su_sl_selected(data[0], data[1], data[4], features, 0)

    def track_test_accuracy(self, data, features):
        return float(np.mean(self.model.predict(data[2]) == self.y_t))

    track_test_accuracy.unit = "fraction"


class SelectParams:
    """Label-free model selection (tsgsu.select_params: 3-fold SU risk of the 0-1 loss over
    4 x 4 (lam, width) candidates) on the cpu backend: its time and the test accuracy of
    the refit choice. Run once in setup_cache (48 fits); the tracks read the result."""

    timeout = 900

    def setup_cache(self):
        import time

        X_s, X_u, X_t, y_t, prior = _data()
        start = time.perf_counter()
        selection = tsgsu.select_params(X_s, X_u, prior=prior, random_state=0, backend="cpu")
        seconds = time.perf_counter() - start
        model = tsgsu.fit(X_s, X_u, **selection.params, backend="cpu")
        return seconds, float(np.mean(tsgsu.predict(model, X_t) == y_t))

    def track_select_seconds(self, result):
        return result[0]

    track_select_seconds.unit = "seconds"

    def track_selected_test_accuracy(self, result):
        return result[1]

    track_selected_test_accuracy.unit = "fraction"
