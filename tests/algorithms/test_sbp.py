"""SBP: Algorithm 1 against a plain re-implementation, learning against SVC,
multiclass, the model container and the boundary."""

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits, load_iris
from sklearn.svm import SVC

import algorithms
from algorithms import sbp
from algorithms.sbp import _defaults as _sbp_defaults
from algorithms.sbp import _svm_nu
from kbackends.testing import host, oracle


def _naive_level(c, y, v, bias):
    """Sort-based level (and bias) by the definitions, float64."""
    if bias:
        g, b = oracle("water_level_biased")(c, y, v, xp=np)
        return float(g), float(b)
    return float(oracle("water_level")(c, np.array([v]), np.array([0, len(c)]), xp=np)[0]), 0.0


def _naive_sbp(X, y, nu, gamma, bias, T, batch_size, seed):
    """Algorithm 1 written out: explicit alpha and c, rescaled every step, averaged
    by summing every iterate; same random draws as ``sbp._loop.run``."""
    n = len(y)
    K = np.exp(-gamma * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    rng = np.random.default_rng(seed)
    alpha, c = np.zeros(n), np.zeros(n)
    alpha_sum, c_sum = np.zeros(n), np.zeros(n)
    for t in range(1, T + 1):
        eta = 1.0 / math.sqrt(t)
        level, b = _naive_level(c, y, n * nu, bias)
        heights = c + b * y
        under = np.flatnonzero(heights < level)
        if under.size == 0:
            under = np.flatnonzero(heights <= level)
        # one host uniform per draw, scaled to a rank among the rows under water
        idx = under[np.minimum((rng.random(batch_size) * under.size).astype(np.int64), under.size - 1)]
        for i in idx:
            alpha[i] += eta / batch_size
        w = alpha * y
        c = y * (K @ w)
        norm = math.sqrt(w @ K @ w)
        if norm > 1:
            alpha, c = alpha / norm, c / norm
        alpha_sum += alpha
        c_sum += c
    level, b = _naive_level(c_sum / T, y, n * nu, bias)
    return alpha_sum / T, level, b


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("batch_size", [1, 3])
def test_matches_algorithm_1_written_out(bias, batch_size):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(40) > 0, 1.0, -1.0)
    args = {"nu": 0.05, "gamma": 0.5, "bias": bias, "n_iter": 60, "batch_size": batch_size}
    seed = 7
    alpha_bar, level, b = _naive_sbp(X, y, args["nu"], args["gamma"], bias, args["n_iter"], batch_size, seed)
    result = sbp._loop.run(X, y[None, :], algorithms.sbp._fit.resolve("cpu"), kernel="rbf", seed=seed, callback=None, **args)
    np.testing.assert_allclose(result["alpha_bar"][0], alpha_bar, rtol=1e-9, atol=1e-12)
    assert result["levels"][0] == pytest.approx(level, rel=1e-9)
    assert result["biases"][0] == pytest.approx(b, rel=1e-9, abs=1e-12)
    # the model: coef = alpha_bar * y / gamma over the support, intercept = b / gamma
    model = sbp.fit(X, np.where(y > 0, 1, 0), kernel="rbf", random_state=seed, dtype="float64", **args)
    support = np.flatnonzero(alpha_bar)
    np.testing.assert_allclose(model.coef[:, 0], alpha_bar[support] * y[support] / level, rtol=1e-8)
    assert float(model.intercept[0]) == pytest.approx(b / level, rel=1e-8, abs=1e-12)


