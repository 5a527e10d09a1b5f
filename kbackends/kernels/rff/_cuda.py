"""Random Fourier features on the GPU: cuBLAS for the products, Numba-CUDA for cos/sin.

Every op works on row chunks sized by :data:`.._cuda_launch.CHUNK_BYTES`
(never an (n, m) matrix for large n), in two launches a chunk:

1. the product ``X_chunk @ omega.T`` through ``xp.matmul`` (CuPy -> cuBLAS
   SGEMM / DGEMM; NumPy under the simulator);
2. one fused Numba-CUDA kernel, in the input's precision (:mod:`.._cuda_math`):

   - ``rff_features``: ``cos(Z + phase)`` in place in the output (cos form;
     cuBLAS writes the product straight into the output rows), or ``cos(Z)``,
     ``sin(Z)`` into its two halves (cossin form);
   - ``rff_predict``: the product is formed transposed, ``omega @ X_chunk.T``
     (m, rows), so consecutive threads read consecutive rows; thread (row,
     segment of 128 features) sums ``cos(z + phase) coef`` over its segment,
     and the segments' partial sums are added in segment order;
   - ``rff_weighted_sum``: thread (feature, block of 64 rows) sums ``g[c, i]
     cos(z + phase)`` over its rows; the blocks' partial sums are added in
     block order.

   The features are computed and consumed where they are read: the (rows, m)
   product is written once and read once (8 m bytes a row), instead of also
   writing and re-reading a feature block for a separate cuBLAS product
   (16 m bytes a row), the difference between meeting and missing the
   bandwidth bound on a GPU (docs/benchmarks.md, "GPU: what each kernel must
   cost").

Sparse ``X`` (a canonical CSR of cupyx.scipy.sparse on a GPU, of scipy.sparse
under the simulator, or a :class:`kbackends.ops.CSRRows` row subset of one):
step 1 is :func:`_csr_product`, one Numba-CUDA launch per chunk that writes the
chunk's (rows, m) product row-major, ``Z[r, j] = sum_p data[p] omega_t[indices[p], j]``
over row ``r``'s stored entries, from the matrix's ``indptr`` / ``indices`` /
``data`` and the chunk's row numbers (a device array); step 2 is the dense
path's epilogue on that buffer, unchanged for ``rff_features`` (cos form: the
product written straight into the output rows) and ``rff_weighted_sum``;
``rff_predict``'s epilogue reads it row-major (``transposed=False``: each
thread walks its own row's run of features, eight float32 a 32-byte sector, so
a sector read for one feature serves the next seven from L1). Memory: O(nnz)
for X, the (rows, m) chunk and omega.T (d, m); never an (n, d) dense copy.
Why not cuSPARSE's SpMM through cupyx (``X[a:b] @ omega.T``), the other
correct form (CuPy's ``cupyx/scipy/sparse/_csr.py``, ``_index.py``,
``cupyx/cusparse.py``):

- gathering or slicing rows of a cupyx matrix reads the result's number of
  stored entries on the host (``_csr_row_index``: ``int(Bp[-1])``;
  ``_get_csr_submatrix_major_axis``: ``int(Ap[0])``): a synchronisation per
  chunk and per mini-batch, where the kernel indexes ``indptr`` with the row
  numbers on the device instead (the engine passes a mini-batch as
  :class:`~kbackends.ops.CSRRows`, never gathered);
- cupyx's ``csrmm2`` / ``spmm`` write their output column-major (``DnMatDescriptor``
  is ``CUSPARSE_ORDER_COL``, ``c = zeros((m, n), order='F')``): the row-major
  epilogues would need a transposing copy of every chunk (8 m bytes a row more),
  and ``omega @ X.T`` through ``__rmatmul__`` is the same product transposed,
  (m, rows) C-ordered, which only ``rff_predict``'s epilogue could read as is.

Per chunk the product costs 2 m FLOPs and one 4 m-byte (float32) read of a row
of ``omega_t`` per stored entry (warp-coalesced; omega_t is L2-resident for
small d) plus 4 m bytes written a row; the epilogue reads those 4 m bytes back
(docs/benchmarks.md, "Sparse on cuda").

No float atomics: partial sums are added in a fixed order, so a result repeats
bit for bit on one device. Outputs are accumulated in groups of
``_GROUP`` targets (classes) a pass over the chunk.
"""

from numba import cuda

