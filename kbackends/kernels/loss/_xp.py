"""Array-API reference of the engine's loss derivatives and held-out mean loss (the oracle;
the cpu engine runs it on NumPy)."""


def loss_derivative(f, y, *, xp, loss, weight):
    """``loss.derivative(f, y, xp) * weight``: the weighted dl/df of a mini-batch.

    Parameters
    ----------
    f : array (B, k)
        Predictions on the batch.
    y : array (B, k) or None
        Their targets, as ``loss`` expects them (None for the unlabeled losses).
    loss : kbackends.losses.Loss
    weight : float
        The source's weight in the objective.
    """
    return loss.derivative(f, y, xp) * weight


def mean_loss(f, y, intercept, weights, *, xp, loss):
    """The held-out rows' mean loss, a 0-d array.

    Parameters
    ----------
    f : array (n, k)
        Predictions less the intercept.
    y : array (n, k)
        Targets.
    intercept : array (k,)
    weights : float64 array (n,) summing to 1, or None
        Row weights (None: the plain mean, in ``f``'s dtype; else float64).
    loss : kbackends.losses.Loss
    """
    per_row = xp.sum(loss.value(f + intercept, y, xp), axis=1)
    return xp.mean(per_row) if weights is None else xp.sum(xp.astype(per_row, xp.float64) * weights)
