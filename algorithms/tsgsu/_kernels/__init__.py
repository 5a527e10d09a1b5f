"""TSGSU's per-point coefficients (Eq. (19) of Bao et al. 2018 with the corrected risk,
Eq. (9)): registrations only, made with kbackends' public
:func:`kbackends.register_kernel` when :mod:`algorithms.tsgsu` is imported.

``su_derivatives(f_s, f_u, *, xp, risk, state, smoothing, margin) -> (g_s, g_u)`` for a
``risk`` object (:func:`algorithms.tsgsu.su_risk`'s). ``xp`` is the reference
(``risk.derivative_terms``, the array code: about 95 calls); ``cuda`` is ONE block for the squared and logistic losses (the batch parts A
and B, their variances, the running averages, the signs and both batches'
coefficients), the reference on the device for anything else.
"""

from kbackends import register_kernel

for _impl, _module in (("xp", "_xp"), ("cuda", "_cuda")):
    register_kernel("su_derivatives", _impl, f"{__name__}.{_module}:su_derivatives")
