"""SBP: the kernelized Stochastic Batch Perceptron.

Cotter, Shalev-Shwartz, Srebro, "The Kernelized Stochastic Batch Perceptron"
(ICML 2012). The slack-constrained SVM (Problem 2.3)

    max_{||w|| <= 1}  f(w),   f(w) = max_{xi >= 0, 1'xi <= n nu} min_i y_i <w, phi(x_i)> + xi_i

is optimised by stochastic supergradient ascent (Algorithm 1 of Appendix B):
keep all responses ``c_i = y_i f(x_i)``; each iteration pours the slack volume
``n nu`` over them (the water level gamma, Section 3.2), samples a point under
water, adds ``eta_t`` to its coefficient, updates every response by one kernel
row (:func:`kbackends.ops.kernel_response_update`), tracks ``||w||^2``
incrementally and projects back onto the unit ball by rescaling. The result is
the averaged iterate ``alpha_bar / gamma(c_bar)``.

With ``bias=True`` (Section 3.6) the level and the unregularised bias come from
the two-basin water-fill (:func:`kbackends.ops.water_level_biased`). More than
two classes: one SBP per class (one-vs-rest), all classes' levels from one
segmented water-fill call per iteration.

Implementation notes
--------------------
* Rescaling is O(1): the coefficients and responses are stored unscaled with
  one scale factor ``s`` per class (``alpha = s a``, ``c = s c_raw``); the water
  level is scale-covariant (``level(s c, V) = s level(c, V / s)``), so neither
  is ever multiplied out during the run.
* The averaged iterate is O(1) amortised per changed coefficient: with
  ``S_t = s_1 + ... + s_t``, ``sum_t alpha_t = S_T a - B`` where ``B`` collects
  ``delta * S_(t0 - 1)`` for a change ``delta`` of ``a`` at iteration t0. The
  averaged responses (needed once, for the final level) cost one O(n) axpy per
  iteration, which the O(n d) response update dominates.
* ``batch_size > 1`` draws that many points from under the water per
  iteration and gives each ``eta_t / batch_size`` (the minibatch average of the
  supergradients); the response update is then one BLAS product per row chunk,
  several times cheaper per point than one kernel row at a time.

Examples
--------
>>> from algorithms import sbp
>>> from algorithms.datasets import example_data
>>> X, y = example_data()  # breast cancer, standardised
>>> model = sbp.fit(X, y, nu=0.05, n_iter=2000, random_state=0)
>>> float((sbp.predict(model, X) == y).mean()) > 0.95
True
"""

from . import _kernels  # noqa: F401  (registers the draw step and the average with kbackends' kernel registry)
from ._fit import (
    decision_function,
    fit,
    KERNELS,
    nu_from_svm,
    PARAMS,
    predict,
)
from ._estimator import SBPClassifier

__all__ = ['decision_function', 'fit', 'KERNELS', 'nu_from_svm', 'predict', 'SBPClassifier']
