"""One validation boundary (issue 16, item 1): each algorithm's hyper-parameters are
declared once (its ``PARAMS`` table) and checked once at entry, by the function and the
estimator alike; labels are checked the same way for every classifier."""

import numpy as np
import pytest

import algorithms
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
from algorithms._boundary.params import GAMMA, RANDOM_STATE, ParamTable

MODULES = {"dsg": dsg, "tsgs3vm": tsgs3vm, "tsgsu": tsgsu, "sbp": sbp, "s3gd": s3gd}
ESTIMATORS = {
    DSGClassifier: dsg, DSGRegressor: dsg, TSGS3VMClassifier: tsgs3vm, TSGSUClassifier: tsgsu,
    SBPClassifier: sbp, S3GDClassifier: s3gd,
}
# Small, fast settings per module (the checks fail before any training).
FAST = {
    dsg: {"n_iter": 3, "batch_size": 32, "block_size": 8},
    tsgs3vm: {"n_iter": 3, "batch_size": 32, "block_size": 8},
    tsgsu: {"n_iter": 3, "batch_size": 32, "block_size": 8, "prior": 0.7},
    sbp: {"nu": 0.1, "n_iter": 20},
    s3gd: {"max_epochs": 1.0, "n_anchors": 5},
}


def _data(n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] > 0).astype(int)
    return X, y


def _fit(module, X, y, **kw):
    kw = {**FAST[module], **kw}
    if module is tsgsu:
        return tsgsu.fit(X[y == 1], X[y == 0], **kw)
    return module.fit(X, y, **kw)


# --- the tables --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MODULES))
def test_fit_signature_is_the_table(name):
    """The function's keyword arguments are the table's, in order, with its defaults."""
    module = MODULES[name]
    assert isinstance(module.PARAMS, ParamTable)
    assert module.PARAMS.signature_mismatches(module.fit) == []


def test_every_param_has_a_doc_line():
    for module in MODULES.values():
        for p in module.PARAMS.params:
            assert p.doc and "\n" not in p.doc, (module.__name__, p.name)


def test_shared_constraints_messages():
    with pytest.raises(TypeError, match=r"`gamma` must be one of \('median', 'scale'\) or a positive float, got True"):
        GAMMA.check("gamma", True)
    with pytest.raises(ValueError, match=r"`gamma` must be one of \('median', 'scale'\) or a positive float, got inf"):
        GAMMA.check("gamma", float("inf"))
    assert GAMMA.check("gamma", np.float32(0.5)) == 0.5
    assert RANDOM_STATE.check("random_state", np.int64(3)) == 3
    assert RANDOM_STATE.check("random_state", 2**64 - 1) == 2**64 - 1


# --- hyper-parameters: the same check for the function and the estimator ---------------------------


@pytest.mark.parametrize("name", sorted(MODULES))
@pytest.mark.parametrize(
    ("param", "value", "error", "expected"),
    [
        ("gamma", True, TypeError, "`gamma` must be one of ('median', 'scale') or a positive float, got True"),
        ("gamma", -1.0, ValueError, "`gamma` must be one of ('median', 'scale') or a positive float, got -1.0"),
        ("random_state", 2**64, ValueError, "`random_state` must be None or an integer in [0, 2**64)"),
        ("random_state", -1, ValueError, "`random_state` must be None or an integer"),
        ("random_state", "0", TypeError, "`random_state` must be None or an integer"),
        ("batch_size", 0, ValueError, "`batch_size` must be an integer >= 1, got 0"),
        ("batch_size", 2.5, TypeError, "`batch_size` must be an integer >= 1, got 2.5"),
        ("batch_size", True, TypeError, "`batch_size` must be an integer >= 1, got True"),
    ],
)
def test_bad_hyper_parameters_name_the_argument(name, param, value, error, expected):
    module = MODULES[name]
    if param not in module.PARAMS:
        pytest.skip(f"{name} has no `{param}`")
    if name == "dsg" and param == "batch_size":  # DSG's batch_size also takes "auto"
        expected = expected.replace("must be an", "must be 'auto' or an")
    X, y = _data()
    with pytest.raises(error, match=expected.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("*", r"\*")):
        _fit(module, X, y, **{param: value})
    est_cls = next(c for c, m in ESTIMATORS.items() if m is module)
    params = {k: v for k, v in FAST[module].items() if k in est_cls._params}
    with pytest.raises(error, match="`" + param + "`"):
        est_cls(**{**params, param: value}).fit(X, y)


