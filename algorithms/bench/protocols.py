"""The benchmark protocols, one place for each: datasets, splits, settings and peers.

``python -m algorithms bench`` (the section modules beside this one), the asv
suites (``asv_bench/benchmarks``) and ``python -m algorithms demo`` import them from
here, so a protocol changed here changes everywhere and the numbers of the three
stay comparable. Method code (how a row is measured, tables, plots) stays in the
section modules.
"""

from __future__ import annotations

import numpy as np

from algorithms import tsgsu
from algorithms.datasets import load

# --- DSG / UDSG / CDSG (supervised kernel machines) -----------------------------------------

# Per dataset: the kernel width every method shares, SVC's C, our settings and iterations.
DSG_DATASETS = {
    "ijcnn1": {"gamma": 1.0, "svc_C": 10.0, "dsg": {"precondition": 0.1}, "n_iter": 200},
    "a9a": {"gamma": 0.05, "svc_C": 1.0, "dsg": {"precondition": 1.0}, "n_iter": 100},
}
# Used when ../shared/data is absent and the loaders fall back to scikit-learn's digits.
DSG_FALLBACK = {"gamma": 0.02, "svc_C": 10.0, "dsg": {"precondition": 0.1}, "n_iter": 60}
DSG_VARIANTS = ("dsg", "udsg", "cdsg")
DSG_PEER = "RBFSampler+SGD"


def dsg_settings(used):
    """The settings of dataset ``used`` (the fallback's for scikit-learn's digits)."""
    return DSG_DATASETS.get(used, DSG_FALLBACK)


def dsg_n_iter(settings, variant, quick=False):
    """Iterations of one variant: UDSG revisits old blocks, so it runs 1.5x as many; --quick halves."""
    n_iter = settings["n_iter"] * (3 if variant == "udsg" else 2) // 2
    return n_iter // 2 if quick else n_iter


def dsg_fit_kwargs(settings, variant, quick=False):
    """Keyword arguments of ``dsg.fit`` for one variant under this protocol (backend not included)."""
    return {"variant": variant, "gamma": settings["gamma"], "n_iter": dsg_n_iter(settings, variant, quick),
            "random_state": 0, **settings["dsg"]}


def dsg_peers(settings):
    """The kernel machines on the same kernel: name -> (make, size description); the
    SVC is :func:`svc_peer`'s (its row named by :data:`ONEDAL_SVC` or :data:`SKLEARN_SVC`)."""
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC

    gamma, C = settings["gamma"], settings["svc_C"]
    svc_name, SVC = svc_peer()
    return {
        svc_name: (lambda: SVC(C=C, gamma=gamma), lambda m: f"{len(m.support_)} SV"),
        DSG_PEER: (
            lambda: make_pipeline(
                RBFSampler(n_components=2048, gamma=gamma, random_state=0),
                SGDClassifier(loss="hinge", alpha=1e-5, max_iter=20, tol=None, random_state=0),
            ),
            lambda m: "2048 features",
        ),
        "Nystroem+LinearSVC": (
            lambda: make_pipeline(Nystroem(n_components=1024, gamma=gamma, random_state=0), LinearSVC(C=C)),
            lambda m: "1024 landmarks",
        ),
    }


# The SVC the kernel machines are compared with, named in the tables by the one that ran.
ONEDAL_SVC = "oneDAL SVC"
SKLEARN_SVC = "sklearn SVC"


def svc_peer():
    """The exact SVC the bench compares with: ``(name, SVC class)``.

    oneDAL's (``sklearnex.svm.SVC``, scikit-learn-intelex: the CPU SVC users pick, an
    order of magnitude faster than libsvm on a9a) where scikit-learn-intelex is
    installed (``pip install "kbackends[peers]"``), scikit-learn's (libsvm) otherwise.
    Both take scikit-learn's arguments and expose ``support_`` and ``dual_coef_``.
    """
    try:
        from sklearnex.svm import SVC
    except ImportError:
        from sklearn.svm import SVC

        return SKLEARN_SVC, SVC
    return ONEDAL_SVC, SVC


