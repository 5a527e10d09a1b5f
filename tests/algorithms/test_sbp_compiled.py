"""The cpu engine's compiled SBP run (``sbp_run``): every iteration's warm-started
two-basin level against the sort-based reference on the responses it was computed
from, and each iteration's draw, bookkeeping, update and average against the
array-API steps and the ``kernel_response_update`` kernel on the same state."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit

import algorithms.sbp  # noqa: F401  (registers the kernels)
from algorithms import sbp
from algorithms.sbp._kernels import _numba as numba_run
from algorithms.sbp._kernels._numba import DRAW_CHUNK, _draw
from kbackends import get_kernel, resolve
from kbackends.kernel_tools import WARM_STATE, binary_rows, biased_level_warm, warm_bands, warm_follow
from kbackends.testing import oracle

THRESHOLD = 1e-6


def _data(n, d, dtype, seed, sparse):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(dtype)
    if sparse:
        X = sp.csr_matrix(np.where(rng.random((n, d)) < 0.7, X, 0).astype(dtype))
    Y = np.where(X[:, 0].toarray().ravel() if sparse else X[:, 0] > 0, 1.0, -1.0).astype(dtype)
    Y[rng.random(n) < 0.1] *= -1  # label noise: some rows stay under water
    return X, Y


def _sq_norms(X, dtype):
    return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel().astype(dtype)


def _fresh_state(n, n_iter, dtype):
    """A run's state before its first iteration (responses, averages, scalars with s = 1,
    an empty warm state, logs) and its uniforms."""
    scalars = np.array([1.0, 0.0, 0.0, 0.0, 0.0])
    return (np.zeros(n, dtype=dtype), np.zeros(n), scalars, np.zeros(WARM_STATE), np.zeros(n_iter, dtype=np.int64),
            np.zeros(n_iter), np.random.default_rng(1).random(n_iter))


def _iterations(X, Y, dtype, *, n_iter, eta0, volume, gamma):
    """Runs ``sbp_run`` one iteration a call; yields the state before and after and the
    level it used."""
    cpu = resolve("cpu")
    run = get_kernel("sbp_run", cpu)
    n = Y.shape[0]
    C, C_bar, scalars, warm, idx_log, s_log, uniforms = _fresh_state(n, n_iter, dtype)
    extra = {"sq_norms": _sq_norms(X, dtype)} if sp.issparse(X) else {}
    for t in range(n_iter):
        before = (C.copy(), C_bar.copy(), scalars.copy())
        run(X, Y, C, C_bar, np.ones(n), uniforms[t:t + 1], scalars, idx_log, s_log, warm, xp=np, t0=t, eta0=eta0,
            volume=volume, kernel_code=0, gamma=gamma, renormalise_below=THRESHOLD, **extra)
        yield t + 1, before, (C, C_bar, scalars, idx_log[t], s_log[t]), uniforms[t], warm


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("kernel_gamma", [0.5, 0.02])  # 0.02: every row near 1, each basin shifts as one (a9a's "scale")
def test_every_level_matches_the_sort_based_reference(dtype, sparse, kernel_gamma):
    X, Y = _data(600, 5, dtype, 0, sparse)
    reference = oracle("water_level_biased")
    warm_calls = 0
    for t, (C, _, scalars), (_, _, after, _, _), _, warm in _iterations(
            X, Y, dtype, n_iter=300, eta0=0.05, volume=6.0, gamma=kernel_gamma):
        gamma, b = reference(C.astype(np.float64), Y.astype(np.float64), 6.0 / scalars[0], xp=np)
        # float64 sums of the same values in another order: a few ulps of the water's scale
        scale = 6.0 / scalars[0] + np.abs(C).max() * 8
        np.testing.assert_allclose(after[2], float(gamma), rtol=0, atol=16 * np.finfo(np.float64).eps * scale)
        np.testing.assert_allclose(after[3], float(b), rtol=0, atol=16 * np.finfo(np.float64).eps * scale)
        warm_calls += warm[5] == 1.0  # the band answered (warm state: ..., valid, answered)
    assert warm_calls > 250  # most levels came from the band that followed the heights


@pytest.mark.parametrize("n", [2000, 2003])  # the band pass reads its marks eight at a time: a short last word
def test_levels_equal_the_reference_exactly_where_it_is_exact(n):
    """Heights on a dyadic grid (every sum exact in float64): the warm level is the
    reference's to the bit, iteration after iteration of moving heights."""
    from kbackends.kernel_tools import biased_level_warm
    from numba import njit

    @njit
    def level(c, y, n_pos, volume, state, band_p, band_n):
        return biased_level_warm(c, y, n_pos, volume, state, band_p, band_n)

    rng = np.random.default_rng(3)
    y, c, n_pos, state, band_p, band_n = _dyadic_heights(rng, n, 0.4, 4096)
    reference = oracle("water_level_biased")
    for _ in range(200):
        c = c + rng.integers(-8, 9, n) / 1024.0  # a small move of every height
        got = level(c, y, n_pos, 37.5, state, band_p, band_n)
        want = reference(c, y, 37.5, xp=np)
        assert got == (float(want[0]), float(want[1]))


