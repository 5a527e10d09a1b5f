"""DSG, UDSG and CDSG: kernel machines by doubly stochastic functional gradients.

Dai et al. (2014) as restated by Li & Poczos, "Utilize Old Coordinates: Faster
Doubly Stochastic Gradients for Kernel Methods" (UAI 2016): Algorithm 1 (DSG),
Algorithm 3 (UDSG: ``G`` new blocks, then ``U`` updates of old blocks drawn
uniformly), Algorithm 4 (CDSG: an old block is updated instead of adding one
when it passes the checking rule (8), with the step of the expected line
search (9)). Each iteration adds (or updates) a *block* of ``block_size``
random features, regenerated from ``(seed, block)`` whenever needed, so the
model is stored as coefficients only.

Beyond the paper, on by default and switchable off (``precondition=None``):
each block step is preconditioned by the mini-batch covariance of the block's
features plus a ridge (a Gauss-Newton step on the block, as the DSG authors'
own code does), which makes every block count and is what lets DSG match
random-feature SGD on real data in the same time.

Examples
--------
>>> from algorithms import dsg
>>> from algorithms.datasets import example_data
>>> X, y = example_data()  # breast cancer, standardised
>>> model = dsg.fit(X, y, n_iter=30, batch_size=256, random_state=0)
>>> float((dsg.predict(model, X) == y).mean()) > 0.95
True
"""

from ._fit import (
    build,
    CLASSIFICATION_LOSSES,
    decision_function,
    fit,
    LOSSES,
    objective,
    PARAMS,
    predict,
)
from ._estimator import DSGClassifier, DSGRegressor

__all__ = ['build', 'decision_function', 'DSGClassifier', 'DSGRegressor', 'fit', 'LOSSES', 'objective', 'predict']
