"""The shape rule every array argument meets, dense or sparse."""


def check_shape(X, name, min_samples, hint=""):
    """ValueError unless ``X`` (dense or sparse) is 2-D with ``min_samples`` rows and a column."""
    if X.ndim != 2:
        msg = f"`{name}` must be 2-D (n_samples, n_features), got ndim={X.ndim}{hint}"
        raise ValueError(msg)
    if X.shape[0] < min_samples:
        msg = f"`{name}` has {X.shape[0]} sample(s); at least {min_samples} required"
        raise ValueError(msg)
    if X.shape[1] < 1:
        msg = f"`{name}` has 0 features; at least 1 required"
        raise ValueError(msg)
