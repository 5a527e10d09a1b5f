"""Validation at the public boundary: arrays, labels, seeds, kernel widths.

Algorithms validate once in ``fit`` / ``predict`` and then call the ops with
``check_finite=False``.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import re

import numpy as np
from sklearn.base import RegressorMixin

from kbackends import array_namespace, float_dtype, is_array, to_numpy
from kbackends.random import default_float_dtype

from .shapes import check_shape
from .sparse import check_sparse_X, sparse_gram_sample


def float_dtype_for(bk, X, dtype):
    """The float dtype to compute in: ``dtype`` if given; X's if float32/float64;
    else float64 on cpu and other namespaces, float32 on cuda."""
    xp = bk.xp
    if dtype is not None:
        return float_dtype(xp, dtype)
    x_dtype = getattr(X, "dtype", None)
    if x_dtype is not None and x_dtype in (xp.float32, xp.float64):
        return x_dtype
    return default_float_dtype(bk)


def _is_sparse(X) -> bool:
    return hasattr(X, "tocsr") or type(X).__module__.startswith(("scipy.sparse", "cupyx.scipy.sparse"))


DENSIFY_DENSITY = 0.5  # a sparse X with at least this fraction of its entries stored is made dense


def _dense_in_fact(X):
    n, d = (X.shape + (0, 0))[:2] if len(X.shape) == 2 else (0, 0)
    return n * d > 0 and X.nnz >= DENSIFY_DENSITY * n * d


def check_X(X, bk, dtype, *, name="X", min_samples=1, accept_sparse=False):
    """``X`` as a finite 2-D float array of backend ``bk`` (moved once if needed).

    With ``accept_sparse`` (on the backends with sparse kernels,
    :data:`kbackends.ops.SPARSE_BACKENDS`), a scipy.sparse or cupyx.scipy.sparse
    matrix or array of any format comes back as a finite canonical CSR
    (:func:`algorithms._boundary.sparse.check_sparse_X`), unless it is dense in fact: at
    least half its entries stored (:data:`DENSIFY_DENSITY`), it is made dense, which
    then costs at most twice the sparse copy's memory (n * d <= 2 nnz) and runs the
    dense kernels (ijcnn1 as load_svmlight_file gives it, 59% stored: 4x faster).
    """
    if X is None:
        msg = f"`{name}` is required, got None"
        raise ValueError(msg)
    if _is_sparse(X) and accept_sparse and _dense_in_fact(X):
        X = X.toarray()
    if _is_sparse(X):
        if accept_sparse:
            return check_sparse_X(X, bk, dtype, name=name, min_samples=min_samples)
        msg = (f"`{name}` is a sparse matrix; this algorithm does not take sparse input yet "
               "(DSG / UDSG / CDSG and TSGS3VM do), pass X.toarray()")
        raise TypeError(msg)
    xp = bk.xp
    if not is_array(X):  # a list, a DataFrame: to NumPy first
        X = np.asarray(X)
    if isinstance(X, np.ndarray):
        if X.dtype.kind == "c":
            msg = f"`{name}` has a complex dtype; complex data is not supported"
            raise ValueError(msg)
        if X.dtype.kind not in "fiub":
            try:
                X = X.astype(np.float64)
            except (TypeError, ValueError) as exc:
                msg = f"`{name}` must be numeric, got dtype {X.dtype}"
                raise TypeError(msg) from exc
    check_shape(X, name, min_samples, hint="; reshape a single feature with X.reshape(-1, 1)")
    X = bk.asarray(X)
    X = xp.astype(X, float_dtype_for(bk, X, dtype)) if X.dtype != float_dtype_for(bk, X, dtype) else X
    # One pass over X answers both checks: max |x| is NaN or inf exactly when X holds a NaN
    # or an inf (max propagates NaN: NumPy, CuPy, the array API standard).
    largest = float(xp.max(xp.abs(X))) if X.shape[0] and X.shape[1] else 0.0
    if not math.isfinite(largest):
        msg = f"`{name}` contains NaN or infinite values"
        raise ValueError(msg)
    check_squares_finite(X, xp, name, largest=largest)
    return X


def check_squares_finite(X, xp, name="X", *, largest=None):
    """The algorithms sum squares of rows (distances, kernel widths, norms): refuse
    finite values whose squared row sums would overflow the dtype (a bound: the largest
    magnitude squared times the number of features), so nothing goes silently to inf.
    ``largest``: ``max |X|`` when the caller has it (finite)."""
    if X.shape[0] == 0 or X.shape[1] == 0:
        return
    if largest is None:
        largest = float(xp.max(xp.abs(X)))
    limit = float(xp.finfo(X.dtype).max)
    if largest * largest * X.shape[1] >= limit:  # host float64: no overflow here
        msg = (
            f"`{name}` has values up to {largest:.3g}: their squares summed over {X.shape[1]} features overflow "
            f"{X.dtype}; standardise the features (e.g. sklearn.preprocessing.StandardScaler)"
            + (" or pass float64 data" if X.dtype == xp.float32 else "")
        )
        raise ValueError(msg)


def check_n_features(X, n_features_in, name="X"):
    if X.shape[1] != n_features_in:
        msg = f"`{name}` has {X.shape[1]} features, but the model was fitted with {n_features_in} features"
        raise ValueError(msg)


def check_y_length(y, X, name="y"):
    if y.ndim != 1:
        msg = f"`{name}` must be 1-D, got shape {tuple(y.shape)}"
        raise ValueError(msg)
    if y.shape[0] != X.shape[0]:
        msg = f"`{name}` has {y.shape[0]} entries but `X` has {X.shape[0]} rows"
        raise ValueError(msg)


def check_labels(y, n_rows, *, name="y", unlabeled=None):
    """Class labels checked the same way for every classifier: a 1-D host (NumPy) array.

    Parameters
    ----------
    y : array-like of shape (n_samples,) or (n_samples, 1)
        Labels: all numbers (integer-valued if float) or all strings.
    n_rows : int or None
        Rows of ``X``; ``y`` must have as many entries (None: not checked here).
    unlabeled : label, optional
        The semi-supervised marker of unlabeled rows: exempt from the checks.

    Raises
    ------
    ValueError
        None, wrong shape or length, complex labels, NaN / infinite labels, continuous
        (non-integer float) values.
    TypeError
        Labels that mix strings and numbers (scikit-learn cannot sort them either).
    """
    if y is None:
        msg = f"`{name}` is required, got None"
        raise ValueError(msg)
    y_host = np.asarray(to_numpy(y)) if is_array(y) else np.asarray(y)
    if y_host.ndim == 2 and y_host.shape[1] == 1:
        y_host = y_host[:, 0]
    if y_host.ndim != 1:
        msg = f"`{name}` must be 1-D (n_samples,), got shape {y_host.shape}"
        raise ValueError(msg)
    if n_rows is not None and y_host.shape[0] != n_rows:
        msg = f"`{name}` has {y_host.shape[0]} entries but `X` has {n_rows} rows"
        raise ValueError(msg)
    labeled = y_host if unlabeled is None else y_host[y_host != unlabeled]
    if y_host.dtype.kind == "c":
        msg = f"`{name}` has complex labels (dtype {y_host.dtype}); class labels must be real numbers or strings"
        raise ValueError(msg)
    if y_host.dtype.kind == "O":
        kinds = {"string" if isinstance(v, str) else "number" if isinstance(v, numbers.Number) else type(v).__name__
                 for v in labeled}
        if len(kinds) > 1 or not kinds <= {"string", "number"}:
            msg = f"`{name}` mixes label types ({', '.join(sorted(kinds))}); labels must be all numbers or all strings"
            raise TypeError(msg)
        if kinds == {"number"}:
            labeled = labeled.astype(np.float64 if any(isinstance(v, float) for v in labeled) else np.int64)
    if labeled.dtype.kind == "f":
        if not np.all(np.isfinite(labeled)):
            msg = f"`{name}` contains NaN or infinite labels"
            raise ValueError(msg)
        if not np.all(labeled == np.round(labeled)):
            example = labeled[labeled != np.round(labeled)][0].item()
            msg = (f"`{name}` has continuous values (e.g. {example!r}); a classifier needs class labels "
                   "(integers or strings), not a regression target")
            raise ValueError(msg)
    return y_host


def encode_classes(y, bk, n_rows=None):
    """Sorted unique labels (host numpy array) and ``y`` as class indices on ``bk``,
    after :func:`check_labels` (``n_rows``: the rows of ``X``; default ``len(y)``)."""
    y_host = check_labels(y, n_rows)
    classes = np.unique(y_host)
    index = np.searchsorted(classes, y_host)  # what return_inverse gives, without its argsort (10x faster)
    if classes.size < 2:
        msg = f"`y` has only one class ({classes[0]!r}); a classifier needs at least 2 classes"
        raise ValueError(msg)
    return classes, bk.asarray(index.astype(np.int64))


def encode_known_classes(y, classes, bk, n_rows=None):
    """``y`` as indices into a fitted model's sorted ``classes``, on ``bk``; a label the
    model does not know is refused by name (scoring a model on labels it never saw has
    no meaning, and re-encoding ``y`` on its own would shift the classes)."""
    y_host = check_labels(y, n_rows)
    classes = np.asarray(classes)
    index = np.minimum(np.searchsorted(classes, y_host), classes.size - 1)
    unknown = np.unique(y_host[classes[index] != y_host])
    if unknown.size:
        msg = (f"`y` holds labels the model does not know: {unknown[:5].tolist()}"
               f"{' ...' if unknown.size > 5 else ''} (its classes: {classes.tolist()})")
        raise ValueError(msg)
    return bk.asarray(index.astype(np.int64))


def check_class_weights(index, weights, classes, what="`sample_weight`"):
    """Refuse sample weights whose sum over the rows of some class is zero: the fit would
    train a model that never saw that class (scikit-learn refuses it too). ``index``: the
    rows' class indices (host or device), ``weights``: host weights or None."""
    if weights is None:
        return
    totals = np.bincount(np.asarray(to_numpy(index)), weights=weights, minlength=len(classes))
    empty = [classes[i] for i in np.flatnonzero(totals <= 0)]
    if empty:
        msg = (f"every row of class{'es' if len(empty) > 1 else ''} "
               f"{[c.item() if hasattr(c, 'item') else c for c in empty]} has weight zero ({what}): the model "
               "would never see it; give each class a positive weight")
        raise ValueError(msg)


