"""DSG / UDSG / CDSG next to scikit-learn's SVC and RBFSampler + SGDClassifier.

Same data, same split, one asv run: read the ratios straight off the report.
Data: ijcnn1 and a9a from ../shared/data (or $KBACKENDS_DATA); scikit-learn's
digits 8-vs-rest when the folder is absent.
"""

import numpy as np

from algorithms import dsg
from algorithms.bench.protocols import DSG_DATASETS, dsg_fit_kwargs, dsg_peers, dsg_settings, svc_peer
from algorithms.datasets import load_or_digits

from .common import BACKENDS, _FitPredictSuite


def _data(name):
    used, X, y, Xt, yt = load_or_digits(name)
    return used, X.astype(np.float32), y, Xt.astype(np.float32), yt


class DSG(_FitPredictSuite):
    """Fit and predict time, peak memory and test accuracy per backend and variant, with the
    settings of `python -m algorithms bench` (algorithms/bench/protocols.py)."""

    algorithm = dsg
    # UDSG is the same engine as DSG with old-block revisits; the bench command times it.
    params = (BACKENDS, list(DSG_DATASETS), ["dsg", "cdsg"])
    param_names = ["backend", "dataset", "variant"]
    number = 1
    repeat = (1, 3, 60.0)

    def setup_cache(self):
        # Data and one cpu model per (dataset, variant), made once per run; `fitted` moves
        # the model to the backend (a model predicts the same on every backend).
        data, models = {}, {}
        for name in DSG_DATASETS:
            data[name] = used, X, y, _, _ = _data(name)
            for variant in self.params[2]:
                models[name, variant] = dsg.fit(X, y, **dsg_fit_kwargs(dsg_settings(used), variant), backend="cpu")
        return data, models

    def prepare(self, cache, bk, dataset, variant):
        used, X, y, Xt, yt = cache[0][dataset]
        X, y = bk.asarray(X), bk.asarray(y)
        kwargs = dsg_fit_kwargs(dsg_settings(used), variant)
        dsg.fit(X[:2000], y[:2000], **{**kwargs, "n_iter": 2, "backend": bk})  # load compiled kernels
        return (X, y), kwargs, bk.asarray(Xt), yt

    def fitted(self, cache, dataset, variant):
        return cache[1][dataset, variant].to(self.bk)


# asv's names of the peers -> the protocol's.
PEERS = {"SVC": svc_peer()[0], "RBFSampler+SGD": "RBFSampler+SGD"}


def _make_peer(used, peer):
    return dsg_peers(dsg_settings(used))[PEERS[peer]][0]()


# Kept out of asv so `asv run --quick` stays short (SVC on a9a: a minute per fit); the
# bench command measures SVC beside DSG, and bench_sbp keeps an SVC suite on USPS.
SKIPPED = {(name, "SVC"): "SVC is measured by `python -m algorithms bench`, not asv" for name in DSG_DATASETS}


class Peers:
    """scikit-learn on the same split: SVC (exact kernel) and RBFSampler(2048) + SGD (hinge, 20 epochs).

    No peakmem here: an SVC fit on a9a takes a minute, and `python -m algorithms bench`
    reports every method's peak memory."""

    params = (list(DSG_DATASETS), list(PEERS))
    param_names = ["dataset", "peer"]
    timeout = 900
    number = 1
    repeat = (1, 2, 120.0)

    def setup_cache(self):
        # Data and one fitted model per (dataset, peer), made once per run: SVC on
        # a9a takes a minute to fit.
        cache = {}
        for name in DSG_DATASETS:
            used, X, y, Xt, yt = _data(name)
            X, Xt = X.astype(np.float64), Xt.astype(np.float64)
            for peer in PEERS:
                if (name, peer) not in SKIPPED:
                    cache[name, peer] = (used, X, y, Xt, yt, _make_peer(used, peer).fit(X, y))
        return cache

    def setup(self, cache, dataset, peer):
        if (dataset, peer) in SKIPPED:
            raise NotImplementedError(SKIPPED[dataset, peer])
        self.used, self.X, self.y, self.Xt, self.yt, self.model = cache[dataset, peer]

    def time_fit(self, cache, dataset, peer):
        _make_peer(self.used, peer).fit(self.X, self.y)

    def time_predict(self, cache, dataset, peer):
        self.model.predict(self.Xt)

    def track_test_accuracy(self, cache, dataset, peer):
        return float(np.mean(self.model.predict(self.Xt) == self.yt))

    track_test_accuracy.unit = "fraction"


class DSGMemory:
    """Peak memory of a fit at two lengths, block regeneration bounded by a 16 MiB
    feature cache: memory must not grow with the number of blocks beyond their
    coefficients (256 features x 4 bytes a block)."""

    params = ([50, 400],)
    param_names = ["n_iter"]
    timeout = 600

    def setup(self, n_iter):
        from kbackends.random import set_cache_budget

        set_cache_budget(16 * 2**20)
        _, X, y, _, _ = load_or_digits("ijcnn1")
        self.X, self.y = X.astype(np.float32), y
        dsg.fit(self.X[:1000], self.y[:1000], n_iter=2, gamma=1.0, random_state=0)

    def teardown(self, n_iter):
        from kbackends.random import set_cache_budget

        set_cache_budget(256 * 2**20)

    def peakmem_fit(self, n_iter):
        dsg.fit(self.X, self.y, n_iter=n_iter, batch_size=1024, gamma=1.0, random_state=0)
