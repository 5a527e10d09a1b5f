"""One scikit-learn estimator base for every algorithm module.

A subclass names its module's parameter table and functions and writes its
``__init__`` out (keyword-only arguments it only stores, scikit-learn's rule; a test
holds it to the table: :meth:`~algorithms._boundary.params.ParamTable.init_mismatches`);
the base validates the data the scikit-learn way, and hands ``fit`` the module's
arguments through one hook, :meth:`FunctionalEstimator._fit_args`, for the label
conventions that differ:
- supervised (the default): ``fit(X, y)``;
- semi-supervised: unlabeled rows carry ``y == -1`` and the module's ``fit`` splits them;
- SU: ``y`` is the indicator s, and the hook splits the rows into similar and unlabeled;
- regression: ``RegressorMixin`` first, ``y`` numeric, no ``classes_``.
"""

from __future__ import annotations

import inspect
import re
import textwrap

import contextlib

import numba
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, is_classifier
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from kbackends import array_namespace

from .._boundary.fit_plan import weights_of_rows
from .._boundary.params import Param, ParamTable, boolean, either, integer, options
from .._boundary.validation import check_labels, is_numpy_like, naming_arguments, sklearn_validate
from .calibration import fit_calibrated
from .dask_arrays import is_dask_array

#: The numpydoc Parameters entries, ``name: (type, description)``, of the settings several
#: estimators share (the table's ``common()`` definitions), written once; a subclass adds its
#: own in ``_doc_entries``. A class docstring's line ``<parameters FIRST to LAST>`` stands for
#: the entries of its table's estimator parameters FIRST through LAST, each with the table's
#: default (so a default is written in one place, the table).
DOC_ENTRIES = {
    "kernel": ("{'rbf', 'laplacian'}", "Shift-invariant kernel of the random features."),
    "gamma": ("'median', 'scale' or float", ("Kernel width; 'median': 1 / median squared distance, 'scale': "
                                              "1 / (n_features Var X), scikit-learn SVC's default.")),
    "features": ("{'monte_carlo', 'orthogonal', 'qmc'}", ("How each block's rbf frequencies are placed: independent "
                                                          "Gaussian draws, orthogonal random features, or scrambled "
                                                          "Halton (quasi-Monte-Carlo) points; the last two approximate "
                                                          "the kernel with fewer features and need kernel='rbf'.")),
    "block_size": ("int", "Random features per block."),
    "step": ("float", "Theta of the step schedule."),
    "schedule": ("{'auto', 'theta_over_t', 'constant', 'inverse_scaling'}", "Step schedule."),
    "precondition": ("float or None", "Relative ridge of the block preconditioner; None: plain steps."),
    "average": ("bool", "Return the Polyak average of the iterates."),
    "feature_budget": ("'auto', int or None", ("At most this many random features; once reached, each iteration "
                                               "updates an old block, so a pass over the data costs O(n). 'auto': "
                                               "about a million multiply-adds a row (~20,000 features for 20 dense "
                                               "features); None: no limit.")),
    "fit_intercept": ("bool", "Learn an unpenalised constant."),
    "random_state": ("None, int or numpy Generator / RandomState",
                     "Seed of the random draws (the same seed gives the same model on every backend)."),
    "backend": ("{'auto', 'cpu', 'cuda'} or Backend", "'auto': the inputs' namespace."),
    "dtype": ("{'float32', 'float64'} or None", ("Compute dtype; None: float32 whatever the input (S3GD: the "
                                                 "input's own), float64 where float32 would overflow; "
                                                 "'float64': full precision.")),
    "verbose": ("int", ("0: silent; 1: a progress bar on stderr (iterations, rows read, passes, the held-out loss; "
                        "the time left excludes compilation).")),
    "class_weight": ("None, 'balanced' or dict", ("Per-class weights of the loss, times the sample weights "
                                                   "(scikit-learn's rule); 'balanced': n / (n_classes n_c).")),
    "n_jobs": ("None or int", ("Threads of the cpu engine's compiled (Numba) kernels during ``fit``; None or -1: "
                               "all (Numba's thread count, ``NUMBA_NUM_THREADS``). The model does not depend on it (S3GD's: "
                               "at rounding, its sums' order).")),
    "warm_start": ("bool", ("Continue the previous ``fit`` (its blocks, step schedule and draws) up to ``n_iter`` "
                            "iterations in all; False: start over.")),
    "probability": ("bool", ("``predict_proba`` for any loss: the model is fitted on 90% of the rows and Platt's "
                             "sigmoid on the other 10% (:mod:`algorithms._models.calibration`).")),
}


#: Estimator parameters that are no argument of a module's ``fit``: the estimator handles them.
N_JOBS = Param("n_jobs", None, either(options(None, -1), integer(1)),
               "threads of the cpu engine's compiled kernels during fit; None or -1: all")
