"""SBP with sample weights (weighted water levels against repeated heights, fits
against duplicated / removed rows), scipy.sparse rows, and the data-driven defaults."""

import numpy as np
import pytest
import scipy.sparse as sp

from algorithms import SBPClassifier, sbp
from algorithms.sbp import _defaults as _sbp_defaults
from algorithms.sbp._defaults import (
    auto_n_iter,
    extrapolate_nu,
    sbp_defaults,
    scale_gamma,
)
from algorithms.datasets import example_data
from kbackends.ops import kernel_response_update, water_level, water_level_biased
from kbackends.testing import kernel_module


def _problem(rng, n):
    c = rng.integers(0, 5, n).astype(float) if rng.random() < 0.5 else rng.standard_normal(n)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    w = rng.integers(0, 4, n).astype(float)
    w[:2] = np.maximum(w[:2], 1.0)
    return c, y, w


@pytest.mark.parametrize("impl", ["xp", "numba"])
@pytest.mark.parametrize("volume", [0.0, 0.3, 2.0, 50.0])
def test_weighted_levels_are_the_levels_of_repeated_heights(impl, volume):
    """Integer widths: the level (and the two-basin level and bias) of each height
    repeated that many times, for the reference and the Numba kernel."""
    module = kernel_module("waterfill", impl)
    reference = kernel_module("waterfill", "xp")
    rng = np.random.default_rng(0)
    for _ in range(40):
        c, y, w = _problem(rng, int(rng.integers(2, 30)))
        cr, yr = np.repeat(c, w.astype(int)), np.repeat(y, w.astype(int))
        got = module.water_level_weighted(c, w, np.array([volume]), np.array([0, c.size]), xp=np)
        want = reference.water_level(cr, np.array([volume]), np.array([0, cr.size]), xp=np)
        np.testing.assert_allclose(np.asarray(got, float), np.asarray(want, float), atol=1e-9)
        g, b = module.water_level_biased_weighted(c, y, w, volume, xp=np)
        g2, b2 = reference.water_level_biased(cr, yr, volume, xp=np)
        np.testing.assert_allclose([float(g), float(b)], [float(g2), float(b2)], atol=1e-9)


def test_weighted_numba_matches_reference_with_real_widths():
    rng = np.random.default_rng(1)
    numba_k, ref = kernel_module("waterfill", "numba"), kernel_module("waterfill", "xp")
    for _ in range(30):
        c, y, _ = _problem(rng, 50)
        w = rng.random(50) * 3
        off = np.array([0, 20, 50])
        np.testing.assert_allclose(numba_k.water_level_weighted(c, w, np.array([1.0, 2.0]), off, xp=np),
                                   ref.water_level_weighted(c, w, np.array([1.0, 2.0]), off, xp=np), atol=1e-9)
        np.testing.assert_allclose(numba_k.water_level_biased_weighted(c, y, w, 1.5, xp=np),
                                   [float(v) for v in ref.water_level_biased_weighted(c, y, w, 1.5, xp=np)],
                                   atol=1e-9)


def test_weighted_ops_check_their_weights():
    c, y = np.array([0.0, 1.0, 2.0]), np.array([1, -1, 1])
    assert float(water_level(c, 1.0, weights=np.ones(3))) == float(water_level(c, 1.0))
    with pytest.raises(ValueError, match=">= 0"):
        water_level(c, 1.0, weights=np.array([1.0, -1.0, 1.0]))
    with pytest.raises(ValueError, match="each class"):
        water_level_biased(c, y, 1.0, weights=np.array([1.0, 0.0, 1.0]))


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_sparse_response_update_matches_dense(kernel):
    rng = np.random.default_rng(0)
    X = sp.random(60, 40, density=0.1, random_state=0, format="csr")
    idx, coef = np.array([3, 9, 9]), rng.standard_normal(3)
    y, c = np.where(rng.random(60) < 0.5, 1.0, -1.0), rng.standard_normal(60)
    dense = kernel_response_update(X.toarray(), idx, coef, y, c, kernel=kernel, gamma=0.7)
    for form in (X, X.tocoo(), X.tocsc()):
        np.testing.assert_allclose(kernel_response_update(form, idx, coef, y, c, kernel=kernel, gamma=0.7), dense,
                                   atol=1e-12)


@pytest.fixture(scope="module")
def cancer():
    return example_data()