from .. import _cuda_launch as launch
from .._cuda_math import ZERO, cos, sincos
from . import _cuda_fused as fused
from ._shapes import as_matrix_shape as _as_matrix_shape

_SEGMENT = 128  # features one thread sums in rff_predict
_ROW_BLOCK = 64  # rows one thread sums in rff_weighted_sum
_GROUP = 4  # targets (classes) accumulated at once, in registers


@cuda.jit(device=True, cache=True)
def _cos_sin_of(z, p, cossin):
    """The feature pair of one product: (cos z, sin z) for cossin, (cos(z + p), 0) for cos."""
    if cossin:
        s, c = sincos(z)
        return c, s
    return cos(z + p), ZERO


@cuda.jit(cache=True)
def _cos_phase(Z, phase):
    """``Z[i, j] = cos(Z[i, j] + phase[j])`` in place; a :func:`grid_2d` launch."""
    j, y = cuda.grid(2)
    n, m = Z.shape
    if j >= m:
        return
    p = phase[j]
    for i in range(y, n, cuda.gridsize(2)[1]):
        Z[i, j] = cos(Z[i, j] + p)


@cuda.jit(cache=True)
def _cos_sin(Z, out):
    """``out[i, j], out[i, m + j] = cos(Z[i, j]), sin(Z[i, j])``; a :func:`grid_2d` launch."""
    j, y = cuda.grid(2)
    n, m = Z.shape
    if j >= m:
        return
    for i in range(y, n, cuda.gridsize(2)[1]):
        s, c = sincos(Z[i, j])
        out[i, j] = c
        out[i, m + j] = s


@cuda.jit(cache=True)
def _csr_product(indptr, indices, data, rows, omega_t, Z):
    """``Z[r, j] = sum_p data[p] omega_t[indices[p], j]`` over the stored entries
    ``p`` of CSR row ``rows[r]``: the (rows, m) product of a row subset of a CSR
    matrix with ``omega.T``, row-major, the layout the fused epilogues read.

    A :func:`grid_2d` launch, features on x, rows on y: a warp shares one row
    (its ``indptr`` / ``indices`` / ``data`` reads are broadcasts) and reads 32
    consecutive entries of a row of ``omega_t`` (d, m), coalesced; the sum runs
    over the row's entries in stored order, so it repeats bit for bit.
    """
    j, y = cuda.grid(2)
    n, m = Z.shape
    if j >= m:
        return
    for r in range(y, n, cuda.gridsize(2)[1]):
        row = rows[r]
        acc = ZERO  # float32 zero: unified to float64 by a float64 sum
        for p in range(indptr[row], indptr[row + 1]):
            acc += data[p] * omega_t[indices[p], j]
        Z[r, j] = acc


@cuda.jit(cache=True)
def _predict_partial(Z, transposed, phase, coef_c, coef_s, cossin, partial):
    """``partial[s, i, c] = sum_{j in segment s} cos_j(i) coef_c[j, c] + sin_j(i) coef_s[j, c]``.

    ``Z`` is the transposed product (m, rows) when ``transposed`` (dense X:
    consecutive threads read consecutive rows), the row-major one (rows, m)
    otherwise (sparse X: each thread reads its own row's run of features); a
    :func:`grid_2d` launch with rows on x and segments on y (``coef_s`` is
    ``coef_c`` and unused in the cos form). Loops over the group run to the
    constant ``_GROUP`` so they unroll and the accumulators stay in registers.
    """
    i, y = cuda.grid(2)
    m, n = (Z.shape[0], Z.shape[1]) if transposed else (Z.shape[1], Z.shape[0])
    if i >= n:
        return
    k = coef_c.shape[1]
    acc = cuda.local.array(_GROUP, dtype=Z.dtype)
    for seg in range(y, partial.shape[0], cuda.gridsize(2)[1]):
        j0 = seg * _SEGMENT
        j1 = min(m, j0 + _SEGMENT)
        for c0 in range(0, k, _GROUP):
            for c in range(_GROUP):
                acc[c] = ZERO
            for j in range(j0, j1):
                fc, fs = _cos_sin_of(Z[j, i] if transposed else Z[i, j], phase[j], cossin)
                for c in range(_GROUP):
                    if c0 + c < k:
                        acc[c] += fc * coef_c[j, c0 + c] + fs * coef_s[j, c0 + c]
            for c in range(_GROUP):
                if c0 + c < k:
                    partial[seg, i, c0 + c] = acc[c]


