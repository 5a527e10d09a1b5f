"""Random Fourier features on the GPU: cuBLAS for the products, Numba-CUDA for cos/sin.

Every op works on row chunks sized by :data:`.._cuda_launch.CHUNK_BYTES`:

1. ``Z = X_chunk @ omega.T`` through ``xp.matmul`` (CuPy -> cuBLAS SGEMM /
   DGEMM; NumPy under the simulator), written straight into the output for
   ``rff_features`` in the cos form;
2. one fused elementwise launch: ``cos(Z + phase)`` in place (cos form), or
   ``cos(Z)`` and ``sin(Z)`` into the two halves of the feature block (cossin
   form), in the input's precision (:mod:`.._cuda_math`);
3. ``rff_predict``: ``F_chunk @ coef`` and ``rff_weighted_sum``:
   ``total += g[:, chunk] @ F_chunk``, through ``xp.matmul`` again.

No float atomics: ``rff_weighted_sum`` adds chunk totals in chunk order, so a
result repeats bit for bit on one device. docs/benchmarks.md ("GPU: what each
kernel must cost") has the flop and byte count of each step.
"""

from numba import cuda

from .. import _cuda_launch as launch
from .._cuda_math import cos, sincos
from ._shapes import as_matrix_shape as _as_matrix_shape


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


PTX_SIGNATURES = {
    "_cos_phase": ["void(float32[:, ::1], float32[::1])", "void(float64[:, ::1], float64[::1])"],
    "_cos_sin": ["void(float32[:, ::1], float32[:, ::1])", "void(float64[:, ::1], float64[:, ::1])"],
}


def _features_into(X, omega, phase, cossin, out, *, xp, stream):
    """Features of the rows of ``X`` into ``out`` of shape (rows, m) or (rows, 2m)."""
    rows, m = X.shape[0], omega.shape[0]
    if rows == 0 or m == 0:
        return out
    grid, block = launch.grid_2d(rows, m)
    if cossin:
        Z = xp.matmul(X, omega.T)
        _cos_sin[grid, block, stream](Z, out)
    else:
        xp.matmul(X, omega.T, out=out)
        _cos_phase[grid, block, stream](out, phase)
    return out


def _chunk(X, omega, cossin, extra_per_row=0):
    """Rows per chunk: the (rows, m) product, the feature block and ``extra_per_row`` bytes."""
    m = omega.shape[0]
    per_row = (3 * m if cossin else m) * X.dtype.itemsize + extra_per_row
    return launch.chunk_rows(X.shape[0], per_row)


def rff_features(X, omega, phase, *, xp, form):
    X, omega, phase = launch.contiguous(xp, X, omega, phase)
    cossin = form == "cossin"
    n, m = X.shape[0], omega.shape[0]
    out = xp.empty((n, 2 * m if cossin else m), dtype=X.dtype)
    step = _chunk(X, omega, cossin)
    with launch.launch_context(xp) as stream:
        for start in range(0, n, step):
            stop = min(n, start + step)
            _features_into(X[start:stop], omega, phase, cossin, out[start:stop], xp=xp, stream=stream)
    return out


def rff_predict(X, omega, phase, coef, *, xp, form):
    n = X.shape[0]
    cossin = form == "cossin"
    m = omega.shape[0]
    X, omega, phase, coef2 = launch.contiguous(
        xp, X, omega, phase, xp.reshape(coef, _as_matrix_shape(coef, rows_last=False))
    )
    out = xp.zeros((n, coef2.shape[1]), dtype=X.dtype)
    if n and m and coef2.shape[1]:
        step = _chunk(X, omega, cossin)
        F = xp.empty((step, 2 * m if cossin else m), dtype=X.dtype)
        with launch.launch_context(xp) as stream:
            for start in range(0, n, step):
                stop = min(n, start + step)
                Fc = _features_into(X[start:stop], omega, phase, cossin, F[: stop - start], xp=xp, stream=stream)
                xp.matmul(Fc, coef2, out=out[start:stop])
    return xp.reshape(out, (n,) + tuple(coef.shape[1:]))


def rff_weighted_sum(X, omega, phase, g, *, xp, form):
    cossin = form == "cossin"
    m = omega.shape[0]
    n = X.shape[0]
    X, omega, phase, G = launch.contiguous(xp, X, omega, phase, xp.reshape(g, _as_matrix_shape(g, rows_last=True)))
    n_out = 2 * m if cossin else m
    total = xp.zeros((G.shape[0], n_out), dtype=X.dtype)
    if n and m and G.shape[0]:
        step = _chunk(X, omega, cossin)
        F = xp.empty((step, n_out), dtype=X.dtype)
        with launch.launch_context(xp) as stream:
            for start in range(0, n, step):
                stop = min(n, start + step)
                Fc = _features_into(X[start:stop], omega, phase, cossin, F[: stop - start], xp=xp, stream=stream)
                total += xp.matmul(G[:, start:stop], Fc)
    return xp.reshape(total, tuple(g.shape[:-1]) + (n_out,))