@pytest.mark.parametrize("copies", [1, 8])  # 8: 4,552 rows, two tasks of the cpu run's update
def test_sparse_fit_is_the_dense_fit(cancer, copies):
    X, y = cancer
    X, y = np.tile(X, (copies, 1)), np.tile(y, copies)
    # About 30% stored: it stays sparse (>= 50% would be made dense). Integer values, so the
    # dense kernel's distances (sums of squared differences) and the sparse one's (norms
    # minus twice the dot) are exact and equal: the same draws, the same model. On real
    # values the two round differently and a draw may part the trajectories.
    X = np.where(np.abs(X) < 1.0, 0.0, np.round(X))
    dense = SBPClassifier(random_state=0, n_iter=300, dtype="float64").fit(X, y)
    for form in (sp.csr_matrix(X), sp.coo_matrix(X)):
        est = SBPClassifier(random_state=0, n_iter=300, dtype="float64").fit(form, y)
        assert sp.issparse(est.model_.support_vectors)
        np.testing.assert_allclose(est.decision_function(X), dense.decision_function(X), atol=1e-8)
        np.testing.assert_allclose(est.decision_function(sp.csr_matrix(X)), dense.decision_function(X), atol=1e-8)


def test_weight_two_is_like_a_duplicated_row(cancer):
    """Statistically: weights 2 on a third of the rows and those rows duplicated give
    fits whose decisions agree far more than an unweighted fit's do."""
    X, y = cancer
    twice = np.arange(len(y)) % 3 == 0
    w = np.where(twice, 2.0, 1.0)
    Xd, yd = np.vstack([X, X[twice]]), np.r_[y, y[twice]]
    args = {"nu": 0.05, "n_iter": 3000}
    weighted = [SBPClassifier(random_state=s, **args).fit(X, y, sample_weight=w).decision_function(X) for s in (0, 1)]
    duplicated = SBPClassifier(random_state=2, **args).fit(Xd, yd).decision_function(X)
    skewed = SBPClassifier(random_state=0, **args).fit(X, y, sample_weight=np.where(twice, 20.0, 1.0))
    gap_same = np.abs(weighted[0] - duplicated).mean()
    gap_seed = np.abs(weighted[0] - weighted[1]).mean()
    gap_other = np.abs(weighted[0] - skewed.decision_function(X)).mean()
    assert gap_same < 3 * gap_seed + 1e-3
    assert gap_other > gap_same


def test_zero_weight_is_a_removed_row(cancer):
    X, y = cancer
    keep = np.arange(len(y)) % 4 != 0
    removed = SBPClassifier(random_state=0, n_iter=500).fit(X[keep], y[keep])
    zero = SBPClassifier(random_state=0, n_iter=500).fit(X, y, sample_weight=keep.astype(float))
    np.testing.assert_allclose(zero.decision_function(X), removed.decision_function(X))


def test_heavy_class_pulls_the_decision(cancer):
    X, y = cancer
    base = SBPClassifier(random_state=0, n_iter=500, nu=0.05).fit(X, y)
    heavy = SBPClassifier(random_state=0, n_iter=500, nu=0.05).fit(X, y, sample_weight=np.where(y == 1, 10.0, 1.0))
    assert np.mean(heavy.predict(X) == 1) > np.mean(base.predict(X) == 1)


def test_negative_weights_refused(cancer):
    X, y = cancer
    with pytest.raises(ValueError, match="non-negative"):
        SBPClassifier(n_iter=5).fit(X, y, sample_weight=-np.ones(len(y)))
    with pytest.raises(ValueError, match="non-negative"):
        sbp.fit(X, y, -np.ones(len(y)), nu=0.1, n_iter=5)


def test_defaults_rule():
    assert auto_n_iter(500) == 500
    assert auto_n_iter(5000) == 4243  # ceil(60 sqrt(5000))
    assert auto_n_iter(40000) == 12000  # 60 * 200
    X = np.random.default_rng(0).standard_normal((300, 4)) * 2.0
    assert abs(scale_gamma(X) - 1 / (4 * X.var())) < 1e-12
    assert abs(scale_gamma(sp.csr_matrix(X)) - scale_gamma(X)) < 1e-9
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1.0, -1.0)
    nu, gamma, n_iter = sbp_defaults(X, y[None, :], None, nu="auto", gamma="scale", n_iter=7, kernel="rbf", seed=0,
                                     median=lambda: 1.0)
    assert n_iter == 7 and 0 < nu < 0.1 and gamma == scale_gamma(X)


def test_estimator_defaults_set_n_iter(cancer):
    X, y = cancer
    est = SBPClassifier(random_state=0).fit(X, y)
    assert est.n_iter_ == auto_n_iter(len(y))
    assert est.score(X, y) > 0.95


