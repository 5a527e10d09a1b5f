"""The compute dtype of a fit, decided by the data's conditioning (docs/architecture.md,
"dtype policy"): float32 unless float32 would lose what float64 keeps.

Three things float32 can lose, each measured in one chunked pass over X
(:func:`scan`, :data:`SCAN_ROWS` rows at a time, so no full-size temporary):

- *magnitudes*: non-zero values outside [1e-30, 1e30] (overflow, flush to zero),
  or squared distances ``4 max|x|^2 d`` over float32's max;
- *a common offset* in the squared-distance expansion ``||x||^2 + ||s||^2 - 2 x.s``
  (SBP's kernel rows): it cancels to a relative error ``eps ||mean||^2 / sum var``.
  An RBF or Laplacian kernel is translation invariant, so the fit subtracts the
  column means (:func:`compute_array`, in float64 before the cast) and the model
  keeps the centre and subtracts it at predict;
- *the offset in the cast itself*: a feature at mean ``m`` and spread ``s`` keeps
  ``s / (eps |m|)`` distinguishable values; the random features' phases
  (DSG, TSGS3VM, TSGSU) lose accuracy once ``eps max_j |m_j| / s_j`` nears 1
  (DSG at an offset of 1e7 on unit-spread features: 0.893 against 0.920 in
  float64). Past :data:`CAST_LOSS` an in-memory DSG, TSGS3VM or TSGSU fit of dense X
  is centred (:func:`centre_features`: the features are translation invariant), a
  warm start's later fits and ``partial_fit``'s later batches on the first call's
  centre; sparse X and dask arrays compute in float64 with a warning.
"""

from __future__ import annotations

import contextlib
import contextvars
import math

import numpy as np

from kbackends import to_numpy

from .validation import check_X
from .warn import warn_user

SCAN_ROWS = 65536  # rows per chunk of the scan and the centred cast (65,536 x 20 float64: 10 MB)
_FLOAT32_RANGE = (1e-30, 1e30)  # |X| (non-zero) well inside float32's normal range
_FLOAT32_MAX = float(np.finfo(np.float32).max)
# eps * ||mean||^2 / sum var above which the squared-distance expansion is centred:
# 1e-4 relative error in the distances (float32: an offset about 29 spreads away)
EXPANSION_LOSS = 1e-4
# eps * max_j |m_j| / s_j above which the cast loses the features' spread (float32:
# an offset 4.2e5 spreads away; the loss of accuracy began between 3e6 and 1e7)
CAST_LOSS = 0.05
TRANSLATION_INVARIANT = ("rbf", "laplacian")


def _is_sparse(X) -> bool:
    return hasattr(X, "tocsr")


class Scan:
    """X's statistics for the dtype policy (host float64): the largest and the smallest
    non-zero magnitude, the column means and variances, the row and column counts."""

    def __init__(self, largest, smallest, mean, var, shape):
        self.largest, self.smallest, self.mean, self.var, self.shape = largest, smallest, mean, var, shape

    def overflows_float32(self):
        """Whether float32 overflows or flushes X's values or its squared distances."""
        squares = 4.0 * self.largest * self.largest * self.shape[1]  # host float64
        return self.largest > _FLOAT32_RANGE[1] or self.smallest < _FLOAT32_RANGE[0] or squares >= _FLOAT32_MAX

    def expansion_loss(self, eps):
        """``eps ||mean||^2 / sum var``: the relative error an offset costs the squared
        distances computed as ``||x||^2 + ||s||^2 - 2 x.s`` in a dtype of machine ``eps``."""
        offset, spread = float(np.sum(self.mean**2)), float(np.sum(self.var))
        if offset == 0.0:
            return 0.0
        return math.inf if spread == 0.0 else eps * offset / spread

    def cast_loss(self, eps):
        """``eps max_j |m_j| / s_j`` over non-constant columns (a constant column rounds
        to one value: nothing lost): the share of a feature's spread the cast rounds away."""
        live = self.var > 0
        if not np.any(live):
            return 0.0
        return float(eps * np.max(np.abs(self.mean[live]) / np.sqrt(self.var[live])))


