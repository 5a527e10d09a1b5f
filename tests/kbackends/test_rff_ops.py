"""The RFF ops: every implementation against the xp oracle, the kernel
approximation they exist for, and clear errors for bad input."""

import numpy as np
import pytest

from kbackends import get_kernel, ops
from kbackends.random import omega_block
from kbackends.testing import TOLERANCE, assert_matches_oracle, host, on, oracle

# (n_samples, n_features, n_dims): empty, single, odd, past one row tile (64 rows: the numba
# tile and the cuda weighted sum's rows a thread) and one 32-column block, a partial one after each.
SIZES = [(0, 5, 3), (1, 1, 1), (7, 5, 3), (67, 33, 4)]
FORMS = ["cos", "cossin"]


def _problem(dtype_name, n, m, d, seed=0, x_scale=1.0):
    rng = np.random.default_rng(seed)
    X = (x_scale * rng.standard_normal((n, d))).astype(dtype_name)
    omega, phase = omega_block(seed, 0, m, d, gamma=0.5, dtype=dtype_name)
    return X, np.asarray(omega), np.asarray(phase), rng


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("n, m, d", SIZES)
def test_features_match_oracle(backend, dtype_name, form, n, m, d):
    X, omega, phase, _ = _problem(dtype_name, n, m, d)
    (got,) = assert_matches_oracle("rff_features", X, omega, phase, backend=backend, form=form)
    assert got.shape == (n, m * (1 if form == "cos" else 2))


@pytest.mark.parametrize("n_targets", [None, 1, 3])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("n, m, d", SIZES)
def test_predict_matches_oracle(backend, dtype_name, form, n, m, d, n_targets):
    X, omega, phase, rng = _problem(dtype_name, n, m, d)
    n_out = m * (1 if form == "cos" else 2)
    shape = (n_out,) if n_targets is None else (n_out, n_targets)
    coef = rng.standard_normal(shape).astype(dtype_name)
    (got,) = assert_matches_oracle("rff_predict", X, omega, phase, coef, backend=backend, form=form,
                                   scale=np.abs(coef).sum())
    assert got.shape == (n,) + shape[1:]


@pytest.mark.parametrize("n_targets", [1, 5])  # 5 > the cuda kernel's group of 4
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("n, m, d", SIZES)
def test_predict_add_matches_oracle(backend, dtype_name, form, n, m, d, n_targets):
    """The engine's cache update (a registered kernel, no public op): ``f * shrink + rff_predict``."""
    X, omega, phase, rng = _problem(dtype_name, n, m, d)
    coef = rng.standard_normal((m * (1 if form == "cos" else 2), n_targets)).astype(dtype_name)
    f = rng.standard_normal((n, n_targets)).astype(dtype_name)
    kw = {"form": form, "shrink": 0.75}
    want = oracle("rff_predict_add")(X, omega, phase, coef, f, xp=np, **kw)
    got = get_kernel("rff_predict_add", backend)(*(on(backend, a) for a in (X, omega, phase, coef, f)),
                                                 xp=backend.xp, **kw)
    assert got.shape == (n, n_targets) and host(got).dtype == np.dtype(dtype_name)
    np.testing.assert_allclose(host(got), want, rtol=0, atol=TOLERANCE[dtype_name] * (np.abs(coef).sum() + 1))


@pytest.mark.parametrize("n_targets", [None, 2, 9])  # 9: more than two of the cuda kernel's groups of 4
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("n, m, d", SIZES)
def test_weighted_sum_matches_oracle(backend, dtype_name, form, n, m, d, n_targets):
    X, omega, phase, rng = _problem(dtype_name, n, m, d)
    shape = (n,) if n_targets is None else (n_targets, n)
    g = rng.standard_normal(shape).astype(dtype_name)
    (got,) = assert_matches_oracle("rff_weighted_sum", X, omega, phase, g, backend=backend, form=form,
                                   scale=max(1.0, np.abs(g).sum()))
    n_out = m * (1 if form == "cos" else 2)
    assert got.shape == shape[:-1] + (n_out,)


@pytest.mark.parametrize("form", FORMS)
def test_large_arguments_keep_accuracy(backend, dtype_name, form):
    """Arguments of cos in the thousands (wide data, large gamma): the range
    reduction of the fast float32 cosine must hold."""
    X, omega, phase, _ = _problem(dtype_name, 40, 16, 3, x_scale=300.0)
    got = ops.rff_features(*(on(backend, a) for a in (X, omega, phase)), form=form)
    Z = X.astype(np.float64) @ omega.astype(np.float64).T
    expected = np.cos(Z + phase) if form == "cos" else np.hstack([np.cos(Z), np.sin(Z)])
    # float32 rounding of an argument of size |Z| moves cos by up to |Z| * 2**-24.
    arg_eps = np.finfo(dtype_name).eps * (np.abs(Z).max() + 2 * np.pi) * 8
    np.testing.assert_allclose(host(got), expected, rtol=0, atol=arg_eps + 1e-6)