def test_nu_extrapolation_rule():
    """A power law through the subsamples' nu is followed to n; rising or steeper than
    1/n estimates are clipped (exponent in [-1, 0]); three points average out noise."""
    sizes = [1000, 2000, 4000]
    law = [0.05 * m**-0.3 for m in sizes]
    assert extrapolate_nu(sizes, law, 32000) == pytest.approx(0.05 * 32000**-0.3)
    assert extrapolate_nu(sizes, [0.01, 0.02, 0.03], 32000) == pytest.approx(0.03)
    assert extrapolate_nu(sizes, [0.1, 0.01, 0.001], 8000) == pytest.approx(0.0005)
    assert extrapolate_nu([700], [0.02], 700) == 0.02
    # one noisy middle point moves the least-squares exponent less than a two-point slope
    noisy = [law[0], law[1] * 0.8, law[2]]
    two_point = law[2] * (32000 / 4000) ** (np.log(noisy[2] / noisy[1]) / np.log(2))
    assert abs(extrapolate_nu(sizes, noisy, 32000) - 0.05 * 32000**-0.3) < abs(two_point - 0.05 * 32000**-0.3)


@pytest.mark.parametrize(("n", "expected"), [(5000, [1000] * 4 + [2000] * 2 + [4000]),
                                             (3000, [1000] * 3 + [2000, 3000]), (800, [800])])
@pytest.mark.parametrize("wide", [False, True])
def test_auto_nu_subsample_sizes(monkeypatch, n, expected, wide):
    """The subsample sizes (every disjoint subsample of a smaller size within the largest),
    from one kernel matrix (its blocks) or, past ``DENSE_GRAM_VALUES``, by libsvm's own
    kernel on each subsample."""
    seen = []

    def fake_svm_nu(X, y, weights, gamma, kernel):
        seen.append(X.shape[0])
        return 0.1 * X.shape[0] ** -0.5

    def fake_kernel_svm(K, y, weights):
        assert K.shape == (y.size, y.size)
        seen.append(K.shape[0])
        return 0.1 * K.shape[0] ** -0.5

    monkeypatch.setattr(_sbp_defaults, "_svm_nu", fake_svm_nu)
    monkeypatch.setattr(_sbp_defaults, "nu_of_kernel_svm", fake_kernel_svm)
    if wide:
        monkeypatch.setattr(_sbp_defaults, "DENSE_GRAM_VALUES", 0)
    X = np.zeros((n, 2))
    target = np.where(np.arange(n) % 4 == 0, 1.0, -1.0)
    nu = _sbp_defaults.auto_nu(X, target, None, 1.0, "rbf", 0)
    assert sorted(seen) == expected  # fitted on threads, the largest first
    assert nu == pytest.approx(0.1 * n**-0.5)


def test_auto_nu_pools_the_disjoint_subsamples_of_each_size(monkeypatch):
    """Each smaller size's nu is the geometric mean over its disjoint subsamples inside the
    largest (one subsample's noise, followed 12x by the exponent, moved ijcnn1's nu by a
    factor of 1.6)."""
    n, seen = 9000, {}

    def fake_svm_nu(X, y, weights, gamma, kernel):
        rows = X[:, 0].astype(int)
        seen.setdefault(rows.size, []).append(rows)
        return 0.1 * rows.size**-0.5 * (1.0 + 0.1 * (rows.min() % 3))  # a value per subsample

    pooled = []
    monkeypatch.setattr(_sbp_defaults, "_svm_nu", fake_svm_nu)
    monkeypatch.setattr(_sbp_defaults, "DENSE_GRAM_VALUES", 0)
    monkeypatch.setattr(_sbp_defaults, "extrapolate_nu", lambda sizes, estimates, n: pooled.extend(estimates) or 0.5)
    X = np.stack([np.arange(n), np.zeros(n)], axis=1)
    target = np.where(np.arange(n) % 4 == 0, 1.0, -1.0)
    assert _sbp_defaults.auto_nu(X, target, None, 1.0, "rbf", 3) == 0.5
    (largest,) = seen[4000]
    for m in (1000, 2000):
        parts = seen[m]
        assert len(parts) == 4000 // m
        together = np.concatenate(parts)
        assert np.unique(together).size == together.size and np.isin(together, largest).all()  # disjoint, inside
    values = {m: [0.1 * m**-0.5 * (1.0 + 0.1 * (rows.min() % 3)) for rows in seen[m]] for m in (1000, 2000, 4000)}
    want = [float(np.exp(np.mean(np.log(values[m])))) for m in (1000, 2000, 4000)]
    np.testing.assert_allclose(pooled, want, rtol=1e-12)