def scan(X, xp):
    """:class:`Scan` of a validated X (dense: in chunks of :data:`SCAN_ROWS` rows, each
    shifted by the first row so the variances keep their digits; sparse: O(nnz))."""
    n, d = X.shape
    if _is_sparse(X):  # scipy or cupyx CSR: the stored values' own namespace, host floats out
        a = abs(X.data)
        a = a[a > 0]
        largest, smallest = (float(a.max()), float(a.min())) if a.size else (0.0, 1.0)
        mean = np.asarray(to_numpy(X.sum(axis=0)), dtype=np.float64).reshape(-1) / max(n, 1)
        squares = np.asarray(to_numpy(X.multiply(X).sum(axis=0)), dtype=np.float64).reshape(-1) / max(n, 1)
        return Scan(largest, smallest, mean, np.maximum(squares - mean * mean, 0.0), (n, d))
    shift = xp.astype(X[0, :], xp.float64) if n else xp.zeros((d,), dtype=xp.float64)
    largest, smallest = 0.0, math.inf
    sums, squares = xp.zeros((d,), dtype=xp.float64), xp.zeros((d,), dtype=xp.float64)
    for start in range(0, n, SCAN_ROWS):
        chunk = X[start:min(n, start + SCAN_ROWS), :]
        a = xp.abs(chunk)
        largest = max(largest, float(xp.max(a)))
        smallest = min(smallest, float(xp.min(xp.where(a > 0, a, _FLOAT32_RANGE[1]))))
        shifted = xp.astype(chunk, xp.float64) - shift
        sums = sums + xp.sum(shifted, axis=0)
        squares = squares + xp.sum(shifted * shifted, axis=0)
    sums, squares, shift = (np.asarray(to_numpy(v), dtype=np.float64) for v in (sums, squares, shift))
    mean = sums / max(n, 1)
    var = np.maximum(squares / max(n, 1) - mean * mean, 0.0)
    return Scan(largest, min(smallest, _FLOAT32_RANGE[1]) if n else 1.0, shift + mean, var, (n, d))


def centred_cast(X, centre, xp, dtype):
    """``X - centre`` in ``dtype``, subtracted in float64 and cast chunk by chunk (no
    float64 temporary of X's size); a sparse X is made dense chunk by chunk (a centred
    matrix is dense)."""
    n, d = X.shape
    out = xp.empty((n, d), dtype=dtype)
    c = xp.asarray(np.asarray(centre, dtype=np.float64))
    for start in range(0, n, SCAN_ROWS):
        stop = min(n, start + SCAN_ROWS)
        chunk = X[start:stop, :]
        chunk = xp.asarray(chunk.toarray()) if _is_sparse(chunk) else chunk
        out[start:stop, :] = xp.astype(xp.astype(chunk, xp.float64) - c, dtype)
    return out


def _as(X, xp, dtype):
    """X (dense, or scipy / cupyx sparse) as ``dtype``, itself when it already is."""
    if X.dtype == dtype:
        return X
    return X.astype(dtype) if _is_sparse(X) else xp.astype(X, dtype)


def _warn(msg):
    warn_user(msg)


