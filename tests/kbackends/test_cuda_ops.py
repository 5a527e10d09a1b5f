"""The cuda ops over several row chunks, against their ``_xp`` oracles (NumPy).

Run under the simulator (``NUMBA_ENABLE_CUDASIM=1 python -m pytest -m cuda``) or
on a GPU. The chunk budget is shrunk so a few dozen rows cross several chunks:
the chunk seams, the in-place fused kernels on row slices and the chunk-order
accumulation are what these tests reach that the op tests (one chunk) do not.
Tolerances are relative to what is summed: cuBLAS sums in its own order.
"""

import os

import numpy as np
import pytest

import kbackends
from kbackends import launch_counts, launch_settings, ops, to_numpy
from kbackends.testing import kernel_module

launch = kernel_module(None, "cuda_launch")
from kbackends.random import omega_block

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
_GPU = not SIMULATOR and "cuda" in kbackends.available_backends()
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not (SIMULATOR or _GPU), reason="needs the simulator or a GPU")]

RTOL = {"float32": 2e-5, "float64": 1e-12}


@pytest.fixture
def bk():
    return kbackends.resolve("cudasim" if SIMULATOR else "cuda")


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(launch, "CHUNK_BYTES", 256)  # 256 bytes: a few rows a chunk


def _close(got, expected, dtype_name, scale):
    got = to_numpy(got)
    assert got.dtype == np.dtype(dtype_name)
    np.testing.assert_allclose(got, expected, rtol=0, atol=RTOL[dtype_name] * scale)


@pytest.fixture(params=[True, False], ids=["fused", "cublas"])
def fused(request):
    """Both product paths of the dense random-feature ops (kbackends.launch_settings(fused=...))."""
    with launch_settings(fused=request.param):
        yield request.param


@pytest.mark.parametrize("form", ["cos", "cossin"])
def test_rff_ops_over_chunks(bk, small_chunks, fused, dtype_name, form):
    _cuda, _xp = kernel_module("rff", "cuda"), kernel_module("rff", "xp")

    rng = np.random.default_rng(1)
    n, m, d = 29, 6, 3
    X = rng.standard_normal((n, d)).astype(dtype_name)
    omega, phase = (np.asarray(a) for a in omega_block(3, 0, m, d, gamma=0.7, dtype=dtype_name))
    n_out = m if form == "cos" else 2 * m
    coef = rng.standard_normal((n_out, 2)).astype(dtype_name)
    g = rng.standard_normal((3, n)).astype(dtype_name)
    assert launch.chunk_rows(n, 3 * m * X.itemsize) < n // 2  # several chunks indeed
    args = [bk.asarray(a) for a in (X, omega, phase)]
    kw = {"xp": bk.xp, "form": form}
    ref = {"xp": np, "form": form}
    _close(_cuda.rff_features(*args, **kw), _xp.rff_features(X, omega, phase, **ref), dtype_name, 1)
    _close(_cuda.rff_predict(*args, bk.asarray(coef), **kw), _xp.rff_predict(X, omega, phase, coef, **ref),
           dtype_name, np.abs(coef).sum())
    _close(_cuda.rff_predict(*args, bk.asarray(coef[:, 0]), **kw), _xp.rff_predict(X, omega, phase, coef[:, 0], **ref),
           dtype_name, np.abs(coef).sum())
    total = _cuda.rff_weighted_sum(*args, bk.asarray(g), **kw)
    _close(total, _xp.rff_weighted_sum(X, omega, phase, g, **ref), dtype_name, np.abs(g).sum())
    # chunk totals are added in chunk order, no atomics: the same bits again
    np.testing.assert_array_equal(to_numpy(_cuda.rff_weighted_sum(*args, bk.asarray(g), **kw)), to_numpy(total))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("form", ["cos", "cossin"])
