"""The estimators' explicit ``__init__`` against the one parameter table.

Each estimator writes its ``__init__(self, *, ...)`` out (scikit-learn's rule, readable
by people, IDEs and type checkers); the algorithm's ``PARAMS`` table stays the one place
of each parameter's default and check, and these tests hold the two together: names,
order and defaults (:meth:`ParamTable.init_mismatches`), and the class docstring's
Parameters section.
"""

import ast
import inspect
import pydoc
import re

import numpy as np
import pytest

from algorithms import (
    DSGClassifier,
    DSGRegressor,
    S3GDClassifier,
    SBPClassifier,
    TSGS3VMClassifier,
    TSGSUClassifier,
    dsg,
    s3gd,
    sbp,
    tsgs3vm,
    tsgsu,
)
from algorithms._boundary.params import REQUIRED, ParamTable
from algorithms._models.calibration import PROBABILITY
from algorithms._models.estimator import N_JOBS, WARM_START

ESTIMATORS = {
    DSGClassifier: dsg, DSGRegressor: dsg, TSGS3VMClassifier: tsgs3vm, TSGSUClassifier: tsgsu,
    SBPClassifier: sbp, S3GDClassifier: s3gd,
}
BY_NAME = pytest.mark.parametrize("cls", list(ESTIMATORS), ids=lambda c: c.__name__)


def _assert_init_is_the_table(cls):
    assert cls._params.init_mismatches(cls.__init__) == []


@BY_NAME
def test_init_is_the_table(cls):
    """Names, order and defaults of ``__init__`` are the table's estimator view."""
    _assert_init_is_the_table(cls)
    for p in cls._params.estimator_params():
        assert p.init_default is not REQUIRED
        # the estimator narrows (never widens) the function's table, but for its own parameters:
        # `probability` (the estimator holds rows out and calibrates: algorithms._models.calibration),
        # `n_jobs` and `warm_start` (the estimator base and DSG's estimators handle them)
        assert p.name in ESTIMATORS[cls].PARAMS or p in (PROBABILITY, N_JOBS, WARM_START)
    est = cls()
    assert est.get_params() == {p.name: p.init_default for p in cls._params.estimator_params()}
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        cls(bogus=1)
    with pytest.raises(TypeError, match="positional"):
        cls(1)  # keyword-only


@BY_NAME
def test_init_only_stores(cls):
    """No check and no conversion in ``__init__``: ``fit`` validates (scikit-learn's rule)."""
    values = {name: object() for name in cls().get_params()}
    est = cls(**values)
    assert all(getattr(est, name) is value for name, value in values.items())


def _documented(cls):
    """``{name: default as written}`` of the class docstring's numpydoc Parameters section, in order."""
    doc = inspect.getdoc(cls)
    section = re.search(r"^Parameters\n-+\n(.*?)(?:\n\n[A-Z][a-z]+\n-+\n|\Z)", doc, re.DOTALL | re.MULTILINE)
    assert section, f"{cls.__name__}'s docstring has no Parameters section"
    return {m.group(1): m.group(2) for m in re.finditer(r"^(\w+) : .*, default=(.*)$", section.group(1), re.MULTILINE)}


@BY_NAME
def test_docstring_lists_every_parameter(cls):
    """The Parameters section: every parameter, in order, with the table's default."""
    names = [p.name for p in cls._params.estimator_params()]
    documented = _documented(cls)
    assert list(documented) == names
    for p in cls._params.estimator_params():
        assert ast.literal_eval(documented[p.name]) == p.init_default, p.name
    assert "parameters:" not in inspect.getdoc(cls)  # every <...: ...> line filled in (FunctionalEstimator)
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    for name in names:
        assert re.search(rf"\b{name} : ", text), name


# --- the check fails on a planted mismatch ------------------------------------------------------------


def _planted(cls, **change):
    """``cls``'s table with one parameter's estimator default changed."""
    (name, default), = change.items()
    return cls._params.replace(**{name: {"estimator_default": default}})


@pytest.mark.parametrize(("cls", "name", "default"), [
    (DSGClassifier, "lam", 1e-5),
    (DSGRegressor, "loss", "hinge"),
    (SBPClassifier, "nu", 0.5),
    (S3GDClassifier, "step", 1.0),
    (TSGSUClassifier, "positive_class", 1.0),  # 1 and 1.0 are equal, not the same default
    (TSGS3VMClassifier, "feature_budget", "sqrt"),
], ids=lambda v: v.__name__ if isinstance(v, type) else str(v))
def test_a_default_that_differs_fails(monkeypatch, cls, name, default):
    monkeypatch.setattr(cls, "_params", _planted(cls, **{name: default}))
    mismatches = cls._params.init_mismatches(cls.__init__)
    assert len(mismatches) == 1 and mismatches[0].startswith(f"{name}: default "), mismatches
    with pytest.raises(AssertionError):
        _assert_init_is_the_table(cls)