WARM_START = Param("warm_start", False, boolean(), "continue the previous fit up to n_iter iterations in all")


def with_estimator_params(table, *params):
    """An estimator's table: the module's ``table`` plus estimator-only ``params``
    (:data:`N_JOBS`, :data:`WARM_START`, ``probability``)."""
    return ParamTable(*table.params, *params)


@contextlib.contextmanager
def numba_threads(n_jobs):
    """Numba's thread count set to ``n_jobs`` (None or -1: all of ``NUMBA_NUM_THREADS``,
    more is clipped to it) within the block, the caller's restored after."""
    before = numba.get_num_threads()
    wanted = numba.config.NUMBA_NUM_THREADS if n_jobs in (None, -1) else min(n_jobs, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(wanted)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _doc_entries(cls, first, last):
    """The Parameters entries of ``cls``'s estimator parameters ``first`` through ``last``."""
    names = [p.name for p in cls._params.estimator_params()]
    lines = []
    for name in names[names.index(first):names.index(last) + 1]:
        kind, text = cls._doc_entries[name]
        lines.append(f"    {name} : {kind}, default={cls._params[name].init_default!r}")
        lines += textwrap.wrap(text, 104, initial_indent=" " * 8, subsequent_indent=" " * 8)
    return "".join(line + "\n" for line in lines)


class FunctionalEstimator(BaseEstimator):
    """A scikit-learn estimator over a module's ``fit`` / ``decision_function`` / ``predict``.

    Subclasses set ``_params`` (the estimator's :class:`~algorithms._boundary.params.ParamTable`:
    the module's, or a narrowed copy plus ``probability``), ``_fit`` / ``_decision_function`` /
    ``_predict`` (the module's functions, as ``staticmethod``) and an explicit ``__init__``
    with the table's estimator parameters. ``fit`` validates ``X`` and ``y``, calls
    ``_fit(*self._fit_args(X, y), **self.get_params())`` and keeps the model as ``model_``.
    CuPy in, CuPy out.
    """

    _params = None
    _doc_entries = DOC_ENTRIES  # the docstring's shared Parameters entries (see DOC_ENTRIES)
    #: Whether ``_fit`` / ``_predict`` take scipy.sparse ``X`` (validated as any
    #: format, handed over as is; the fit makes it CSR).
    _accept_sparse = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = type(self)._accept_sparse
        return tags

    def _store_params(self, arguments):
        """Store every argument of the explicit ``__init__`` (its ``locals()``) under its
        name, unchanged: scikit-learn's rule, no check and no conversion before ``fit``."""
        for name, value in arguments.items():
            if name != "self":
                setattr(self, name, value)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        doc = cls.__dict__.get("__doc__")
        if doc and cls._params is not None:  # the docstring's <parameters FIRST to LAST> lines filled in
            cls.__doc__ = re.sub(r"^    <parameters (\w+) to (\w+)>\n", lambda m: _doc_entries(cls, m[1], m[2]), doc,
                                 flags=re.MULTILINE)

    def _fit_args(self, X, y, rows=None):
        """The module ``fit``'s positional arguments from validated ``(X, y)``: the hook
        for a label convention (default: ``(X, y)``)."""
        return X, y

    def fit(self, X, y):
        """Fit on (X, y); CuPy in, model on the GPU; a dask array trains on the cluster."""
        if y is None:
            msg = f"`y`: {type(self).__name__} requires y to be passed, but the target y is None"
            raise ValueError(msg)
        # The one check of the parameters: the estimator's own table (it may narrow the
        # function's, a classifier's losses, and adds `probability`); the function's body
        # then takes the validated values unchecked (ParamTable.entry).
        values = type(self)._params.validate(self.get_params())
        with numba_threads(values.get("n_jobs")):
            return self._fit_validated(X, y, values)

    def _module_fit(self, values):
        """The module ``fit`` this fit calls with validated values (a subclass may continue a
        previous fit instead: DSG's ``warm_start``)."""
        return type(self)._fit.unchecked

    def _fit_validated(self, X, y, values):
        """:meth:`fit` with the parameters validated (``values``)."""
        params = self._function_params(values)
        fit = self._module_fit(values)
        calibrated = bool(values.get("probability", False))
        if is_dask_array(X):  # data-parallel on the cluster (dsg, tsgs3vm, tsgsu): chunks stay lazy
            if calibrated:
                msg = "`probability=True` needs in-memory rows (NumPy, CuPy, sparse) to hold out; got a dask array"
                raise ValueError(msg)
            self.model_ = fit(*self._fit_args(X, y), **params)
        else:
            with naming_arguments():
                if is_classifier(self) and is_numpy_like(y) and np.asarray(y).dtype.kind == "O":
                    check_labels(y, None)  # mixed str / number labels: scikit-learn fails on a sort
                # X's values are checked once, by the function's check_X; with probability=True the
                # function sees only the fit rows, so scikit-learn's scan refuses a NaN in a held-out
                # row before the fit rather than after it.
                X, y = sklearn_validate(self, X, y, reset=True, check_finite=calibrated)
                if is_classifier(self) and is_numpy_like(y):
                    from sklearn.utils.multiclass import check_classification_targets

                    check_classification_targets(y)
            if calibrated:  # Platt's sigmoid on held-out rows (algorithms._models.calibration)

                self.model_ = fit_calibrated(lambda X_fit, y_fit, rows, **kw: fit(
                    *self._fit_args(X_fit, y_fit, rows), **kw), X, y, params)
            else:
                self.model_ = fit(*self._fit_args(X, y), **params)
        self.n_features_in_ = self.model_.n_features_in
        if is_classifier(self):
            self.classes_ = np.asarray(self.model_.classes)
        return self

    def _function_params(self, values=None):
        """The parameters the module's ``fit`` takes (an estimator may have more of its own,
        such as ``probability``), from ``values`` (default: ``get_params()``)."""
        taken = inspect.signature(type(self)._fit).parameters
        return {k: v for k, v in (self.get_params() if values is None else values).items() if k in taken}

    def _validated(self, X):
        check_is_fitted(self, "model_")
        if is_dask_array(X):  # predicted chunk-wise and lazily by the model (algorithms._models.dask_arrays)
            return X
        with naming_arguments():  # X's values: checked once, by the model's check_X
            return sklearn_validate(self, X, None, reset=False, check_finite=False)

    def predict(self, X):
        """Predicted labels (or values for a regressor); CuPy in, CuPy out."""
        X = self._validated(X)  # checks it is fitted first
        return type(self)._predict(self.model_, X)


class FunctionalClassifier(ClassifierMixin, FunctionalEstimator):
    """:class:`FunctionalEstimator` for classifiers: ``classes_`` and ``decision_function``."""

    def decision_function(self, X):
        """Decision values: (n_samples,) for two classes, else (n_samples, n_classes)."""
        X = self._validated(X)
        return type(self)._decision_function(self.model_, X)

    def _has_proba(self):
        """predict_proba exists for the logistic loss (log-odds decision values) and for
        ``probability=True`` (Platt's sigmoid fitted on held-out rows)."""
        fitted = getattr(self, "model_", None)
        if fitted is not None:
            return fitted.has_proba
        return getattr(self, "loss", None) == "logistic" or bool(getattr(self, "probability", False))

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities, (n_samples, n_classes) in ``classes_`` order: the logistic
        loss's log-odds, or with ``probability=True`` Platt's calibrated sigmoid (see
        :meth:`algorithms._models.prediction.Predictor.predict_proba` and
        :mod:`algorithms._models.calibration`). CuPy in, CuPy out; a dask array in, a lazy one out."""
        X = self._validated(X)
        return self.model_.predict_proba(X)

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """The logarithm of :meth:`predict_proba` (scikit-learn's companion; -inf where a
        probability is 0). Same namespace in as out."""
        proba = self.predict_proba(X)
        if is_dask_array(proba):
            return proba.map_blocks(_log, dtype=proba.dtype)
        return _log(proba)


def _log(a):
    xp = array_namespace(a)
    with np.errstate(divide="ignore"):
        return xp.log(a)


class WeightedFit:
    """``fit(X, y, sample_weight=None)`` for the estimators whose module ``fit`` takes
    ``sample_weight`` (DSG, SBP, S3GD; put it before the estimator base): the weights
    reach the module's ``fit`` through ``_fit_args``, which ``probability=True`` calls
    with the rows it keeps for the fit. Sets ``n_iter_`` from :meth:`_n_iter_done`."""

    def fit(self, X, y, sample_weight=None):
        """Fit on (X, y), rows weighted by ``sample_weight`` (scikit-learn's semantics:
        weight k acts as the row repeated k times, 0 as the row removed; negative
        weights are refused; see the module's ``fit``). Sets ``n_iter_``."""
        if sample_weight is not None and is_dask_array(X):
            msg = "`sample_weight` is not supported with dask arrays"
            raise ValueError(msg)
        self._sample_weight = sample_weight
        try:
            super().fit(X, y)
        finally:
            del self._sample_weight
        self.n_iter_ = self._n_iter_done()
        return self

    def _n_iter_done(self):
        """Iterations run (fewer than asked when a stopping rule ended the fit)."""
        return int(self.model_.params["n_iter_done"])

    def _fit_args(self, X, y, rows=None):
        return X, y, weights_of_rows(getattr(self, "_sample_weight", None), rows)

