"""scikit-learn conventions: the estimators pass parametrize_with_checks."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from algorithms import DSGClassifier, DSGRegressor

# Small, fast settings: the checks fit dozens of times on tiny data.
FAST = {"n_iter": 20, "batch_size": 256, "block_size": 64, "random_state": 0}


@parametrize_with_checks([DSGClassifier(**FAST), DSGRegressor(**FAST)])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