@cuda.jit(cache=True)
def _sum_segments(partial, f, shrink, add, out):
    """``out[i, c] = f[i, c] shrink + sum_s partial[s, i, c]`` (``f`` unread unless
    ``add``), the segments added in order; a :func:`grid_2d` launch, targets on x (one
    thread wide: k is a few targets), rows on y."""
    c, y = cuda.grid(2)
    n_seg, n, k = partial.shape
    if c >= k:
        return
    for i in range(y, n, cuda.gridsize(2)[1]):
        acc = partial[0, i, c]
        for s in range(1, n_seg):
            acc += partial[s, i, c]
        out[i, c] = f[i, c] * shrink + acc if add else acc


@cuda.jit(cache=True)
def _weighted_partial(Z, phase, G, cossin, partial):
    """``partial[b, c, j] = sum_{i in block b} G[c, i] cos_j(i)`` (and ``partial[b, c, m + j]``
    with ``sin_j(i)`` in the cossin form); a :func:`grid_2d` launch, features on x, row blocks on y."""
    j, y = cuda.grid(2)
    n, m = Z.shape
    if j >= m:
        return
    k = G.shape[0]
    p = phase[j]
    acc_c = cuda.local.array(_GROUP, dtype=Z.dtype)
    acc_s = cuda.local.array(_GROUP, dtype=Z.dtype)
    for blk in range(y, partial.shape[0], cuda.gridsize(2)[1]):
        i0 = blk * _ROW_BLOCK
        i1 = min(n, i0 + _ROW_BLOCK)
        for c0 in range(0, k, _GROUP):
            for c in range(_GROUP):
                acc_c[c] = ZERO
                acc_s[c] = ZERO
            for i in range(i0, i1):
                fc, fs = _cos_sin_of(Z[i, j], p, cossin)
                for c in range(_GROUP):
                    if c0 + c < k:
                        g = G[c0 + c, i]
                        acc_c[c] += g * fc
                        acc_s[c] += g * fs
            for c in range(_GROUP):
                if c0 + c < k:
                    partial[blk, c0 + c, j] = acc_c[c]
                    if cossin:
                        partial[blk, c0 + c, m + j] = acc_s[c]


PTX_SIGNATURES = {
    "_cos_phase": ["void(float32[:, ::1], float32[::1])", "void(float64[:, ::1], float64[::1])"],
    "_cos_sin": ["void(float32[:, ::1], float32[:, ::1])", "void(float64[:, ::1], float64[:, ::1])"],
    "_predict_partial": [
        f"void({t}[:, ::1], boolean, {t}[::1], {t}[:, ::1], {t}[:, ::1], boolean, {t}[:, :, ::1])"
        for t in ("float32", "float64")
    ],
    # scipy / cupyx CSR indices are int32 (int64 past 2**31 stored entries); row numbers int64
    "_csr_product": [
        f"void({i}[::1], {i}[::1], {t}[::1], int64[::1], {t}[:, ::1], {t}[:, ::1])"
        for t, i in (("float32", "int32"), ("float64", "int32"), ("float32", "int64"))
    ],
    "_sum_segments": [
        f"void({t}[:, :, ::1], {t}[:, ::1], {t}, boolean, {t}[:, ::1])" for t in ("float32", "float64")
    ],
    "_weighted_partial": [
        f"void({t}[:, ::1], {t}[::1], {t}[:, ::1], boolean, {t}[:, :, ::1])" for t in ("float32", "float64")
    ],
}


def _sparse_input(X, xp):
    """``(indptr, indices, data, rows)`` of a sparse ``X`` (a canonical CSR of
    scipy.sparse or cupyx.scipy.sparse, as :mod:`kbackends.ops` hands it over, or
    a :class:`kbackends.ops.CSRRows` row subset of one), ``None`` for a dense
    ``X``. ``rows`` (int64, on X's device) are the rows taken, ``None`` for all."""
    if hasattr(X, "rows") and hasattr(X, "csr"):
        A, rows = X.csr, xp.astype(X.rows, xp.int64) if X.rows.dtype != xp.int64 else X.rows
    elif hasattr(X, "indptr") and hasattr(X, "tocsr"):
        A, rows = X, None
    else:
        return None
    return (*launch.contiguous(xp, A.indptr, A.indices, A.data), rows)


