"""TSGS3VM: semi-supervised SVM by triply stochastic functional gradients.

Geng, Gu, Li, Shi, Zheng, Huang, "Scalable Semi-Supervised SVM via Triply
Stochastic Gradients" (IJCAI 2019). Objective, Eq. (1):

    (1/2) ||f||^2 + C * mean_labeled hinge(f(x), y) + C_star * E_{x ~ P(x)} u(f(x))

with u one of the non-convex unlabeled losses of Table 2 ("shg": max(0, 1 - |f|),
"sshg", "ramp", "da"). Each iteration draws a labeled batch, an unlabeled batch
and a block of random features (the three sources of randomness) and runs one
step of the shared functional-gradient engine with two data sources.

Class balance (on by default, ``balance=False`` reproduces the paper): before
each step the intercept is shifted so that the mean prediction on the
unlabeled batch equals the labeled mean of y (2 p_+ - 1), the balance
constraint of Chapelle & Zien (2005) and Collobert et al. (2006) that keeps an
S3VM from putting every unlabeled point in one class.

Examples
--------
>>> import numpy as np
>>> from algorithms import tsgs3vm
>>> from algorithms.datasets import example_data
>>> X, y = example_data()  # breast cancer, standardised
>>> y_semi = np.where(np.random.default_rng(0).random(len(y)) < 0.1, y, -1)  # 10% labeled
>>> model = tsgs3vm.fit(X, y_semi, random_state=0)
>>> float((tsgs3vm.predict(model, X) == y).mean()) > 0.9
True
"""

from ._fit import (
    build,
    decision_function,
    fit,
    PARAMS,
    predict,
    UNLABELED_LOSSES,
)
from ._estimator import TSGS3VMClassifier

__all__ = ['build', 'decision_function', 'fit', 'predict', 'TSGS3VMClassifier', 'UNLABELED_LOSSES']
