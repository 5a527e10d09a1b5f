"""pandas DataFrames as users bring them: every estimator keeps the column names
(``feature_names_in_``, scikit-learn's convention) and every functional ``fit`` takes a
DataFrame on the first call of a fresh process (a subprocess: the first-call bugs
only show before any NumPy array reached the dispatcher)."""

import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("pandas")

ROOT = pathlib.Path(__file__).resolve().parents[2]

_SCRIPT = """
import warnings
import numpy as np
import pandas as pd

rng = np.random.default_rng(0)
y = np.where(rng.random(200) < 0.7, 1, -1)
X = pd.DataFrame(rng.normal(size=(200, 3)) + y[:, None], columns=["age", "height", "weight"])

from algorithms import dsg, sbp, s3gd, tsgs3vm, tsgsu   # the fits first, before any estimator
fits = {
    "dsg": dsg.fit(X, y, n_iter=3, batch_size=50, block_size=8, random_state=0),
    "sbp": sbp.fit(X, y, nu=0.1, gamma=0.5, n_iter=20, random_state=0),
    "s3gd": s3gd.fit(X, y, max_epochs=1, random_state=0),
    "tsgs3vm": tsgs3vm.fit(X, np.where(np.arange(200) < 40, (y == 1).astype(int), -1), n_iter=3, random_state=0),
}
X_s, X_u = tsgsu.make_su_data(X, y, 30, 60, replace=True, random_state=0)
fits["tsgsu"] = tsgsu.fit(pd.DataFrame(X_s.reshape(60, 3)), pd.DataFrame(X_u), prior=0.7, n_iter=3,
                          batch_size=30, random_state=0)
for name, model in fits.items():
    assert len(np.asarray(model.predict(X))) == 200, name

from algorithms import (DSGClassifier, DSGRegressor, S3GDClassifier, SBPClassifier, TSGS3VMClassifier,
                        TSGSUClassifier)
estimators = [
    (DSGClassifier(n_iter=3, batch_size=50, random_state=0), y),
    (DSGRegressor(n_iter=3, batch_size=50, random_state=0), y.astype(float)),
    (SBPClassifier(nu=0.1, gamma=0.5, n_iter=20, random_state=0), y),
    (S3GDClassifier(max_epochs=1, random_state=0), y),
    (TSGS3VMClassifier(n_iter=3, random_state=0), np.where(np.arange(200) < 40, (y == 1).astype(int), -1)),
    (TSGSUClassifier(prior=0.7, n_iter=3, batch_size=30, random_state=0), (np.arange(200) < 60).astype(int)),
]
for est, target in estimators:
    est.fit(X, target)
    name = type(est).__name__
    assert list(est.feature_names_in_) == ["age", "height", "weight"], name
    assert est.n_features_in_ == 3, name
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same names: no warning
        est.predict(X)
    with pytest.raises(ValueError, match="feature names"):  # scikit-learn's check of the names
        est.predict(X[["weight", "height", "age"]].set_axis(["w", "h", "a"], axis=1))
print("ok", len(fits), len(estimators))
"""


def test_dataframes_in_a_fresh_process():
    done = subprocess.run([sys.executable, "-c", "import pytest\n" + _SCRIPT], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "ok 5 6"
