"""The engine's loss derivatives on a mini-batch, and the mean loss of early stopping's
held-out rows: registrations only.

``loss_derivative(f, y, *, xp, loss, weight)`` is ``loss.derivative(f, y, xp) * weight``
for a :class:`kbackends.losses.Loss` (passed in, so this floor imports nothing above it).
``xp`` is the reference; ``cuda`` computes the supervised losses (hinge, squared hinge,
logistic, squared) in one launch where their array expressions are 3-6 launches
(hinge: a product, a comparison, a negation, a product and a ``where``, then the weight),
and runs the reference on CuPy for any other loss.

``mean_loss(f, y, intercept, weights, *, xp, loss)`` is the (weighted) mean over the rows
of ``loss.value(f + intercept, y)`` summed over the outputs: on cuda one block for the
supervised losses without weights (the array form is about six launches).
"""

from ..._registry import register_kernel

for _op in ("loss_derivative", "mean_loss"):
    for _impl, _module in (("xp", "_xp"), ("cuda", "_cuda")):
        register_kernel(_op, _impl, f"{__name__}.{_module}:{_op}")