def test_rff_predict_add_over_chunks(bk, small_chunks, fused, dtype_name, form, sparse):
    """The engine's cache update ``f * shrink + rff_predict(...)`` in one kernel call:
    the reference's values over several chunks, for one target and for more
    targets than one pass of the partial kernel holds; ``f`` is left as it was."""
    import scipy.sparse

    _cuda, _xp = kernel_module("rff", "cuda"), kernel_module("rff", "xp")
    rng = np.random.default_rng(5)
    n, m, d = 29, 6, 3
    X = rng.standard_normal((n, d)).astype(dtype_name)
    omega, phase = (np.asarray(a) for a in omega_block(4, 1, m, d, gamma=0.7, dtype=dtype_name))
    n_out = m if form == "cos" else 2 * m
    kw = {"xp": bk.xp, "form": form, "shrink": 0.9}
    Xd = ops.as_csr(ops.to_backend(scipy.sparse.csr_matrix(X), bk)) if sparse else bk.asarray(X)
    for k in (1, 5):
        coef = rng.standard_normal((n_out, k)).astype(dtype_name)
        f = rng.standard_normal((n, k)).astype(dtype_name)
        f_dev = bk.asarray(f)
        got = _cuda.rff_predict_add(Xd, bk.asarray(omega), bk.asarray(phase), bk.asarray(coef), f_dev, **kw)
        want = _xp.rff_predict_add(X, omega, phase, coef, f, xp=np, form=form, shrink=0.9)
        _close(got, want, dtype_name, np.abs(coef).sum() + np.abs(f).max())
        np.testing.assert_array_equal(to_numpy(f_dev), f)
    empty = _cuda.rff_predict_add(Xd, bk.asarray(omega[:0]), bk.asarray(phase[:0]), bk.asarray(coef[:0]), f_dev, **kw)
    _close(empty, f * np.float32(0.9) if dtype_name == "float32" else f * 0.9, dtype_name, 1)


