"""TSGS3VMClassifier: the scikit-learn estimator over :func:`algorithms.tsgs3vm.fit`."""

from __future__ import annotations

from .._models.estimator import N_JOBS, FunctionalClassifier, with_estimator_params
from ..dsg import decision_function, predict
from ._fit import PARAMS, fit


class TSGS3VMClassifier(FunctionalClassifier):
    """Semi-supervised SVM (TSGS3VM) as a scikit-learn estimator.

    ``fit(X, y)`` with unlabeled rows marked ``y == unlabeled_label``, -1 by default
    (scikit-learn's semi-supervised convention, as in ``SelfTrainingClassifier``; give
    another, e.g. 0, for LIBSVM's -1 / +1 labels); the parameters
    are those of :func:`algorithms.tsgs3vm.fit` that a model keeps. No ``probability`` parameter (unlike
    DSG and SBP): its labelled rows are the scarce part, and holding 10% of them
    out for Platt's sigmoid leaves too few for the sigmoid and costs the fit the
    labels it needs most; ``sklearn.calibration.CalibratedClassifierCV`` wraps it.

    Parameters
    ----------
    C : float, default=1.0
        Weight of the mean labeled hinge loss.
    C_star : float or None, default=None
        Weight of the unlabeled loss; None: C n_labeled / n_unlabeled.
    unlabeled_loss : {'shg', 'sshg', 'ramp', 'da'}, default='shg'
        Non-convex loss on the unlabeled rows (the paper's Table 2).
    <parameters kernel to features>
    n_iter : int or None, default=None
        Iterations; None: one pass over the unlabeled data.
    batch_size : int, default=256
        Rows drawn from each of the labeled and unlabeled data.
    <parameters block_size to precondition>
    balance : bool, default=True
        Keep the mean unlabeled prediction at the labeled class balance.
    feature_budget : 'auto', 'sqrt', int or None, default='auto'
        At most this many random features, then old blocks are updated; 'auto': the rule of
        every engine algorithm (about a million multiply-adds a row), 'sqrt': sqrt(n_unlabeled);
        None: no limit.
    unlabeled_label : label, default=-1
        The label that marks an unlabeled row in ``y``.
    <parameters random_state to n_jobs>
    """

    _params = with_estimator_params(PARAMS, N_JOBS)
    _accept_sparse = True  # scipy.sparse X; cupyx.scipy.sparse on cuda: docs/architecture.md, RFF ops
    _fit = staticmethod(fit)
    _decision_function = staticmethod(decision_function)
    _predict = staticmethod(predict)

    def __init__(self, *, C=1.0, C_star=None, unlabeled_loss="shg", kernel="rbf", gamma="median",
                 features="monte_carlo", n_iter=None, batch_size=256, block_size=256, step=1.0, precondition=0.1,
                 balance=True, feature_budget="auto",
                 unlabeled_label=-1, random_state=None, backend="auto", dtype=None, verbose=0,
                 n_jobs=None):
        self._store_params(locals())