def _sparse_product(sparse, start, stop, omega_t, Z, xp, stream):
    """``Z = X[start:stop] @ omega.T`` for a sparse ``X`` (:func:`_sparse_input`):
    one :func:`_csr_product` launch on the chunk's row numbers, no CSR copy."""
    indptr, indices, data, rows = sparse
    chunk = xp.arange(start, stop, dtype=xp.int64) if rows is None else rows[start:stop]
    grid, block = launch.grid_2d(stop - start, Z.shape[1])
    launch.run_kernel(_csr_product, grid, block, stream, indptr, indices, data, chunk, omega_t, Z)
    return Z


def _row_product(sparse, X, omega, omega_t, start, stop, xp, stream):
    """The (rows, m) row-major product ``X[start:stop] @ omega.T``: cuBLAS for a
    dense ``X``, :func:`_csr_product` for a sparse one."""
    if sparse is None:
        return xp.matmul(X[start:stop], omega.T)
    Z = xp.empty((stop - start, omega.shape[0]), dtype=omega.dtype)
    return _sparse_product(sparse, start, stop, omega_t, Z, xp, stream)


def _fused(sparse, X):
    """Whether the products of dense ``X`` go through the fused kernels (:mod:`._cuda_fused`)."""
    return sparse is None and launch.FUSED_PRODUCTS and 0 < X.shape[1] <= fused.MAX_DIMS


def _prepare(X, omega, phase, xp):
    """(sparse input or None, X, omega, phase, omega_t): contiguous dense arrays,
    and for a sparse X the (d, m) row-major ``omega.T`` its product reads."""
    sparse = _sparse_input(X, xp)
    omega, phase = launch.contiguous(xp, omega, phase)
    if sparse is None:
        (X,) = launch.contiguous(xp, X)
        return None, X, omega, phase, None
    (omega_t,) = launch.contiguous(xp, omega.T)
    return sparse, X, omega, phase, omega_t


def rff_features(X, omega, phase, *, xp, form):
    sparse, X, omega, phase, omega_t = _prepare(X, omega, phase, xp)
    cossin = form == "cossin"
    n, m = X.shape[0], omega.shape[0]
    out = xp.empty((n, 2 * m if cossin else m), dtype=X.dtype)
    if n == 0 or m == 0:
        return out
    if _fused(sparse, X):  # each feature computed and written once: no product, no chunks
        with launch.launch_context(xp) as stream:
            fused.features(X, omega, phase, cossin, out, stream)
        return out
    step = launch.chunk_rows(n, m * X.dtype.itemsize)  # the cossin form's product
    with launch.launch_context(xp) as stream:
        for start in range(0, n, step):
            stop = min(n, start + step)
            grid, block = launch.grid_2d(stop - start, m)
            if cossin:
                Z = _row_product(sparse, X, omega, omega_t, start, stop, xp, stream)
                launch.run_kernel(_cos_sin, grid, block, stream, Z, out[start:stop])
            else:
                if sparse is not None:  # the product straight into the output rows, as cuBLAS does
                    _sparse_product(sparse, start, stop, omega_t, out[start:stop], xp, stream)
                else:
                    xp.matmul(X[start:stop], omega.T, out=out[start:stop])
                launch.run_kernel(_cos_phase, grid, block, stream, out[start:stop], phase)
    return out


def rff_predict(X, omega, phase, coef, *, xp, form):
    return _predict(X, omega, phase, coef, None, 0.0, xp, form)


def rff_predict_add(X, omega, phase, coef, f, *, xp, form, shrink):
    """``f * shrink + rff_predict(X, omega, phase, coef)``, the sum formed where the
    segments' partial sums are added (:func:`_sum_segments`): a cache update in the
    launches of one prediction."""
    return _predict(X, omega, phase, coef, f, shrink, xp, form)