@njit
def _followed_level(c, y, n_pos, volume, state, band_p, band_n, moves):
    """The warm level after ``c += moves``, its bands moved by ``warm_follow`` first as
    ``sbp_run``'s update moves them (``c`` in place)."""
    t_pos, d_pos, t_neg, d_neg = warm_bands(state)
    n_p = s_p = n_n = s_n = 0.0
    for i in range(c.shape[0]):
        if y[i] > 0 and abs(c[i] - t_pos) <= d_pos:
            n_p += 1.0
            s_p += moves[i]
        elif y[i] < 0 and abs(c[i] - t_neg) <= d_neg:
            n_n += 1.0
            s_n += moves[i]
        c[i] += moves[i]
    warm_follow(state, n_p, s_p, n_n, s_n)
    return biased_level_warm(c, y, n_pos, volume, state, band_p, band_n)


def test_followed_levels_equal_the_reference_exactly_under_coherent_shifts():
    """Each class shifted as one by a random amount far beyond its band (as a wide
    kernel row shifts it), on a dyadic grid where every sum is exact: the band that
    followed the heights answers nearly every call, to the bit of the reference."""
    rng = np.random.default_rng(4)
    y, c, n_pos, state, band_p, band_n = _dyadic_heights(rng, 4000, 0.3, 8192)
    n = y.size
    reference = oracle("water_level_biased")
    answered = 0
    for _ in range(200):
        shift = rng.choice([-1.0, 1.0]) * rng.integers(1024, 3072) / 1024.0  # 250-750 ranks: past any band
        moves = y * shift + rng.integers(-4, 5, n) / 1024.0
        got = _followed_level(c, y, n_pos, 52.0, state, band_p, band_n, moves)
        want = reference(c, y, 52.0, xp=np)
        assert got == (float(want[0]), float(want[1]))
        answered += state[5] == 1.0
    assert answered > 180


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sparse", [False, True])
def test_each_iteration_equals_the_array_steps(dtype, sparse):
    """The draw, the float64 bookkeeping and the logs exactly; the responses and the
    average as the ``kernel_response_update`` kernel and ``sbp_average`` compute them."""
    X, Y = _data(400, 6, dtype, 1, sparse)
    cpu = resolve("cpu")
    draw, average = oracle("sbp_draw_step"), oracle("sbp_average")
    respond = get_kernel("kernel_response_update", cpu)
    extra = {"sq_norms": _sq_norms(X, dtype)} if sparse else {}
    for t, (C, C_bar, scalars), (C1, C_bar1, scalars1, row, s_avg), u, _ in _iterations(
            X, Y, dtype, n_iter=150, eta0=1.0, volume=4.0, gamma=0.3):
        idx_out, s_out = np.zeros(1, dtype=np.int64), np.zeros(1)
        idx, w, scale, s_next, r2, count = draw(
            C, Y, np.ones(Y.shape[0]), dtype(scalars1[2]), dtype(scalars1[3]), np.array([u]),
            scalars[:1].copy(), scalars[1:2].copy(), idx_out, s_out, xp=np, step=1.0 / np.sqrt(t),
            renormalise_below=THRESHOLD)
        assert (int(idx[0]), int(count[0])) == (row, int(scalars1[4]))
        assert (float(s_out[0]), float(r2[0]), float(s_next[0])) == (s_avg, scalars1[1], scalars1[0])
        c = respond(X, idx, w, Y, C, xp=np, kernel="rbf", gamma=0.3, **extra)
        c_bar, c = average(C_bar, c, scale, xp=np, renormalise_below=THRESHOLD)
        tol = 64 * np.finfo(dtype).eps
        np.testing.assert_allclose(C1, c, rtol=tol, atol=tol)
        np.testing.assert_allclose(C_bar1, c_bar, rtol=1e-6, atol=1e-6 * t)