def test_numpy_integers_are_integers():
    X, y = _data()
    model = dsg.fit(X, y, n_iter=np.int64(3), batch_size=np.int32(32), block_size=8, random_state=np.uint64(5))
    assert model.n_blocks == 3


def test_loss_and_task_must_agree():
    """DSGClassifier(loss="squared") returned floats and DSGRegressor(loss="hinge") labels."""
    X, y = _data()
    with pytest.raises(ValueError, match=r"`loss` must be one of \('hinge', 'squared_hinge', 'logistic'\), "
                                         r"got 'squared'"):
        DSGClassifier(loss="squared", **FAST[dsg]).fit(X, y)
    with pytest.raises(ValueError, match="`loss` must be 'squared', got 'hinge'"):
        DSGRegressor(loss="hinge", **FAST[dsg]).fit(X, X[:, 0])
    pred = DSGClassifier(loss="logistic", **FAST[dsg], random_state=0).fit(X, y).predict(X)
    assert set(np.unique(pred)) <= {0, 1} and pred.dtype.kind == "i"


def test_tsgs3vm_precondition_error_names_its_own_parameters():
    X, y = _data()
    with pytest.raises(ValueError, match="lower `step` or raise `C`") as info:
        tsgs3vm.fit(X, np.where(np.arange(len(y)) % 3 == 0, y, -1), precondition=None, step=2.0, C=1.0, n_iter=3)
    assert "`lam`" not in str(info.value)


def test_tsgsu_table_constraints():
    X, y = _data()
    with pytest.raises(ValueError, match=r"`correction_smoothing` must be in \[0, 1\), got 1.0"):
        _fit(tsgsu, X, y, correction_smoothing=1.0)
    with pytest.raises(ValueError, match=r"`prior` must be in \(0, 1\) or None, got 1.5"):
        _fit(tsgsu, X, y, prior=1.5)
    with pytest.raises(ValueError, match="`prior`=0.5 is"):
        _fit(tsgsu, X, y, prior=0.5)


# --- labels: the same checks for every classifier -----------------------------------------------