def compute_array(X, bk, dtype, *, expansion=None):
    """``(X, centre)``: ``X`` (validated, float32 or float64) in the dtype the fit computes
    in, and the column means it was centred on (a tuple of floats) or None.

    - ``dtype`` given: that dtype (X already is).
    - else float32 whatever the input's dtype (float64 from load_svmlight_file, pandas
      or NumPy too), unless float32 cannot hold the data: magnitudes it overflows or
      flushes (:meth:`Scan.overflows_float32`), an offset the squared-distance
      expansion loses and centring may not remove (a kernel that is not translation
      invariant), or, for the random
      features (``expansion`` None), an offset the cast itself loses
      (:data:`CAST_LOSS`). Those compute in float64 with a ``UserWarning`` that says
      why (pass ``dtype="float64"`` to choose it and silence the warning).

    ``expansion``: the kernel of a fit that computes squared distances or products of
    rows (SBP's kernel rows); with a translation-invariant one
    (:data:`TRANSLATION_INVARIANT`) and dense X, an offset past
    :data:`EXPANSION_LOSS` in the compute dtype is subtracted (in float64, before the
    cast), and the model keeps the centre. Data without an offset are never centred,
    so their models are the ones of the plain cast, bit for bit. Within
    ``centre_features(centre=c)`` a random-feature fit's X is centred on ``c`` whatever
    its statistics (the later calls of a fit whose first call was centred).
    """
    xp = bk.xp
    given = _CENTRE_FEATURES.get()
    if expansion is None and isinstance(given, tuple) and X.shape[1] == len(given):  # the first call's centre
        return centred_cast(X, given, xp, xp.float32), given
    if expansion is None and (dtype is not None or X.dtype == xp.float32):  # float32 input: rounding done
        return X, None
    stats = scan(X, xp)
    target = X.dtype if dtype is not None else xp.float32
    if dtype is None and X.dtype == xp.float64 and stats.overflows_float32():
        _warn(f"`X`'s magnitudes ({stats.smallest:.3g} to {stats.largest:.3g} over {X.shape[1]} features) overflow "
              "or flush float32's arithmetic: computing in float64 (pass dtype='float64' to choose it and silence "
              "this warning, or standardise the features for the float32 path's speed)")
        return X, None
    eps = float(np.finfo(np.float32 if target == xp.float32 else np.float64).eps)
    if expansion is not None and stats.expansion_loss(eps) > EXPANSION_LOSS:
        if expansion in TRANSLATION_INVARIANT and not _is_sparse(X):
            return centred_cast(X, stats.mean, xp, target), tuple(float(v) for v in stats.mean)
        if dtype is None:  # (a sparse X, at most half stored, has column means below their spread)
            _warn(f"`X` has an offset (||mean||^2 is {stats.expansion_loss(1.0):.3g} times the sum of the variances) "
                  f"that float32's {expansion!r} kernel values lose, and that kernel is not translation invariant: "
                  "computing in float64 (pass dtype='float64' to choose it and silence this warning, or centre "
                  "X yourself)")
            return _as(X, xp, xp.float64), None
    if dtype is None and expansion is None and stats.cast_loss(eps) > CAST_LOSS:
        if given is True and not _is_sparse(X):  # random features: translation invariant
            return centred_cast(X, stats.mean, xp, target), tuple(float(v) for v in stats.mean)
        _warn(f"`X` has a feature whose mean is {stats.cast_loss(1.0):.3g} times its spread: float32 rounds its "
              "spread away, so computing in float64 (pass dtype='float64' to choose it and silence this warning, "
              "or standardise the features for the float32 path's speed)")
        return X, None  # float64: the early return took float32 input
    return _as(X, xp, target), None


def second_source(X, bk, dtype, centre, *, name):
    """A second source of a fit (``X_unlabeled``) validated and cast as its first source
    was by :func:`compute_array`: in ``dtype``, or centred on the first's ``centre`` (in
    float64, then the cast)."""
    X = check_X(X, bk, dtype if centre is None else None, name=name, accept_sparse=True)
    if centre is None or X.shape[1] != len(centre):  # a wrong width: the caller's check names it
        return X
    return centred_cast(X, centre, bk.xp, dtype)


def as_compute_dtype(X, bk, dtype):
    """``X`` in the dtype the random-feature fits (DSG, TSGS3VM, TSGSU) compute in:
    :func:`compute_array` without an expansion, never centred."""
    with centre_features(False):
        return compute_array(X, bk, dtype)[0]


# Whether a random-feature fit may centre X where the cast loses its spread (a context:
# the in-memory DSG fit allows it; the builders that run on a few rows for a distributed
# fit do not), or the centre it must use (a warm start's and partial_fit's later calls
# centre their rows on the first call's, so that every call's rows are cast alike).
_CENTRE_FEATURES = contextvars.ContextVar("centre_features", default=False)


@contextlib.contextmanager
def centre_features(allowed=True, *, centre=None):
    """Within the block, :func:`compute_array` without an expansion subtracts the column
    means (in float64, before the cast to float32) from a dense X whose float32 cast
    would round its spread away (:data:`CAST_LOSS`), instead of computing in float64:
    random features are translation invariant, so a centred fit is the same model and
    keeps float32's speed (the model keeps the centre).

    ``centre`` (a tuple of floats): subtract that one instead, whatever X's statistics
    (the later calls of a fit whose first call was centred)."""
    token = _CENTRE_FEATURES.set(tuple(centre) if centre is not None else bool(allowed))
    try:
        yield
    finally:
        _CENTRE_FEATURES.reset(token)