def test_renormalising_the_scale_keeps_the_average(monkeypatch):
    """The stored coefficients are renormalised when the scale factor gets small;
    the averaged iterate must not notice."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 2))
    y = np.where(X[:, 1] > 0, 1.0, -1.0)
    args = {"nu": 0.1, "gamma": 1.0, "bias": True, "n_iter": 50, "batch_size": 1}
    plain = sbp._loop.run(X, y[None, :], sbp._fit.resolve("cpu"), kernel="rbf", seed=3, callback=None, **args)
    monkeypatch.setattr(sbp._loop, "_RENORMALISE_BELOW", 0.99)  # renormalise at nearly every projection
    renorm = sbp._loop.run(X, y[None, :], sbp._fit.resolve("cpu"), kernel="rbf", seed=3, callback=None, **args)
    np.testing.assert_allclose(renorm["alpha_bar"], plain["alpha_bar"], rtol=1e-9, atol=1e-13)
    assert renorm["levels"][0] == pytest.approx(plain["levels"][0], rel=1e-9)


def test_learns_like_svc_on_digits_eight_vs_rest():
    """Real data (scikit-learn's digits, 8 vs rest, 75/25): test error within 1.5
    points of SVC with the same kernel, nu from SVC's C by the paper's relation."""
    X, y = load_digits(return_X_y=True)
    X, y = X / 16.0, np.where(y == 8, 1, -1)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    train, test = order[: 3 * len(y) // 4], order[3 * len(y) // 4 :]
    gamma = 0.05
    svc = SVC(C=10.0, gamma=gamma).fit(X[train], y[train])
    svc_err = (svc.predict(X[test]) != y[test]).mean()
    nu = sbp.nu_from_svm(X[train], y[train], svm=svc)
    model = sbp.fit(X[train], y[train], nu=nu, gamma=gamma, n_iter=1500, random_state=0)
    err = (sbp.predict(model, X[test]) != y[test]).mean()
    assert err <= svc_err + 0.015, (err, svc_err)


def test_linear_kernel_learns(cancer):
    X, y = cancer
    model = sbp.fit(X, y, nu=0.02, kernel="linear", n_iter=800, random_state=0)
    assert (sbp.predict(model, X) == y).mean() > 0.95


@pytest.mark.parametrize("bias", [False, True])
def test_multiclass_one_vs_rest(bias):
    X, y = load_iris(return_X_y=True)
    model = sbp.fit(X, y, nu=0.02, gamma=0.5, n_iter=800, bias=bias, random_state=0)
    assert model.task == "ovr" and model.coef.shape[1] == 3
    assert sbp.decision_function(model, X).shape == (150, 3)
    svc_acc = (SVC(C=10, gamma=0.5).fit(X, y).predict(X) == y).mean()
    assert (sbp.predict(model, X) == y).mean() >= svc_acc - 0.04


def test_segmented_levels_equal_per_class_levels():
    """One segmented call gives each class's level (what the multiclass loop uses)."""
    from kbackends.ops import water_level

    rng = np.random.default_rng(0)
    c = rng.standard_normal((5, 50))
    vol = np.array([1.0, 0.5, 2.0, 0.0, 3.0])
    together = water_level(c.ravel(), vol, segments=np.arange(6) * 50)
    apart = [float(water_level(c[k], vol[k])) for k in range(5)]
    np.testing.assert_allclose(together, apart, rtol=1e-12)


def test_same_seed_same_model_and_callback_stops(cancer):
    X, y = cancer
    a = sbp.fit(X, y, nu=0.05, n_iter=50, random_state=4)
    b = sbp.fit(X, y, nu=0.05, n_iter=50, random_state=4)
    np.testing.assert_array_equal(a.coef, b.coef)
    seen = []
    c = sbp.fit(X, y, nu=0.05, n_iter=50, random_state=4, callback=lambda info: seen.append(info) or len(seen) == 7)
    assert c.params["n_iter_done"] == 7 and seen[-1]["iteration"] == 7 and seen[-1]["norm"][0] <= 1 + 1e-12


def test_float64_input_computes_on_the_float32_path(cancer):
    """One dtype policy (as DSG): float64 input (dense or CSR) gives the float32 input's
    model bit for bit; dtype="float64" keeps full precision."""
    X, y = cancer
    args = {"nu": 0.05, "n_iter": 200, "random_state": 3}
    from64, from32 = sbp.fit(X.astype(np.float64), y, **args), sbp.fit(X.astype(np.float32), y, **args)
    assert from64.dtype == from32.dtype == "float32"
    for name in ("coef", "intercept", "support_vectors"):
        np.testing.assert_array_equal(getattr(from64, name), getattr(from32, name))
    np.testing.assert_array_equal(sbp.predict(from64, X), sbp.predict(from32, X.astype(np.float32)))
    full = sbp.fit(X, y, dtype="float64", **args)
    assert full.dtype == "float64" and full.coef.dtype == np.float64
    Xs = sp.csr_matrix(np.where(np.abs(X) < 1.0, 0.0, X))  # stays sparse
    a, b = sbp.fit(Xs, y, **args), sbp.fit(Xs.astype(np.float32), y, **args)
    assert a.dtype == "float32"
    np.testing.assert_array_equal(a.coef, b.coef)


def test_float32_overflow_keeps_float64_with_a_warning(cancer):
    """Squared distances of |x| ~ 1e18 overflow float32: the fit stays in float64 and says so."""
    X, y = cancer
    with pytest.warns(UserWarning, match=r"computing in float64 \(pass dtype='float64'"):
        model = sbp.fit(X * 1e18, y, nu=0.05, gamma=1e-37, n_iter=100, random_state=0)
    assert model.dtype == "float64" and np.all(np.isfinite(model.coef))
    assert (sbp.predict(model, X * 1e18) == y).mean() > 0.9


def test_model_save_load_and_backends(tmp_path, cancer, backend):
    X, y = cancer
    args = {"nu": 0.05, "gamma": 0.05, "n_iter": 25, "random_state": 2}
    ref = sbp.fit(X, y, **args)
    path = ref.save(tmp_path / "sbp.npz")
    loaded = algorithms.load(path, backend=backend)
    assert isinstance(loaded, algorithms.KernelExpansionModel)
    f = host(sbp.decision_function(loaded, backend.asarray(X)))
    # SBP predicts in float32 (its compute dtype): the simulator sums in NumPy's order,
    # a GPU in its own, a few float32 ulps of the sum over the support vectors apart
    tol = 1e-5 if backend.name == "cuda" else 1e-9
    np.testing.assert_allclose(f, sbp.decision_function(ref, X), rtol=tol, atol=tol)
    got = sbp.fit(backend.asarray(X), backend.asarray(y), backend=backend, **args)
    np.testing.assert_allclose(host(got.coef), ref.coef, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(host(sbp.predict(got, backend.asarray(X))), sbp.predict(ref, X))


def test_prediction_in_chunks_equals_one_block(cancer):
    X, y = cancer
    model = sbp.fit(X, y, nu=0.05, n_iter=100, random_state=0)
    bk = sbp._fit.resolve("cpu")
    whole = model.raw_decision(X, bk)
    chunked = model.raw_decision(X, bk, chunk_elements=model.support_vectors.shape[0] * 7)
    np.testing.assert_allclose(chunked, whole, rtol=1e-12, atol=1e-12)


def test_nu_from_svm_matches_the_paper_relation(cancer):
    X, y = cancer
    svc = SVC(C=1.0, gamma=0.05).fit(X, y)
    nu = sbp.nu_from_svm(X, y, svm=svc)
    # by hand: ||w||^2 = a' K a over the support, hinge from the decision values
    sv, a = svc.support_vectors_, svc.dual_coef_[0]
    K = np.exp(-0.05 * ((sv[:, None] - sv[None]) ** 2).sum(-1))
    hinge = np.maximum(0, 1 - np.where(y == 1, 1, -1) * svc.decision_function(X)).mean()
    assert nu == pytest.approx(hinge / math.sqrt(a @ K @ a), rel=1e-8)
    # and the SBP at that nu agrees with the SVC it came from
    model = sbp.fit(X, y, nu=nu, gamma=0.05, n_iter=1500, random_state=0)
    assert (sbp.predict(model, X) == svc.predict(X)).mean() > 0.97
    assert 0 < sbp.nu_from_svm(X, y, C=1.0, gamma=0.05, max_samples=200) < 1


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_the_relations_decision_values_are_the_svcs_a_chunk_at_a_time(cancer, monkeypatch, kernel):
    """nu_of_svm takes the SVC's decision values as kernel matrices times the dual
    coefficients, a chunk of rows at a time: the values are decision_function's, on
    dense and CSR rows, whatever the chunk."""
    X, y = cancer
    X = X / X.std(axis=0)
    for rows in (X, sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))):
        svc = SVC(C=1.0, kernel=kernel, gamma=0.05).fit(rows, y)
        dual = np.asarray(svc.dual_coef_.toarray() if sp.issparse(svc.dual_coef_) else svc.dual_coef_)[0]
        monkeypatch.setattr(_svm_nu, "DECISION_CHUNK", 7 * svc.support_vectors_.shape[0])  # 7 rows a chunk
        np.testing.assert_allclose(_svm_nu._decision(svc, rows, dual), svc.decision_function(rows), rtol=1e-9,
                                   atol=1e-9)