@pytest.mark.parametrize("form", ["cos", "cossin"])
def test_fused_rff_ops_cover_segments_blocks_and_targets(bk, dtype_name, form, monkeypatch):
    """The fused kernels (features, prediction, weighted sum) past one segment of
    features, one block of rows, one block of threads and one group of targets, with
    rows and features that fill no block: the reference's values, the same bits on a
    second call, and the cuBLAS path's values (no product in memory is the only
    difference). 16 threads a block keep the simulator's idle threads few, and
    segments and row blocks of 32 its work small."""
    _cuda, _xp = kernel_module("rff", "cuda"), kernel_module("rff", "xp")
    fused = kernel_module("rff", "cuda_fused")
    for name, value in (("THREADS", 16), ("SEGMENT", 32), ("ROW_BLOCK", 32)):
        monkeypatch.setattr(fused, name, value)
    rng = np.random.default_rng(11)
    n, m, d, k = 70, 70, 5, fused.GROUP + 1
    R = fused.rows_per_thread(d, np.dtype(dtype_name).itemsize)
    assert R > 1 and n > fused.ROW_BLOCK and m > fused.SEGMENT and n > 16 * R and m > 16 * R
    X = rng.standard_normal((n, d)).astype(dtype_name)
    omega, phase = (np.asarray(a) for a in omega_block(2, 3, m, d, gamma=0.05, dtype=dtype_name))
    n_out = m if form == "cos" else 2 * m
    coef = rng.standard_normal((n_out, k)).astype(dtype_name)
    g = rng.standard_normal((k, n)).astype(dtype_name)
    args = [bk.asarray(a) for a in (X, omega, phase)]
    kw = {"xp": bk.xp, "form": form}
    factories = (fused.features_kernel, fused.predict_kernel, fused.weighted_kernel)
    before = [f.cache_info() for f in factories]
    features = _cuda.rff_features(*args, **kw)
    _close(features, _xp.rff_features(X, omega, phase, xp=np, form=form), dtype_name, 1)
    predicted = _cuda.rff_predict(*args, bk.asarray(coef), **kw)
    summed = _cuda.rff_weighted_sum(*args, bk.asarray(g), **kw)
    used = [f.cache_info() for f in factories]  # each op asked its fused factory for a kernel
    assert all(u.hits + u.misses > b.hits + b.misses for u, b in zip(used, before))
    _close(predicted, _xp.rff_predict(X, omega, phase, coef, xp=np, form=form), dtype_name, np.abs(coef).sum())
    _close(summed, _xp.rff_weighted_sum(X, omega, phase, g, xp=np, form=form), dtype_name, np.abs(g).sum())
    np.testing.assert_array_equal(to_numpy(_cuda.rff_predict(*args, bk.asarray(coef), **kw)), to_numpy(predicted))
    with launch_settings(fused=False):
        _close(features, to_numpy(_cuda.rff_features(*args, **kw)), dtype_name, 1)
        _close(predicted, to_numpy(_cuda.rff_predict(*args, bk.asarray(coef), **kw)), dtype_name,
               np.abs(coef).sum())
        _close(summed, to_numpy(_cuda.rff_weighted_sum(*args, bk.asarray(g), **kw)), dtype_name, np.abs(g).sum())


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_response_update_over_chunks(bk, small_chunks, dtype_name, kernel):
    _cuda, _xp = kernel_module("response", "cuda"), kernel_module("response", "xp")

    rng = np.random.default_rng(2)
    n, d = 31, 4
    X = rng.standard_normal((n, d)).astype(dtype_name)
    idx = rng.integers(0, n, 7)
    w = rng.standard_normal(7).astype(dtype_name)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0).astype(dtype_name)
    c = rng.standard_normal(n).astype(dtype_name)
    got = _cuda.kernel_response_update(*(bk.asarray(a) for a in (X, idx, w, y, c)), xp=bk.xp, kernel=kernel, gamma=0.4)
    expected = _xp.kernel_response_update(X, idx, w, y, c, xp=np, kernel=kernel, gamma=0.4)
    _close(got, expected, dtype_name, 1 + np.abs(w).sum() * (1 if kernel == "rbf" else 10 * d))


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize(("n", "d"), [(1, 1), (9, 40), (21, 5)])
def test_one_row_response_in_one_launch(bk, dtype_name, kernel, n, d, monkeypatch):
    """Batch 1 (SBP's default iteration): one warp a row (32 lanes here, also under the
    simulator, which reads the width when it runs), the row read on the device, with the
    rows' squared norms given or not; against the reference's general path."""
    _cuda, _xp = kernel_module("response", "cuda"), kernel_module("response", "xp")
    monkeypatch.setattr(_cuda, "_WARP", 32)
    rng = np.random.default_rng(n + d)
    X = rng.standard_normal((n, d)).astype(dtype_name)
    idx, w = np.array([n // 2]), rng.standard_normal(1).astype(dtype_name)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0).astype(dtype_name)
    c = rng.standard_normal(n).astype(dtype_name)
    expected = _xp.kernel_response_update(X, idx, w, y, c, xp=np, kernel=kernel, gamma=0.4)
    for sq in (None, (X.astype(np.float64) ** 2).sum(axis=1).astype(dtype_name)):
        extra = {} if sq is None else {"sq_norms": bk.asarray(sq)}
        launches = launch_counts()
        got = _cuda.kernel_response_update(*(bk.asarray(a) for a in (X, idx, w, y, c)), xp=bk.xp, kernel=kernel,
                                           gamma=0.4, **extra)
        assert sum(launch_counts().values()) - sum(launches.values()) == 1  # the one kernel
        _close(got, expected, dtype_name, 1 + np.abs(w).sum() * (1 if kernel == "rbf" else 10 * d))


def test_anchor_ops_over_chunks_and_repeatable(bk, small_chunks, dtype_name):
    _cuda, _xp = kernel_module("anchors", "cuda"), kernel_module("anchors", "xp")

    rng = np.random.default_rng(3)
    n, m, d, k, q = 37, 9, 3, 3, 2
    X = rng.standard_normal((n, d)).astype(dtype_name)
    A = rng.standard_normal((m, d)).astype(dtype_name)
    idx, dist = _cuda.anchor_knn(bk.asarray(X), bk.asarray(A), xp=bk.xp, k=k)
    ref_idx, ref_dist = _xp.anchor_knn(X, A, xp=np, k=k)
    np.testing.assert_array_equal(to_numpy(idx), ref_idx)  # random data: no ties within rounding
    _close(dist, ref_dist, dtype_name, 10 * d)
    w = rng.random((n, k)).astype(dtype_name)
    rows = rng.standard_normal((n, q)).astype(dtype_name)
    ref_idx = np.ascontiguousarray(ref_idx)
    args = (bk.asarray(ref_idx), bk.asarray(w))
    acc = _cuda.anchor_accumulate(*args, bk.asarray(rows), xp=bk.xp, n_anchors=m)
    _close(acc, _xp.anchor_accumulate(ref_idx, w, rows, xp=np, n_anchors=m), dtype_name, n)
    # deterministic: no float atomics, the same bits on every call
    np.testing.assert_array_equal(to_numpy(_cuda.anchor_accumulate(*args, bk.asarray(rows), xp=bk.xp, n_anchors=m)),
                                  to_numpy(acc))
    vals = rng.standard_normal((m, q)).astype(dtype_name)
    _close(_cuda.anchor_propagate(*args, bk.asarray(vals), xp=bk.xp),
           _xp.anchor_propagate(ref_idx, w, vals, xp=np), dtype_name, k)
    # a row naming one anchor twice adds both weights
    dup = np.array([[1, 1, 0]])
    got = _cuda.anchor_accumulate(bk.asarray(dup), bk.asarray(np.ones((1, 3), dtype_name)),
                                  bk.asarray(np.ones((1, 1), dtype_name)), xp=bk.xp, n_anchors=2)
    np.testing.assert_array_equal(to_numpy(got)[:, 0], [1.0, 2.0])


def _every_kernel(bk, dtype_name):
    """One call of each cuda op (every Numba-CUDA kernel launched at least once), as NumPy."""
    xp, cuda_of = bk.xp, (lambda name, part="cuda": kernel_module(name, part))
    rng = np.random.default_rng(5)
    n, m, d = 29, 6, 3
    X = rng.standard_normal((n, d)).astype(dtype_name)
    omega, phase = cuda_of("omega").omega_block(xp=xp, seed=3, block=1, n_features=m, n_dims=d, kernel="rbf",
                                                 scale=0.7, dtype=dtype_name)
    Xd, g = bk.asarray(X), bk.asarray(rng.standard_normal((2, n)).astype(dtype_name))
    coef = bk.asarray(rng.standard_normal((2 * m, 2)).astype(dtype_name))
    rff, out = cuda_of("rff"), {"omega": omega, "phase": phase}
    for form in ("cos", "cossin"):
        out[f"features {form}"] = rff.rff_features(Xd, omega, phase, xp=xp, form=form)
        out[f"predict {form}"] = rff.rff_predict(Xd, omega, phase, coef[: m if form == "cos" else 2 * m], xp=xp,
                                                 form=form)
        out[f"weighted {form}"] = rff.rff_weighted_sum(Xd, omega, phase, g, xp=xp, form=form)
    idx = bk.asarray(rng.integers(0, n, 5))
    w, y, c = (bk.asarray(a.astype(dtype_name)) for a in (rng.standard_normal(5), np.sign(rng.standard_normal(n)),
                                                          rng.standard_normal(n)))
    out["response"] = cuda_of("response").kernel_response_update(Xd, idx, w, y, c, xp=xp, kernel="rbf", gamma=0.4)
    wf = cuda_of("waterfill")
    out["level"] = wf.water_level(c, bk.asarray(np.array([1.5, 0.5])), bk.asarray(np.array([0, 12, n])), xp=xp)
    out["biased"] = cuda_of("waterfill", "cuda_biased").water_level_biased(c, y, 2.0, xp=xp)
    anchors = cuda_of("anchors")
    A = bk.asarray(X[:7])
    out["knn"] = anchors.anchor_knn(Xd, A, xp=xp, k=3)
    out["accumulate"] = anchors.anchor_accumulate(out["knn"][0], xp.abs(out["knn"][1]), Xd, xp=xp, n_anchors=7)
    out["propagate"] = anchors.anchor_propagate(out["knn"][0], xp.abs(out["knn"][1]), A, xp=xp)
    import scipy.sparse as sp
    from kbackends import ops

    S = ops.as_csr(ops.to_backend(sp.random(n, d, density=0.4, format="csr", random_state=1, dtype=dtype_name), bk))
    out["csr predict"] = rff.rff_predict(S, omega, phase, coef[:m], xp=xp, form="cos")
    out["csr response"] = cuda_of("response").kernel_response_update(S, idx, w, y, c, xp=xp, kernel="rbf", gamma=0.4)
    out["csr accumulate"] = anchors.anchor_accumulate(out["knn"][0], xp.abs(out["knn"][1]), S, xp=xp, n_anchors=7)
    flat = {}
    for key, value in out.items():
        for i, v in enumerate(value if isinstance(value, tuple) else (value,)):
            flat[f"{key} {i}"] = to_numpy(v)
    return flat


@pytest.mark.skipif(SIMULATOR, reason="cuda.core launches need a GPU")
def test_the_fast_launch_gives_numbas_results_bit_for_bit(bk, small_chunks, dtype_name, monkeypatch):
    """Every kernel launched through cuda.core (kbackends.kernels._cuda_launch.run_kernel)
    gives what Numba's own launch gives, to the bit, and no op falls back to Numba."""
    monkeypatch.setattr(launch, "launch_counts", {"fast": 0, "numba": 0})
    monkeypatch.setattr(launch, "FAST_LAUNCH", False)
    by_numba = _every_kernel(bk, dtype_name)
    assert launch.launch_counts["fast"] == 0 and launch.launch_counts["numba"] > 20
    monkeypatch.setattr(launch, "launch_counts", {"fast": 0, "numba": 0})
    monkeypatch.setattr(launch, "FAST_LAUNCH", True)
    fast = _every_kernel(bk, dtype_name)
    assert launch.launch_counts["numba"] == 0 and launch.launch_counts["fast"] > 20
    assert fast.keys() == by_numba.keys()
    for key in fast:
        np.testing.assert_array_equal(fast[key], by_numba[key], err_msg=key)
