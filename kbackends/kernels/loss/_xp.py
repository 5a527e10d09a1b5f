"""Array-API reference of the engine's loss derivatives (the oracle; the cpu engine runs it on NumPy)."""


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