def test_nu_from_svm_takes_sparse_rows(cancer):
    """A LIBSVM file's CSR rows: the same nu as their dense copy, with a fitted SVC or without."""
    X, y = cancer
    X = np.where(np.abs(X) < 0.5, 0.0, X)  # zeros a sparse file leaves out
    dense = sbp.nu_from_svm(X, y, svm=SVC(C=1.0, gamma=0.05).fit(X, y))
    csr = sp.csr_matrix(X)
    assert sbp.nu_from_svm(csr, y, svm=SVC(C=1.0, gamma=0.05).fit(csr, y)) == pytest.approx(dense, rel=1e-6)
    assert sbp.nu_from_svm(sp.csr_matrix(X), y, gamma=0.05, max_samples=200) == pytest.approx(
        sbp.nu_from_svm(X, y, gamma=0.05, max_samples=200), rel=1e-9)


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("gram", [True, False])
def test_auto_nu_reads_the_kernel_matrix_as_libsvm_evaluates_it(cancer, kernel, weighted, gram):
    """``nu="auto"``'s SVCs take one kernel matrix of the largest subsample's rows (or, past
    ``DENSE_GRAM_VALUES``, libsvm's own kernel): the nu of libsvm evaluating the kernel itself
    on the same rows to rounding; from the matrix, the same nu to the bit for dense and CSR
    copies of the rows (libsvm's own sparse and dense kernels round differently)."""
    X, y = cancer
    X = np.where(np.abs(X / X.std(axis=0)) < 0.5, 0.0, X / X.std(axis=0)).astype(np.float32)
    csr, target = sp.csr_matrix(X), np.where(y == 1, 1.0, -1.0)
    weights = np.random.default_rng(0).random(y.size) + 0.5 if weighted else None
    if gram:
        everything = [np.arange(y.size)]
        with ThreadPoolExecutor(1) as pool:
            got, dense = (_sbp_defaults._gram_nus(rows, everything, target, weights, 0.05, kernel, pool)[0]
                          for rows in (csr, X))
    else:
        got = _sbp_defaults._svm_nu(csr, target, weights, 0.05, kernel)
        dense = _sbp_defaults._svm_nu(X, target, weights, 0.05, kernel)
    assert dense == got if gram else dense == pytest.approx(got, rel=1e-12)
    svc = SVC(C=1.0, kernel=kernel, gamma=0.05).fit(csr.astype(np.float64), target, sample_weight=weights)
    assert got == pytest.approx(_svm_nu.nu_of_svm(svc, csr.astype(np.float64), target, weights), rel=1e-9)


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_nested_subsamples_read_their_block_of_the_one_kernel_matrix(cancer, kernel):
    """Each nested part's nu from its block of the largest part's matrix is its own matrix's
    (the block's rows found by position in the largest part)."""
    X, y = cancer
    X = (X / X.std(axis=0)).astype(np.float32)
    target = np.where(y == 1, 1.0, -1.0)
    rows = np.random.default_rng(3).permutation(y.size)[:400]
    parts = [np.sort(rows[:m]) for m in (100, 200, 400)]
    with ThreadPoolExecutor(2) as pool:
        got = _sbp_defaults._gram_nus(X, parts, target, None, 0.05, kernel, pool)
    for part, nu in zip(parts, got):
        A = X[part].astype(np.float64)
        want = _svm_nu.nu_of_kernel_svm(_svm_nu.kernel_matrix(A, A, kernel, 0.05), target[part])
        assert nu == pytest.approx(want, rel=1e-9)
    assert len(set(got)) == 3


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"nu": 0.0}, ValueError, "`nu` must be .auto. or a positive"),
        ({"kernel": "poly"}, ValueError, "`kernel` must be one of"),
        ({"bias": "yes"}, TypeError, "`bias` must be True or False"),
        ({"n_iter": 0}, ValueError, "`n_iter` must be an integer >= 1"),
        ({"batch_size": 0}, ValueError, "`batch_size` must be an integer >= 1"),
        ({"gamma": -1.0}, ValueError, "`gamma` must be"),
        ({"callback": 3}, TypeError, "`callback` must be callable"),
    ],
)
def test_bad_input(cancer, kwargs, error, match):
    X, y = cancer
    args = {"nu": 0.1, "n_iter": 2}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        sbp.fit(X, y, **args)


def test_one_class_is_rejected(cancer):
    X, _ = cancer
    with pytest.raises(ValueError, match="only one class"):
        sbp.fit(X, np.ones(len(X)), nu=0.1)