def test_a_renamed_missing_or_positional_argument_fails():
    table = DSGRegressor._params

    def renamed(self, *, lose="squared"):
        pass

    def positional(self, loss="squared"):
        pass

    assert "lose != loss" in table.init_mismatches(renamed)
    assert "loss is not keyword-only" in table.init_mismatches(positional)
    missing = table.init_mismatches(lambda self, *, loss="squared": None)
    assert missing == [f"1 arguments, {len(table.estimator_params())} estimator parameters in the table"]
    reordered = inspect.signature(DSGRegressor.__init__).parameters
    names = [n for n in reordered if n != "self"]
    names[1], names[2] = names[2], names[1]
    swapped = inspect.Signature([inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + [
        reordered[n] for n in names])

    def swapped_init(self, **kw):
        pass

    swapped_init.__signature__ = swapped
    assert table.init_mismatches(swapped_init) == [f"{names[1]} != {names[2]}", f"{names[2]} != {names[1]}"]


# --- checked once per public call -----------------------------------------------------------------------

FAST = {
    DSGClassifier: {"n_iter": 3, "batch_size": 32, "block_size": 8},
    DSGRegressor: {"n_iter": 3, "batch_size": 32, "block_size": 8},
    TSGS3VMClassifier: {"n_iter": 3, "batch_size": 32, "block_size": 8},
    TSGSUClassifier: {"n_iter": 3, "batch_size": 32, "block_size": 8, "prior": 0.7},
    SBPClassifier: {"nu": 0.1, "n_iter": 20},
    S3GDClassifier: {"max_epochs": 1.0, "n_anchors": 5},
}


def _data(n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] > 0).astype(int)


def _target(cls, X, y):
    if cls is DSGRegressor:
        return X[:, 0]
    if cls is TSGS3VMClassifier:
        return np.where(np.arange(len(y)) % 3 == 0, y, -1)  # unlabeled rows: -1
    return y


def _function_fit(cls, X, y, **kw):
    """The functional fit the estimator ``cls`` runs, on the same rows and parameters."""
    kw = {**FAST[cls], **kw}
    if cls is TSGSUClassifier:
        return tsgsu.fit(X[y == 1], X[y == 0], **kw)
    if cls is DSGRegressor:
        kw["loss"] = "squared"
    return ESTIMATORS[cls].fit(X, _target(cls, X, y), **kw)


@BY_NAME
def test_fit_validates_the_parameters_once(monkeypatch, cls):
    """The estimator checks its table, then runs the function's body unchecked: one
    validation per fit (the function alone validates once too)."""
    calls = []
    validate = ParamTable.validate

    def counted(self, values):
        calls.append(self)
        return validate(self, values)

    monkeypatch.setattr(ParamTable, "validate", counted)
    X, y = _data()
    cls(**FAST[cls], random_state=0).fit(X, _target(cls, X, y))
    assert calls == [cls._params]
    calls.clear()
    _function_fit(cls, X, y)
    assert calls == [ESTIMATORS[cls].PARAMS]


@BY_NAME
def test_unchecked_fit_is_the_checked_fit(cls):
    """The estimator's model is the function's, to the bit (the values the body takes are the same)."""
    X, y = _data()
    est = cls(**FAST[cls], random_state=0).fit(X, _target(cls, X, y))
    model = _function_fit(cls, X, y, random_state=0)
    np.testing.assert_array_equal(est.decision_function(X) if hasattr(est, "decision_function") else est.predict(X),
                                  model.decision_function(X))


@BY_NAME
def test_x_values_are_checked_once_by_check_X(cls):
    """A NaN or an inf in X is refused by the function's check_X (its message), not first
    by a second scan in scikit-learn's validation; in fit and in predict."""
    X, y = _data()
    target = _target(cls, X, y)
    est = cls(**FAST[cls], random_state=0).fit(X, target)
    for bad_value in (np.nan, np.inf):
        bad = X.copy()
        bad[5, 1] = bad_value
        with pytest.raises(ValueError, match=r"^`X\w*` contains NaN or infinite values"):
            cls(**FAST[cls], random_state=0).fit(bad, target)
        with pytest.raises(ValueError, match=r"^`X` contains NaN or infinite values"):
            est.predict(bad)


def test_probability_refuses_a_nan_before_fitting(monkeypatch):
    """probability=True fits on 90% of the rows: a NaN in a held-out row is refused up front."""
    from algorithms import dsg as dsg_package

    X, y = _data()
    bad = X.copy()
    bad[:, 1] = np.nan
    fits = []
    monkeypatch.setattr(dsg_package.fit, "unchecked", lambda *a, **k: fits.append(1))
    with pytest.raises(ValueError, match="NaN"):
        DSGClassifier(**FAST[DSGClassifier], probability=True).fit(bad, y)
    assert fits == []