@pytest.mark.parametrize("sparse", [False, True, "binary"])
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("n, d", [(2 * numba_run.UPDATE_CHUNK + 500, 7), (1500, 600)])  # short rows; long rows
def test_the_model_does_not_depend_on_the_threads(sparse, kernel, n, d):
    """The update runs as tasks of rows on every core (``UPDATE_CHUNK`` short rows, fewer
    long ones), each row's value computed as one thread computes it and the tasks' sums
    added in task order: one thread and all of them give the same model to the bit (three
    tasks and six here)."""
    X, Y = _data(n, d, np.float64, 2, bool(sparse))
    if sparse == "binary":  # the rows' bits
        X.data[:] = 1.0
    models = []
    before = numba.get_num_threads()
    try:
        for threads in (1, before):
            numba.set_num_threads(threads)
            models.append(sbp.fit(X, Y, nu=0.1, kernel=kernel, n_iter=300, random_state=0))
    finally:
        numba.set_num_threads(before)
    one, many = models
    np.testing.assert_array_equal(one.coef, many.coef)
    np.testing.assert_array_equal(one.intercept, many.intercept)
    assert one.params["levels"] == many.params["levels"]


def _dyadic_heights(rng, n, positive, span):
    """Labels (a ``positive`` share of +1), heights on a grid of 1/1024 in [-span, span) / 1024
    (every sum exact in float64), the positives' count and an empty warm state with its bands."""
    y = np.where(rng.random(n) < positive, 1.0, -1.0)
    c = rng.integers(-span, span, n) / 1024.0
    return y, c, int(np.sum(y > 0)), np.zeros(WARM_STATE), np.empty(n), np.empty(n)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_draw_finds_each_rank_across_its_chunks(dtype):
    """The draw's chunked search (counts a chunk at a time, walks only the chunk that
    holds the rank) returns the same row as a plain search of the heights under the
    water, for ranks in every chunk, the last row, and the case where no height is
    strictly under the level (the rows at it, ties included)."""
    rng = np.random.default_rng(3)
    n = 4 * DRAW_CHUNK + 37  # a last chunk shorter than the others
    C = rng.normal(size=n).astype(dtype)
    Y = np.where(rng.random(n) < 0.3, 1.0, -1.0).astype(dtype)
    b = dtype(0.25)
    heights = C + b * Y
    cases = [(dtype(0.1), True), (dtype(heights.max()) + dtype(1), True)]  # some rows / every row under
    C_low = C.copy()
    C_low[[5, DRAW_CHUNK + 3, n - 1]] = -10.0  # three rows tie at the minimum height
    for g, strict in cases:
        under = np.flatnonzero(heights < g)
        for u in [0.0, 0.2, 0.5, 0.77, (under.size - 1) / under.size, np.nextafter(1.0, 0.0)]:
            row, count = _draw(C, Y, g, b, u)
            assert count == under.size
            assert row == under[min(int(u * under.size), under.size - 1)]
    for y_sign in (1.0, -1.0):  # the level at the tied minimum: no height strictly under it
        Y_tie = Y.copy()
        Y_tie[[5, DRAW_CHUNK + 3, n - 1]] = y_sign
        g = dtype(-10.0) + b * dtype(y_sign)
        h = C_low + b * Y_tie
        at = np.flatnonzero(h <= g)
        assert not np.any(h < g) and at.size >= 3
        for u in [0.0, 0.4, 0.99]:
            row, count = _draw(C_low, Y_tie, g, b, u)
            assert (row, count) == (at[min(int(u * at.size), at.size - 1)], at.size)


