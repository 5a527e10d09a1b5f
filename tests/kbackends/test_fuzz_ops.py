"""Fuzz suite (issue 16, deliverable 5): the public kbackends ops and
``kbackends.random.omega_block`` on arbitrary shapes, dtypes, scales and argument values.

Each call either returns finite arrays of the documented shape, or raises
ValueError / TypeError whose message names an argument in backticks. Reproducible
(``derandomize=True``), tiny arrays: ``N_OP`` examples per op.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbackends import ops
from kbackends.random import omega_block

pytestmark = pytest.mark.fuzz

N_OP = 40  # examples per op
SETTINGS = settings(max_examples=N_OP, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))

DTYPES = ["float64", "float32", "float16", "int64", "bool", "object", "complex128"]
# weighted towards the dtypes the ops take, so that shapes and values get exercised too
DTYPE_WEIGHTS = ["float64", "float32", "float64", "float32"] + DTYPES
SCALES = [1.0, 1e-30, 1e-7, 1e7, 1e20, 1e30]
BAD_SCALARS = [-1, 0, 0.5, 1e300, float("nan"), float("inf"), True, None, "x", [1], 2**64, np.int64(2),
               np.float32(0.5), 1j]


@st.composite
def arrays(draw, shape, dtype=None, scale=True, special=True):
    dtype = dtype or draw(st.sampled_from(DTYPE_WEIGHTS))
    scale = draw(st.sampled_from(SCALES)) if scale else 1.0
    special = draw(st.sampled_from([None, None, "nan", "inf"])) if special else None
    seed = draw(st.integers(0, 2**16))
    a = np.random.default_rng(seed).standard_normal(shape) * scale
    if special and a.size:
        a.flat[seed % a.size] = float(special)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return a.astype(object) if dtype == "object" else a.astype(dtype)


dims = st.sampled_from([0, 1, 2, 5])
same_dtype = st.sampled_from(["float64", "float32"])


def check_call(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    except (ValueError, TypeError) as exc:
        assert "`" in str(exc), f"{type(exc).__name__} names no argument: {exc}"
        return None


def finite(a, shape=None):
    a = np.asarray(a)
    if shape is not None:
        assert a.shape == tuple(shape), (a.shape, shape)
    if np.issubdtype(a.dtype, np.inexact):
        assert np.all(np.isfinite(a)), a
    return a


@st.composite
def rff_args(draw):
    n, d, m = draw(dims), draw(dims), draw(dims)
    dt = draw(st.sampled_from(DTYPE_WEIGHTS))
    X = draw(arrays((n, draw(st.sampled_from([d, d + 1]))), dtype=dt))
    omega = draw(arrays((m, d), dtype=draw(st.sampled_from([dt, "float64", "float32"])), scale=False, special=False))
    phase = draw(arrays((draw(st.sampled_from([m, m + 1])),), dtype=dt, scale=False, special=False))
    return X, omega, phase, draw(st.sampled_from(["cos", "cossin", "sin", None, 1]))


@SETTINGS
@given(args=rff_args(), which=st.sampled_from(["features", "predict", "weighted_sum"]), extra=st.data())
def test_rff_ops(args, which, extra):
    X, omega, phase, form = args
    n, m = X.shape[0], omega.shape[0]
    width = 2 * m if form == "cossin" else m
    if which == "features":
        out = check_call(lambda: ops.rff_features(X, omega, phase, form=form))
        if out is not None:
            finite(out, (n, width))
            assert out.dtype == X.dtype
    elif which == "predict":
        coef = extra.draw(arrays((width,) if extra.draw(st.booleans()) else (width, 2), dtype=str(X.dtype)
                                 if X.dtype != object else "float64", scale=False))
        out = check_call(lambda: ops.rff_predict(X, omega, phase, coef, form=form))
        if out is not None:
            finite(out, (n,) + coef.shape[1:])
    else:
        g = extra.draw(arrays((extra.draw(st.sampled_from([n, n + 1])),), dtype=str(X.dtype)
                              if X.dtype != object else "float64", scale=False))
        out = check_call(lambda: ops.rff_weighted_sum(X, omega, phase, g, form=form))
        if out is not None:
            finite(out, (width,))


@SETTINGS
@given(n=dims, dt=same_dtype, c_scale=st.booleans(), volume=st.sampled_from(BAD_SCALARS + [2.0, 1e-30]),
       segmented=st.booleans(), data=st.data())
def test_water_level(n, dt, c_scale, volume, segmented, data):
    c = data.draw(arrays((n,), dtype=data.draw(st.sampled_from([dt] + DTYPES)), scale=c_scale))
    segments = None
    if segmented:
        segments = data.draw(st.sampled_from([np.array([0, n]), np.array([0, n // 2, n]), np.array([0]),
                                              np.array([n, 0]), np.array([0.0, n]), [0, n]]))
        if isinstance(volume, float) and np.isfinite(volume) and volume >= 0:
            volume = np.full(max(len(segments) - 1, 0), volume, dtype=dt)
    out = check_call(lambda: ops.water_level(c, volume, segments=segments))
    if out is not None:
        finite(out, () if segments is None else (len(segments) - 1,))


@SETTINGS
@given(n=dims, dt=same_dtype, volume=st.sampled_from(BAD_SCALARS + [2.0]), data=st.data(),
       ykind=st.sampled_from(["pm1", "01", "one", "nan", "float", "short"]))
def test_water_level_biased(n, dt, volume, data, ykind):
    c = data.draw(arrays((n,), dtype=data.draw(st.sampled_from([dt] + DTYPES))))
    y = {"pm1": np.where(np.arange(n) % 2, 1.0, -1.0), "01": (np.arange(n) % 2).astype(float),
         "one": np.ones(n), "nan": np.full(n, np.nan), "float": np.linspace(-1, 1, n),
         "short": np.ones(max(n - 1, 0))}[ykind].astype(dt)
    out = check_call(lambda: ops.water_level_biased(c, y, volume))
    if out is not None:
        for a in out:
            finite(a, ())


@SETTINGS
@given(n=dims, d=dims, dt=same_dtype, data=st.data(),
       kernel=st.sampled_from(["rbf", "linear"] * 3 + ["poly", None]),
       gamma=st.sampled_from(BAD_SCALARS + [1.0] * 10))  # valid arguments often enough to reach the labels
def test_kernel_response_update(n, d, dt, data, kernel, gamma):
    X = data.draw(arrays((n, d), dtype=data.draw(st.sampled_from([dt] * 6 + DTYPES))))
    m = data.draw(st.sampled_from([0, 1, 2]))
    idx = data.draw(st.sampled_from([np.arange(m) % max(n, 1), np.full(m, n), np.full(m, -1),
                                     np.arange(m, dtype=float)]))
    coef = data.draw(arrays((m,), dtype=dt, scale=False))
    y = np.where(np.arange(n) % 2, 1.0, -1.0).astype(dt)
    if data.draw(st.booleans()) and n:
        y[0] = data.draw(st.sampled_from([np.nan, 0.0, 2.0]))
    c = data.draw(arrays((n,), dtype=dt, scale=False))
    out = check_call(lambda: ops.kernel_response_update(X, idx, coef, y, c, kernel=kernel, gamma=gamma))
    if out is not None:
        finite(out, (n,))


@SETTINGS
@given(n=dims, d=dims, data=st.data(), k=st.sampled_from(BAD_SCALARS + [1, 2, 3]),
       n_iter=st.sampled_from([0, 1, 3, -1, 2.5, None, True]))
def test_kmeans_and_snap(n, d, data, k, n_iter):
    X = data.draw(arrays((n, d)))
    centers = check_call(lambda: ops.kmeans(X, k, n_iter=n_iter, random_state=0))
    if centers is not None:
        finite(centers, (k, d))
        idx = check_call(lambda: ops.snap_to_samples(centers, X))
        if idx is not None:
            idx = finite(idx, (k,))
            assert np.all((idx >= 0) & (idx < n))
    other = data.draw(arrays((data.draw(st.sampled_from([0, 1, 3])), d)))
    idx = check_call(lambda: ops.snap_to_samples(other, X))
    if idx is not None:
        idx = finite(idx, (other.shape[0],))
        assert np.all((idx >= 0) & (idx < n))


@SETTINGS
@given(n=dims, d=dims, m=dims, data=st.data(), k=st.sampled_from(BAD_SCALARS + [1, 2]),
       eps=st.sampled_from(BAD_SCALARS + [1e-4]))
def test_anchor_graph(n, d, m, data, k, eps):
    dt = data.draw(st.sampled_from(DTYPE_WEIGHTS))
    X = data.draw(arrays((n, d), dtype=dt))
    anchors = data.draw(arrays((m, d), dtype=data.draw(st.sampled_from([dt, "float64"]))))
    out = check_call(lambda: ops.anchor_graph(X, anchors, k, eps=eps))
    if out is not None:
        indices, weights = out
        indices = finite(indices, (n, k))
        finite(weights, (n, k))
        assert np.all((indices >= 0) & (indices < m))


@SETTINGS
@given(n=dims, k=st.sampled_from([0, 1, 2]), m=st.sampled_from([0, 1, 3]), data=st.data(),
       n_anchors=st.sampled_from(BAD_SCALARS + [3]), q=st.sampled_from([None, 2]))
def test_anchor_propagate_and_accumulate(n, k, m, data, n_anchors, q):
    dt = data.draw(same_dtype)
    indices = data.draw(st.sampled_from([np.zeros((n, k), dtype=np.int64), np.full((n, k), m, dtype=np.int64),
                                         np.full((n, k), -1), np.zeros((n, k)), np.zeros((n,), dtype=np.int64)]))
    weights = data.draw(arrays((n, k), dtype=data.draw(st.sampled_from([dt] + DTYPES)), scale=False))
    values = data.draw(arrays((m,) if q is None else (m, q), dtype=dt))
    out = check_call(lambda: ops.anchor_propagate(indices, weights, values))
    if out is not None:
        finite(out, (n,) + values.shape[1:])
    rows = data.draw(arrays((n,) if q is None else (n, q), dtype=dt))
    out = check_call(lambda: ops.anchor_accumulate(indices, weights, rows, n_anchors))
    if out is not None:
        finite(out, (n_anchors,) + rows.shape[1:])


@SETTINGS
@given(seed=st.sampled_from([0, 1, -1, 2**64, 2**63, True, None, 1.5, "x", np.int64(3)]),
       block=st.sampled_from([0, 2, -1, 2**64, None, np.uint64(1)]),
       n_features=st.sampled_from([0, 1, 4, -1, 2.0, None, np.int64(2)]),
       n_dims=st.sampled_from([0, 1, 3, -2, "3"]),
       kernel=st.sampled_from(["rbf", "laplacian", "linear", None]),
       gamma=st.sampled_from(BAD_SCALARS + [1.0, 1e-30]),
       dtype=st.sampled_from([None, "float32", "float64", np.float16, "int64", 3]))
def test_omega_block(seed, block, n_features, n_dims, kernel, gamma, dtype):
    out = check_call(lambda: omega_block(seed, block, n_features, n_dims, kernel=kernel, gamma=gamma, dtype=dtype))
    if out is not None:
        omega, phase = out
        finite(omega, (int(n_features), int(n_dims)))
        finite(phase, (int(n_features),))


# --- regressions the fuzz found (each fixed by class in kbackends/ops/_checks.py) -----------------

REGRESSIONS = {
    # scalar arguments were passed to float(): complex / str / None gave a message naming nothing,
    # and gamma=inf was "positive"
    "volume complex": lambda: ops.water_level(np.ones(3), 1j),
    "volume str (biased)": lambda: ops.water_level_biased(np.ones(2), np.array([1.0, -1.0]), "x"),
    "gamma inf": lambda: ops.kernel_response_update(np.ones((2, 1)), np.array([0]), np.ones(1), np.ones(2),
                                                    np.ones(2), gamma=float("inf")),
    # labels of the SBP's update were not checked: NaN gave NaN responses, 0/1 wrong ones
    "y NaN": lambda: ops.kernel_response_update(np.ones((2, 1)), np.array([0]), np.ones(1), np.array([np.nan, 1.0]),
                                                np.ones(2)),
    "y 0/1": lambda: ops.kernel_response_update(np.ones((2, 1)), np.array([0]), np.ones(1), np.array([0.0, 1.0]),
                                                np.ones(2)),
    "eps None": lambda: ops.anchor_graph(np.ones((2, 1)), np.ones((1, 1)), 1, eps=None),
    # counts beyond the index range: "Maximum allowed dimension exceeded"
    "n_anchors 2**64": lambda: ops.anchor_accumulate(np.zeros((0, 0), dtype=np.int64), np.zeros((0, 0)),
                                                     np.zeros(0), 2**64),
}


@pytest.mark.parametrize("case", list(REGRESSIONS))
def test_regressions_name_the_argument(case):
    with pytest.raises((ValueError, TypeError), match="`"):
        REGRESSIONS[case]()


def test_numpy_integer_counts_are_counts():
    out = ops.anchor_accumulate(np.zeros((2, 1), dtype=np.int64), np.ones((2, 1)), np.ones(2), np.int64(2))
    assert out.shape == (2,) and float(out[0]) == 2.0


def test_water_level_volumes_as_a_list():
    levels = ops.water_level(np.array([0.0, 1.0, 3.0, 0.0, 1.0]), [2.0, 1.0], segments=np.array([0, 3, 5]))
    np.testing.assert_allclose(levels, [1.5, 1.0])