def svc_peer_note():
    """One line saying which SVC :func:`svc_peer` runs (and its version), for the bench's output."""
    from importlib.metadata import PackageNotFoundError, version

    name, _ = svc_peer()
    package = "scikit-learn-intelex" if name == ONEDAL_SVC else "scikit-learn"
    try:
        release = version(package)
    except PackageNotFoundError:
        release = "unknown version"
    fallback = "" if name == ONEDAL_SVC else " (scikit-learn-intelex is not installed: libsvm)"
    return f"SVC peer: {name}, {package} {release}{fallback}"


# --- TSGS3VM (semi-supervised SVM) ---------------------------------------------------------

S3VM_N_LABELED = 200
S3VM_N_TEST = 20_000
S3VM_DATASETS = ("ijcnn1", "skin", "higgs", "a9a")
S3VM_QUICK = ("higgs", "a9a")
S3VM_PEER = "SVC (200 labels)"


def s3vm_split(name, seed, data_dir=None, max_unlabeled=None):
    """``(X_l, y_l, X_u, X_t, y_t)`` of the paper's protocol (Geng et al. 2019, Sec. 6) for one seed.

    ``S3VM_N_LABELED`` rows drawn at random from the train and test files joined,
    ``S3VM_N_TEST`` other rows held out (at most half of what remains), the rest
    unlabeled (the first ``max_unlabeled`` of them when given). HIGGS's columns are
    standardised (their scales differ by orders of magnitude).
    """
    X, y, Xt, yt = load(name, data_dir)
    X, y = np.vstack([X, Xt]), np.concatenate([y, yt])
    if name == "higgs":
        X = (X - X.mean(0)) / X.std(0)
    perm = np.random.default_rng(seed).permutation(len(y))
    n_test = min(S3VM_N_TEST, (len(y) - S3VM_N_LABELED) // 2)
    lab, test = perm[:S3VM_N_LABELED], perm[S3VM_N_LABELED:S3VM_N_LABELED + n_test]
    unl = perm[S3VM_N_LABELED + n_test:]
    if max_unlabeled is not None:
        unl = unl[:max_unlabeled]
    return X[lab], y[lab], X[unl], X[test], y[test]


def s3vm_peers(name):
    """The semi-supervised peers on labeled + unlabeled rows: name -> make (an unfitted
    scikit-learn estimator that takes 0/1 labels with -1 for "unlabeled")."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier
    from sklearn.svm import SVC

    peers = {"LabelSpreading (knn)": lambda: LabelSpreading(kernel="knn", n_neighbors=7)}
    if name == "higgs":
        # It refits SVC on up to all rows: not run on the large sets. SVC's probability=True
        # is deprecated in scikit-learn 1.9; CalibratedClassifierCV replaces it.
        peers["SelfTraining (SVC)"] = lambda: SelfTrainingClassifier(
            CalibratedClassifierCV(SVC(gamma="scale"), ensemble=False))
    return peers


# --- SBP (kernelized stochastic batch perceptron) ------------------------------------------

# nu from `sbp.nu_from_svm` on the SVC of the same protocol (the paper's relation).
SBP_DATASETS = {
    "a9a": {"gamma": 0.05, "svc_C": 1.0, "nu": 0.011, "bias": True, "n_iter": 4000, "quick_iter": 600,
            "curve": (1000, 2000, 4000, 8000), "quick_curve": (150, 300, 600)},
    "usps8": {"gamma": "scale", "svc_C": 10.0, "nu": 5e-6, "bias": True, "n_iter": 300, "quick_iter": 300},
    "letter": {"gamma": 1.0, "svc_C": 10.0, "nu": 1e-4, "bias": False, "n_iter": 1000, "quick_iter": 300},
}
SBP_QUICK_SIZES = {"a9a": (4000, 4000), "usps8": (2000, 1000), "letter": (3000, 1000)}


def sbp_gamma(setting, X):
    """The RBF width of a protocol: a number, or "scale" = 1 / (d var X) as scikit-learn's SVC."""
    return float(1.0 / (X.shape[1] * X.var())) if setting == "scale" else float(setting)


def sbp_data(name, data_dir=None, quick=False):
    """``(X, y, X_t, y_t, gamma)`` of one SBP protocol, float32 (``quick``: the random subsample)."""
    X, y, Xt, yt = load(name, data_dir)
    if quick:
        rng = np.random.default_rng(0)
        n_train, n_test = SBP_QUICK_SIZES[name]
        tr = rng.choice(len(y), size=min(len(y), n_train), replace=False)
        te = rng.choice(len(yt), size=min(len(yt), n_test), replace=False)
        X, y, Xt, yt = X[tr], y[tr], Xt[te], yt[te]
    X, Xt = X.astype(np.float32), Xt.astype(np.float32)
    return X, y, Xt, yt, sbp_gamma(SBP_DATASETS[name]["gamma"], X)


# --- TSGSU (similar-unlabeled classification) ----------------------------------------------

# Standardise the features (continuous / one-hot features with tiny scales) or keep them
# (binary a9a, skin already in [0, 1]).
SU_DATASETS = {
    "phishing": {"standardize": True},
    "a9a": {"standardize": False},
    "magic04": {"standardize": True},
    "skin": {"standardize": False},
}
SU_N_PAIRS, SU_N_UNLABELED = 5000, 10_000


def su_prepare(name, data_dir=None):
    """Train / test arrays of a dataset as the SU protocol uses them (+1 the larger class:
    SU data cannot tell which class is which, the paper's pi_+ > pi_- convention)."""
    X, y, Xt, yt = load(name, data_dir)
    if np.mean(y == 1) < 0.5:
        y, yt = -y, -yt
    if SU_DATASETS[name]["standardize"]:
        mu, sd = X.mean(0), X.std(0)
        sd[sd == 0] = 1.0
        X, Xt = (X - mu) / sd, (Xt - mu) / sd
    return X, y, Xt, yt


def su_split(X, y, n_pairs, n_unlabeled, seed):
    """SU data drawn from (X, y) at the class proportion, with the hidden labels, and the prior."""
    n_pos = int(np.sum(y == 1))
    prior = n_pos / len(y)
    pi_s = prior**2 + (1 - prior) ** 2
    need_pos = 2 * n_pairs * prior**2 / pi_s + n_unlabeled * prior
    replace = need_pos > 0.95 * n_pos or (2 * n_pairs + n_unlabeled - need_pos) > 0.95 * (len(y) - n_pos)
    return tsgsu.make_su_data(X, y, n_pairs, n_unlabeled, replace=replace, random_state=seed,
                              return_labels=True), prior


# --- S3GD (linear logistic regression to an objective gap) ---------------------------------

S3GD_DATASETS = ("ijcnn1", "a9a", "w8a", "phishing")
S3GD_LAM = 1e-3
S3GD_GAP = 1e-2


def appended(X):
    """``[X, 1]``: the paper's constant feature (the regularised intercept)."""
    return np.hstack([X, np.ones((X.shape[0], 1))])


def logistic_objective(Xa, y, w):
    """``F(w) = mean log(1 + exp(-y w.x)) + lam ||w||^2`` on appended rows."""
    return float(np.mean(np.logaddexp(0.0, -y * (Xa @ w))) + S3GD_LAM * (w @ w))


def logistic_optimum(Xa, y, tol=1e-10):
    """``F*`` by scikit-learn's lbfgs on the same appended data."""
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=1.0 / (2 * S3GD_LAM * Xa.shape[0]), fit_intercept=False, tol=tol, max_iter=10_000)
    return logistic_objective(Xa, y, clf.fit(Xa, y).coef_[0])


def linear_peer(peer, n, max_iter):
    """SAGA or SGDClassifier(log_loss) on the same objective (appended data, no own intercept)."""
    from sklearn.linear_model import LogisticRegression, SGDClassifier

    if peer == "SAGA":
        return LogisticRegression(solver="saga", C=1.0 / (2 * S3GD_LAM * n), fit_intercept=False, tol=0.0,
                                  max_iter=max_iter, random_state=0)
    return SGDClassifier(loss="log_loss", alpha=2 * S3GD_LAM, fit_intercept=False, tol=None, max_iter=max_iter,
                         random_state=0)
