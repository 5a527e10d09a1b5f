"""Fixtures of the algorithm tests: the data several test modules share."""

import pytest
from sklearn.datasets import load_breast_cancer


@pytest.fixture(scope="session")
def cancer():
    """scikit-learn's breast cancer data, each column standardised: X (569, 30)
    float64, y (569,) in {0, 1}. Read-only, because the session shares them."""
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    X.flags.writeable = False
    y.flags.writeable = False
    return X, y