def _predict(X, omega, phase, coef, f, shrink, xp, form):
    """``rff_predict``, plus ``f * shrink`` when ``f`` is given; per chunk the product,
    :func:`_predict_partial` and :func:`_sum_segments` (three launches)."""
    n = X.shape[0]
    cossin = form == "cossin"
    m = omega.shape[0]
    sparse, X, omega, phase, omega_t = _prepare(X, omega, phase, xp)
    (coef2,) = launch.contiguous(xp, xp.reshape(coef, _as_matrix_shape(coef, rows_last=False)))
    k = coef2.shape[1]
    if not (n and m and k):
        out = xp.zeros((n, k), dtype=X.dtype) if f is None else f * shrink
        return xp.reshape(out, (n,) + tuple(coef.shape[1:]))
    add = f is not None
    if add:
        (f,) = launch.contiguous(xp, xp.reshape(f, (n, k)))
    out = xp.empty((n, k), dtype=X.dtype)
    # without f a stand-in that is never read (an alias of ``out`` would be one more
    # copy of it for the simulator, which copies every array argument in and back)
    unread = xp.empty((1, 1), dtype=X.dtype)
    shrink = out.dtype.type(shrink)  # f * shrink in the compute dtype, as NumPy's f * python_float
    coef_c, coef_s = (coef2[:m], coef2[m:]) if cossin else (coef2, coef2)
    coef_c, coef_s = launch.contiguous(xp, coef_c, coef_s)
    fuse = _fused(sparse, X)
    n_seg = launch.blocks_for(m, fused.SEGMENT if fuse else _SEGMENT)  # the partial kernel's segments
    # per row: the (rows, m) product unless fused, and the segments' partial sums
    step = launch.chunk_rows(n, ((0 if fuse else m) + n_seg * k) * X.dtype.itemsize)
    with launch.launch_context(xp) as stream:
        for start in range(0, n, step):
            stop = min(n, start + step)
            if fuse:
                partial = xp.empty((n_seg, stop - start, k), dtype=X.dtype)
                fused.predict_partial(X[start:stop], omega, phase, coef_c, coef_s, cossin, partial, stream)
            elif sparse is not None:  # (rows, m), row-major: read along each thread's row
                Z = _row_product(sparse, X, omega, omega_t, start, stop, xp, stream)
            else:
                Z = xp.matmul(omega, X[start:stop].T)  # (m, rows): coalesced reads by row
            if not fuse:
                partial = xp.empty((n_seg, stop - start, k), dtype=X.dtype)
                grid, block = launch.grid_2d(n_seg, stop - start)  # rows of the chunk on x, segments on y
                launch.run_kernel(_predict_partial, grid, block, stream,
                                  Z, sparse is None, phase, coef_c, coef_s, cossin, partial)
            grid, block = launch.grid_2d(stop - start, k, block=(1, 128))  # k is a few targets: rows on y
            launch.run_kernel(_sum_segments, grid, block, stream, partial, f[start:stop] if add else unread, shrink,
                              add, out[start:stop])
    return xp.reshape(out, (n,) + tuple(coef.shape[1:]))


def rff_weighted_sum(X, omega, phase, g, *, xp, form):
    cossin = form == "cossin"
    m = omega.shape[0]
    n = X.shape[0]
    sparse, X, omega, phase, omega_t = _prepare(X, omega, phase, xp)
    (G,) = launch.contiguous(xp, xp.reshape(g, _as_matrix_shape(g, rows_last=True)))
    k = G.shape[0]
    n_out = 2 * m if cossin else m
    total = xp.zeros((k, n_out), dtype=X.dtype)
    if n and m and k:
        fuse = _fused(sparse, X)
        # per row: the product unless fused, and its share of the (blocks, k, n_out) partial sums
        row_block = fused.ROW_BLOCK if fuse else _ROW_BLOCK  # the partial kernel's rows a thread
        step = launch.chunk_rows(n, ((0 if fuse else m) + launch.blocks_for(k * n_out, row_block))
                                 * X.dtype.itemsize)
        with launch.launch_context(xp) as stream:
            for start in range(0, n, step):
                stop = min(n, start + step)
                n_blk = launch.blocks_for(stop - start, row_block)
                partial = xp.empty((n_blk, k, n_out), dtype=X.dtype)
                (Gc,) = launch.contiguous(xp, G[:, start:stop])
                if fuse:
                    fused.weighted_partial(X[start:stop], omega, phase, Gc, cossin, partial, stream)
                else:
                    Z = _row_product(sparse, X, omega, omega_t, start, stop, xp, stream)
                    grid, block = launch.grid_2d(n_blk, m)
                    launch.run_kernel(_weighted_partial, grid, block, stream, Z, phase, Gc, cossin, partial)
                total += xp.sum(partial, axis=0)
    return xp.reshape(total, tuple(g.shape[:-1]) + (n_out,))
