"""Fixtures of the algorithm tests: the data several test modules share."""

import pytest
from sklearn.datasets import load_breast_cancer


@pytest.fixture(scope="session")
def cancer():
    """scikit-learn's breast cancer data, each column standardised: X (569, 30)
    float64, y (569,) in {0, 1}. Shared by the whole session: do not modify in place.
    (Not flagged read-only: the CUDA simulator copies kernel arguments back into
    host arrays, unchanged, after each launch.)"""
    X, y = load_breast_cancer(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y
