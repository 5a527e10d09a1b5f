"""S3GD: semi-stochastic gradient descent with sparse anchor propagation (linear models).

Wang, Sun, Sun, Li (S3GD), Algorithms 1 and 2. The objective is

    F(w) = (1/n) sum_i c_i psi(w . x_i; y_i) + R(w),

x_i with a constant 1 appended (its weight is the intercept, regularised like
the others, as in the paper), c_i the class weights (1, or Eq. (46)'s balance),
R one of ``lam ||w||^2`` (l2), ``lam ||w||_1`` (l1),
``lam (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2)`` (elasticnet).

S3GD (Algorithm 1): per outer loop, the snapshot w~ and the approximate full
gradient H(w~) of Eq. (22); per inner step on a mini-batch I,
``g = grad psi_I(w) - [grad h_I(w~) - H(w~)]`` (Eq. 8) and a proximal step.
The surrogate h_i (Eq. 19) propagates the loss derivatives of m anchors
(k-means centers snapped to samples, Eq. 13) to each sample through its k
nearest anchors with the Gaussian weights of Eq. (14) (``kbackends.ops``'s
anchor ops). The label coupling of Section 2.4 is handled by splitting by class:
anchor derivatives are taken for y = -1 and y = +1, and the precomputed
products (X M) of Eq. (22) are one per class, so H is two (d x m) products;
for the logistic loss this is exactly the paper's "case 1 / case 2" (rows of
M sum to 1, so the y = -1 product absorbs the ``(1/n) sum_{y=-1} x_i`` term).

``method="svrg"`` (prox-SVRG: exact full gradient per outer loop) and
``method="sgd"`` (prox-SGD) run through the same compiled loop, the same
sampling and the same prox, so their times compare fairly.

Engines: on ``cpu`` the whole run of outer loops between two checkpoints is one
Numba call (``_kernels/_numba.py``); other backends
(array-api-strict, CuPy) run the array-API reference (``_xp.py``), one array op
per step.
"""

from . import _kernels  # noqa: F401  (registers the prox-SGD run with kbackends' kernel registry)
from ._fit import (
    decision_function,
    DEFAULT_INNER_ITER,
    fit,
    LOSSES,
    METHODS,
    objective,
    PARAMS,
    PENALTIES,
    predict,
)
from ._estimator import S3GDClassifier

__all__ = ['decision_function', 'fit', 'LOSSES', 'METHODS', 'objective', 'PENALTIES', 'predict', 'S3GDClassifier']