def _run_state(X, Y, dtype, kernel_code, gamma, pack, monkeypatch, n_iter=400, calls=2, renormalise_below=0.8):
    """The state after ``n_iter`` iterations of ``sbp_run`` in ``calls`` calls, binary rows
    packed as bits or not (``PACK_FROM``); a high ``renormalise_below`` renormalises often."""
    monkeypatch.setattr(numba_run, "PACK_FROM", 1 if pack else 10 ** 9)
    n = Y.shape[0]
    C, C_bar, scalars, warm, idx_log, s_log, uniforms = _fresh_state(n, n_iter, dtype)
    self_k = np.ones(n) if kernel_code == 0 else np.asarray(X.sum(axis=1), dtype=np.float64).ravel()
    extra = {"sq_norms": _sq_norms(X, dtype)} if sp.issparse(X) else {}
    step = n_iter // calls
    for t0 in range(0, n_iter, step):
        get_kernel("sbp_run", resolve("cpu"))(
            X, Y, C, C_bar, self_k, uniforms[t0:t0 + step], scalars, idx_log, s_log, warm, xp=np, t0=t0,
            eta0=1.0 / np.sqrt(self_k.max()), volume=0.05 * n, kernel_code=kernel_code, gamma=gamma,
            renormalise_below=renormalise_below, **extra)
    return C, C_bar, scalars, idx_log, s_log, warm


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel_code", [0, 1])
@pytest.mark.parametrize("dense", [False, True])
def test_binary_rows_as_bits_give_the_sparse_run_to_the_bit(dtype, kernel_code, dense, monkeypatch):
    """Rows of ones and zeros (one-hot categories, as a9a's), CSR or dense: the run on their
    bits (popcounts, the kernel's values from a table of squared distances) leaves every
    array of the state exactly as the sparse or dense product does, over renormalisations
    and cold levels. The warm level's state (where the bands sit) to a few ulps: its sums are
    SIMD reductions, and a kernel loaded from Numba's cache sums them in another order than
    the same kernel compiled in the process (one ulp, measured; the levels and the model do
    not depend on it)."""
    rng = np.random.default_rng(5)
    n, d = 2 * numba_run.UPDATE_CHUNK + 100, 150  # three tasks of the update; three words a row, ~20 ones
    X = sp.csr_matrix((rng.random((n, d)) < 0.13).astype(dtype))
    Y = np.where(np.asarray(X[:, :5].sum(axis=1)).ravel() > 0.5, 1.0, -1.0).astype(dtype)
    if dense:
        X = X.toarray()
    assert binary_rows(X) is not None
    gamma = 0.05 if kernel_code == 0 else 1.0
    bits = _run_state(X, Y, dtype, kernel_code, gamma, True, monkeypatch)
    gathers = _run_state(X, Y, dtype, kernel_code, gamma, False, monkeypatch)
    for got, want in zip(bits[:5], gathers[:5]):
        np.testing.assert_array_equal(got, want)
    # surfaces and half-widths: ulps of the surfaces' scale (a half-width is a difference of heights)
    ulp = np.finfo(np.float64).eps * np.abs(gathers[5][:4]).max()
    np.testing.assert_allclose(bits[5], gathers[5], rtol=0, atol=4 * ulp)
    assert np.unique(bits[3]).size > 100  # the draws went round the data
    assert np.sum(bits[4] < 0.8) >= 3  # renormalisations (each followed by a cold level)


@pytest.mark.parametrize("n_out, batch", [(1, 1), (3, 4)])
def test_the_compiled_replay_is_the_reference_to_the_bit(n_out, batch):
    """The averaged coefficients replayed from a log by the compiled loop and by the
    NumPy reference: the same float64 operations in the same order, renormalisations
    (one class's scale below the threshold flushes every class) included."""
    rng = np.random.default_rng(6)
    T, n = 3000, 700
    idx_log = rng.integers(0, n, (T, n_out, batch))
    s_log = np.exp(-3.0 * rng.random((T, n_out)))
    s_log[rng.choice(T, 25, replace=False), rng.integers(0, n_out, 25)] = 1e-9
    kw = dict(xp=np, n=n, eta0=0.7, batch_size=batch, renormalise_below=THRESHOLD)
    got = get_kernel("sbp_replay", resolve("cpu"))(idx_log, s_log, **kw)
    want = oracle("sbp_replay")(idx_log, s_log, **kw)
    assert got.shape == (n_out, n)
    np.testing.assert_array_equal(got, want)


def test_binary_rows_are_packed_once_a_fit_and_a_callback_keeps_the_model(monkeypatch):
    """A callback makes the loop call the run once an iteration: the rows' bits are packed
    on the first call and kept for the fit, and the model is the one without a callback."""
    X, Y = _data(700, 40, np.float32, 7, True)
    X.data[:] = 1.0
    packs = []
    monkeypatch.setattr(numba_run, "binary_rows", lambda X: packs.append(1) or binary_rows(X))
    seen = []
    stepped = sbp.fit(X, Y, nu=0.1, n_iter=120, random_state=0, callback=lambda info: seen.append(info) and False)
    assert len(seen) == 120 and len(packs) == 1
    whole = sbp.fit(X, Y, nu=0.1, n_iter=120, random_state=0)
    np.testing.assert_array_equal(stepped.coef, whole.coef)
    assert stepped.params["levels"] == whole.params["levels"]
