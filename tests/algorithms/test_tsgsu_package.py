"""algorithms.tsgsu as a package: its public names, make_su_data's new home, and
SU-SL on the library's random features (so on every backend)."""

import numpy as np
import pytest

from algorithms import datasets, tsgsu
from kbackends import to_numpy


def _su(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.7, 1, -1)
    X = rng.normal(size=(n, 3)) + 1.5 * y[:, None]
    X_s, X_u = tsgsu.make_su_data(X, y, 300, 600, random_state=seed)
    return X, y, X_s, X_u


def test_public_names_and_make_su_data_home():
    for name in tsgsu.__all__:
        assert hasattr(tsgsu, name), name
    assert tsgsu.make_su_data is datasets.make_su_data
    # names the bench and tests reach for
    for name in ("_SURisk", "_split_folds", "_fold_rows", "CRITERIA", "SELECT_CV", "SELECT_LAMS",
                 "SELECT_GAMMA_SCALES", "CORRECTIONS", "MARGIN_LOSSES", "EVAL_LOSSES", "check_prior"):
        assert hasattr(tsgsu, name), name


def test_su_sl_rff_runs_on_every_backend_and_matches_cpu(backend):
    X, y, X_s, X_u = _su()
    ref = tsgsu.su_sl_fit(X_s, X_u, 0.7, lam=1e-2, features="rff", n_components=64, gamma=0.2, random_state=3)
    model = tsgsu.su_sl_fit(backend.asarray(X_s), backend.asarray(X_u), 0.7, lam=1e-2, features="rff",
                            n_components=64, gamma=0.2, random_state=3)
    assert type(model.w) is type(backend.asarray(np.zeros(1)))  # the inputs' array type
    f = to_numpy(model.decision_function(backend.asarray(X)))
    np.testing.assert_allclose(f, ref.decision_function(X), rtol=1e-6, atol=1e-6)
    assert np.mean(to_numpy(model.predict(backend.asarray(X))) == y) > 0.9


def test_su_sl_validates_its_inputs():
    _, _, X_s, X_u = _su()
    bad = X_u.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="`X_unlabeled` contains NaN"):
        tsgsu.su_sl_fit(X_s, bad, 0.7)
    with pytest.raises(ValueError, match="`X_unlabeled` has 2 features"):
        tsgsu.su_sl_fit(X_s, X_u[:, :2], 0.7)
    with pytest.raises(ValueError, match="`lam`"):
        tsgsu.su_sl_fit(X_s, X_u, 0.7, lam=-1.0)
    with pytest.raises(ValueError, match="`n_components`"):
        tsgsu.su_sl_fit(X_s, X_u, 0.7, features="rff", n_components=0)


def test_su_sl_float32_follows_dtype():
    X, y, X_s, X_u = _su()
    model = tsgsu.su_sl_fit(X_s.astype(np.float32), X_u.astype(np.float32), 0.7, features="rff",
                            n_components=64, random_state=0, dtype=None)
    assert model.w.dtype == np.float32 and model.omega.dtype == np.float32
    assert np.mean(model.predict(X) == y) > 0.9