def seed_from(random_state) -> int:
    """A 63-bit integer seed from None, an int, or a NumPy Generator/RandomState."""
    if random_state is None:
        return int(np.random.default_rng().integers(0, 2**63 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            msg = f"`random_state` must be non-negative, got {random_state}"
            raise ValueError(msg)
        return int(random_state)
    msg = f"`random_state` must be None, an int or a numpy Generator, got {type(random_state).__name__}"
    raise TypeError(msg)


def median_gamma(X, bk, seed: int, n_sample: int = 1000) -> float:
    """Median trick: ``1 / median ||x - x'||^2`` over pairs of a random sample, so the
    kernel is ``exp(-1)`` at the median squared distance.

    The sample is centred and scaled to max |x| = 1 first, so the Gram-matrix
    distances neither overflow nor lose small distances to cancellation, and
    "identical rows" is judged relative to the data's scale (any X whose rows
    differ gets its own width, at 1e-7 as at 1e7).
    """
    xp = bk.xp
    n = X.shape[0]
    rng = np.random.default_rng(seed)
    rows = rng.choice(n, size=min(n, n_sample), replace=False)
    if _is_sparse(X):
        # Not centred (that would densify the sample): scaled only, and the Gram
        # matrix from the sparse rows; the threshold below still drops cancellation noise.
        sq, gram, scale = sparse_gram_sample(X, rows)
        if scale == 0.0:
            return 1.0
        D = sq[:, None] + sq[None, :] - 2.0 * gram
    else:
        S = xp.astype(xp.take(X, bk.asarray(rows), axis=0), xp.float64)
        S = S - xp.mean(S, axis=0)
        scale = float(xp.max(xp.abs(S)))
        if scale == 0.0:
            return 1.0  # all sampled rows identical: any width fits; keep the neutral one
        S = S / scale
        sq = xp.sum(S * S, axis=1)
        D = to_numpy(sq[:, None] + sq[None, :] - 2.0 * (S @ S.T))
        sq = to_numpy(sq)
    i, j = np.triu_indices(D.shape[0], 1)
    upper = D[i, j]
    # Below ~1e-12 of the rows' own squared norms a distance is cancellation noise.
    upper = upper[upper > 1e-12 * (sq[i] + sq[j])]
    if upper.size == 0:
        return 1.0
    gamma = 1.0 / float(np.median(upper)) / scale / scale
    if not (np.isfinite(gamma) and gamma > 0):
        msg = (f"`gamma='median'` cannot be represented: the rows of `X` differ by ~{scale:.3g}, so "
               "1 / (median squared distance) is outside float64's range; standardise `X` "
               "(e.g. sklearn.preprocessing.StandardScaler) or pass a positive float `gamma`")
        raise ValueError(msg)
    return gamma


def scale_gamma(X, weights=None):
    """``1 / (n_features * Var(X))`` over all entries (scikit-learn SVC's "scale"),
    O(nnz) for scipy.sparse ``X``; 1.0 for constant ``X``."""
    d = X.shape[1]
    if _is_sparse(X):
        data = X.data.astype(np.float64)
        count = float(X.shape[0]) * d
        mean = float(data.sum()) / count  # host floats (cupyx: two reductions on the device)
        var = float(data @ data) / count - mean * mean
    else:  # any namespace (a CuPy X stays on its device): one reduction
        xp = array_namespace(X)
        var = float(xp.var(xp.astype(X, xp.float64)))
    return 1.0 / (d * var) if var > 0 and math.isfinite(var) else 1.0


def check_gamma(gamma, X, bk, seed):
    """The kernel width as a float: ``"median"`` (:func:`median_gamma`), ``"scale"``
    (:func:`scale_gamma`, scikit-learn SVC's default) or a positive float as given."""
    if isinstance(gamma, str):
        if gamma == "scale":
            return scale_gamma(X)
        if gamma != "median":
            msg = f"`gamma` must be 'median', 'scale' or a positive float, got {gamma!r}"
            raise ValueError(msg)
        return median_gamma(X, bk, seed)
    if not isinstance(gamma, numbers.Real) or not (np.isfinite(gamma) and gamma > 0):
        msg = f"`gamma` must be 'median', 'scale' or a positive float, got {gamma!r}"
        raise ValueError(msg)
    return float(gamma)


def check_positive_int(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        msg = f"`{name}` must be an integer >= {minimum}, got {value!r}"
        raise ValueError(msg)
    return int(value)


def check_nonneg_float(name, value, *, positive=False):
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    ok = ok and (value > 0 if positive else value >= 0)
    if not ok:
        kind = "positive" if positive else "non-negative"
        msg = f"`{name}` must be a {kind} finite number, got {value!r}"
        raise ValueError(msg)
    return float(value)


def check_choice(name, value, choices):
    if value not in choices:
        msg = f"`{name}` must be one of {tuple(choices)}, got {value!r}"
        raise ValueError(msg)
    return value


def is_numpy_like(X):
    """NumPy arrays and things NumPy would convert (lists, pandas): not array-API arrays."""
    return not is_array(X) or isinstance(X, np.ndarray)


@contextlib.contextmanager
def naming_arguments():
    """Prefix the argument's name in backticks to a ValueError / TypeError raised
    inside (scikit-learn's validation: its text is kept, as its estimator checks
    match it, e.g. ``"`y`: Unknown label type: continuous"``)."""
    try:
        yield
    except (ValueError, TypeError) as exc:
        text = str(exc)
        if "`" in text:
            raise
        if "inconsistent numbers of samples" in text:
            names = "`X`, `y`"
        elif re.search(r"\by\b|label|target|class", text):
            names = "`y`"
        else:
            names = "`X`"
        raise type(exc)(f"{names}: {text}") from exc


def sklearn_validate(est, X, y, *, reset, check_finite=True):
    """scikit-learn's own validation for NumPy-like inputs (its messages and
    conventions), ours for array-API arrays and cupyx.scipy.sparse matrices (they
    stay on their device).

    ``check_finite=False`` leaves X's NaN / inf to the caller's :func:`check_X` (the
    estimators' fit and predict: one scan of X, not two); ``y`` is checked either way."""
    on_device_sparse = type(X).__module__.startswith("cupyx")  # scikit-learn would copy it to NumPy
    if is_numpy_like(X) and not on_device_sparse and (y is None or is_numpy_like(y)):
        from sklearn.utils.validation import validate_data

        # Estimators over the engine fits take scipy.sparse (any format; the fit makes it CSR).
        sparse = ("csr", "csc", "coo") if getattr(est, "_accept_sparse", False) else False
        kw = {"reset": reset, "dtype": [np.float64, np.float32], "accept_sparse": sparse,
              "ensure_all_finite": check_finite}
        if y is None:
            return validate_data(est, X, **kw)
        return validate_data(est, X, y, y_numeric=isinstance(est, RegressorMixin), **kw)
    if not reset:
        check_n_features(X, est.n_features_in_)
    return X if y is None else (X, y)


def check_prior(prior, name="prior"):
    """A class prior pi_+ in (0, 1) away from 1/2 (where the SU risk is singular)."""
    ok = isinstance(prior, numbers.Real) and not isinstance(prior, bool) and np.isfinite(prior)
    if not ok or not 0.0 < prior < 1.0:
        msg = f"`{name}` must be a float in (0, 1) (the class prior pi_+), got {prior!r}"
        raise ValueError(msg)
    if abs(2.0 * prior - 1.0) < 1e-3:
        msg = (
            f"`{name}`={prior!r} is (within 5e-4 of) 1/2: the SU risk divides by 2 pi_+ - 1, so SU "
            "classification is undefined for balanced classes"
        )
        raise ValueError(msg)
    return float(prior)