def _labels_cases(y):
    nan = y.astype(float)
    nan[3] = np.nan
    mixed = np.array([1, "a"] * (len(y) // 2), dtype=object)
    return [
        ("nan", nan, ValueError, "`y` contains NaN or infinite labels"),
        ("continuous", y + 0.25, ValueError, "`y` has continuous values"),
        ("complex", y.astype(complex), ValueError, "`y` has complex labels"),
        ("mixed", mixed, TypeError, "`y` mixes label types"),
        ("none", None, ValueError, "`y` is required, got None"),
        ("2-D", np.stack([y, y], axis=1), ValueError, r"`y` must be 1-D \(n_samples,\), got shape"),
    ]


@pytest.mark.parametrize("name", ["dsg", "tsgs3vm", "sbp", "s3gd"])
@pytest.mark.parametrize("case", range(6), ids=["nan", "continuous", "complex", "mixed", "none", "2-D"])
def test_bad_labels_are_rejected_by_every_classifier(name, case):
    module = MODULES[name]
    X, y = _data()
    _, bad, error, expected = _labels_cases(y)[case]
    if module is tsgs3vm and bad is not None and bad.ndim == 1:
        bad = bad.copy()
        bad[np.arange(len(bad)) % 4 == 1] = -1  # semi-supervised: unlabeled rows are exempt, not the rest
    with pytest.raises(error, match=expected):
        module.fit(X, bad, **FAST[module])


def test_tsgs3vm_labels_are_validated():
    """NaN in a labelled row became a class; continuous y one output per value."""
    X, y = _data()
    y_semi = np.where(np.arange(len(y)) % 3 == 0, y, -1).astype(float)
    y_semi[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        tsgs3vm.fit(X, y_semi, n_iter=3)
    with pytest.raises(ValueError, match="continuous"):
        tsgs3vm.fit(X, X[:, 0], n_iter=3)
    # string labels with an unlabeled marker of the same kind work
    y_str = np.where(np.arange(len(y)) % 3 == 0, np.where(y == 1, "b", "a"), "?")
    model = tsgs3vm.fit(X, y_str, unlabeled_label="?", n_iter=3, random_state=0)
    assert list(model.classes) == ["a", "b"]


def test_dsg_regression_rejects_complex_targets():
    X, _ = _data()
    with pytest.raises(ValueError, match="`y` has a complex dtype"):
        dsg.fit(X, X[:, 0].astype(complex), loss="squared", **FAST[dsg])


def test_estimators_reject_y_none():
    X, _ = _data()
    for cls in ESTIMATORS:
        with pytest.raises(ValueError, match="requires y to be passed"):
            cls().fit(X, None)


def test_package_exports_the_tables():
    for module in MODULES.values():
        assert module.PARAMS is getattr(algorithms, module.__name__.split(".")[-1]).PARAMS


@pytest.mark.parametrize("name", sorted(MODULES))
def test_features_whose_squares_overflow_are_refused(name):
    """|x| ~ 1e20 in float32 is finite but its square is not: a clear error, not a chance-level model."""
    module = MODULES[name]
    X, y = _data()
    X = X.astype(np.float32)
    X[:, 1] *= np.float32(1e20)
    with pytest.raises(ValueError, match="overflow float32; standardise the features"):
        _fit(module, X, y)
    # the same scale in float64 is fine
    _fit(module, X.astype(np.float64) / 1e10, y)


def test_su_data_helpers_reject_nan():
    X, y = _data()
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="`X` contains NaN"):
        tsgsu.make_su_data(bad, y, 10, 10)
    y_nan = y.astype(float)
    y_nan[0] = np.nan
    with pytest.raises(ValueError, match="`y` contains NaN"):
        tsgsu.make_su_data(X, y_nan, 10, 10)
    X_s, X_u = tsgsu.make_su_data(X, y, 10, 20, replace=True, random_state=0)
    X_u[0, 0] = np.nan
    with pytest.raises(ValueError, match="`X_unlabeled` contains NaN"):
        tsgsu.su_sl_fit(X_s, X_u, 0.7)


@pytest.mark.parametrize("fit", [
    lambda X, y: __import__("algorithms").dsg.fit(X, y, gamma="scale", n_iter=3, dtype="float64"),
    lambda X, y: __import__("algorithms").tsgs3vm.fit(X[:60], y[:60], X[60:], gamma="scale", n_iter=3,
                                                      dtype="float64"),
    lambda X, y: __import__("algorithms").DSGClassifier(gamma="scale", n_iter=3, dtype="float64").fit(X, y).model_,
], ids=["dsg", "tsgs3vm", "DSGClassifier"])
def test_gamma_scale_is_scikit_learns_everywhere_the_width_is(fit):
    """gamma="scale" (1 / (n_features Var X), SVC's default) worked on SBP only, while the
    command line's help offered it for DSG."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5)) * 3.0
    y = (X[:, 0] > 0).astype(int)
    assert fit(X, y).gamma == pytest.approx(1.0 / (X.shape[1] * X.var()), rel=1e-12)


def test_gamma_scale_for_tsgsu_reads_the_pooled_points():
    from algorithms import tsgsu

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4)) * 2.0
    S, U = tsgsu.make_su_data(X, np.where(X[:, 0] > 0, 1, -1), 60, 200, random_state=0, replace=True)
    model = tsgsu.fit(S, U, prior=0.4, gamma="scale", n_iter=3, dtype="float64", random_state=0)
    pooled = np.concatenate([np.asarray(S).reshape(-1, 4), U])
    assert model.gamma == pytest.approx(1.0 / (4 * pooled.var()), rel=1e-12)