@pytest.mark.parametrize("kernel, exact", [
    ("rbf", lambda A, B, g: np.exp(-g * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))),
    ("laplacian", lambda A, B, g: np.exp(-g * np.abs(A[:, None, :] - B[None, :, :]).sum(-1))),
])
@pytest.mark.parametrize("form", FORMS)
def test_features_approximate_the_kernel(kernel, exact, form):
    """Monte-Carlo error of the kernel estimate shrinks like 1/sqrt(m)."""
    rng = np.random.default_rng(1)
    A = rng.standard_normal((20, 4)) * 0.5
    gamma = 0.4
    K = exact(A, A, gamma)
    errors = []
    for m in (64, 4096):
        omega, phase = omega_block(11, 0, m, 4, kernel=kernel, gamma=gamma)
        F = ops.rff_features(A, omega, phase, form=form)
        K_hat = F @ F.T * ((2.0 if form == "cos" else 1.0) / m)
        errors.append(np.abs(K_hat - K).max())
    assert errors[1] < 0.08
    assert errors[1] < errors[0] / 3  # sqrt(4096 / 64) = 8 in expectation


class TestBadInput:
    def setup_method(self):
        self.X, self.omega, self.phase, _ = _problem("float64", 5, 4, 3)

    def test_nan_in_X(self):
        X = self.X.copy()
        X[2, 1] = np.nan
        with pytest.raises(ValueError, match="`X` contains NaN or infinite values"):
            ops.rff_predict(X, self.omega, self.phase, np.ones(4))

    def test_inf_in_coef(self):
        with pytest.raises(ValueError, match="`coef` contains NaN"):
            ops.rff_predict(self.X, self.omega, self.phase, np.full(4, np.inf))

    def test_check_finite_off_skips_the_scan(self):
        X = self.X.copy()
        X[0, 0] = np.nan
        out = ops.rff_predict(X, self.omega, self.phase, np.ones(4), check_finite=False)
        assert np.isnan(out[0]) and np.all(np.isfinite(out[1:]))

    def test_wrong_ndim(self):
        with pytest.raises(ValueError, match=r"`X` must be 2-D, got ndim=1"):
            ops.rff_features(self.X[0], self.omega, self.phase)

    def test_mismatched_dims(self):
        with pytest.raises(ValueError, match="`omega` has 3 columns but `X` has 2"):
            ops.rff_features(self.X[:, :2], self.omega, self.phase)

    def test_mismatched_phase(self):
        with pytest.raises(ValueError, match="`phase` has 3 entries but `omega` has 4 rows"):
            ops.rff_features(self.X, self.omega, self.phase[:3])

    def test_wrong_coef_length(self):
        with pytest.raises(ValueError, match=r"`coef` must have shape \(8,\) or \(8, n_targets\)"):
            ops.rff_predict(self.X, self.omega, self.phase, np.ones(4), form="cossin")

    def test_wrong_g_length(self):
        with pytest.raises(ValueError, match=r"`g` must have shape \(5,\)"):
            ops.rff_weighted_sum(self.X, self.omega, self.phase, np.ones(4))

    def test_int_dtype(self):
        with pytest.raises(TypeError, match="`X` must have a float32 or float64 dtype"):
            ops.rff_features(self.X.astype(np.int64), self.omega, self.phase)

    def test_mixed_float_dtypes(self):
        with pytest.raises(TypeError, match="`omega` has dtype float32 but `X` has float64"):
            ops.rff_features(self.X, self.omega.astype(np.float32), self.phase)

    def test_unknown_form(self):
        with pytest.raises(ValueError, match="`form` must be one of"):
            ops.rff_features(self.X, self.omega, self.phase, form="sin")

    def test_mixed_devices(self):
        import array_api_strict

        with pytest.raises(ValueError, match="Input arrays use different devices"):
            ops.rff_features(array_api_strict.asarray(self.X), self.omega, self.phase)


from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(0, 70),
    m=st.integers(1, 40),
    d=st.integers(1, 9),
    k=st.integers(1, 3),
    form=st.sampled_from(FORMS),
    scale=st.sampled_from([1e-3, 1.0, 30.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_cpu_kernels_match_oracle_on_random_shapes(n, m, d, k, form, scale, seed):
    """Property: for any shape and argument scale, numba == xp reference (float64)."""
    X, omega, phase, rng = _problem("float64", n, m, d, seed=seed % 1000, x_scale=scale)
    n_out = m * (1 if form == "cos" else 2)
    coef = rng.standard_normal((n_out, k))
    g = rng.standard_normal((k, n))
    assert_matches_oracle("rff_predict", X, omega, phase, coef, backend="cpu", form=form, scale=np.abs(coef).sum())
    assert_matches_oracle("rff_weighted_sum", X, omega, phase, g, backend="cpu", form=form,
                          scale=max(1.0, np.abs(g).sum()))
