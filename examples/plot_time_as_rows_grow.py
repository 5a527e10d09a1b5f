"""
# Fit time as the rows grow

An exact kernel SVM's fit time grows faster than its rows; DSG's is bounded by its
feature budget and its iterations. On a synthetic problem of 20 features, at sizes small
enough for the documentation's build, the default `DSGClassifier` next to scikit-learn's
`SVC` with its defaults: fit seconds and test accuracy. At these sizes SVC is as fast and
as accurate or more; from 10,000 rows DSG's defaults switch to early stopping (up to 200
iterations), which is the step in its time. Where the curves cross (tens of thousands of
rows and up), the GPU and every peer: the benchmarks page. The accuracy axis spans 15
points, so a gap reads at its size.
"""

import time

import matplotlib.pyplot as plt
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

from algorithms import DSGClassifier

X_all, y_all = make_classification(n_samples=14_000, n_features=20, n_informative=10, flip_y=0.02,
                                   random_state=0)
X_all, X_test, y_all, y_test = train_test_split(X_all, y_all, test_size=2000, random_state=0)
DSGClassifier(n_iter=2, random_state=0).fit(X_all[:500], y_all[:500])  # compile first: not a fit's time

sizes = [1500, 3000, 6000, 12_000]
results = {"DSGClassifier()": [], "SVC()": []}
for n in sizes:
    for name, model in (("DSGClassifier()", DSGClassifier(random_state=0)), ("SVC()", SVC())):
        start = time.perf_counter()
        model.fit(X_all[:n], y_all[:n])
        seconds = time.perf_counter() - start
        results[name].append((seconds, model.score(X_test, y_test)))
        print(f"{name:16s} n={n:6d}  fit {seconds:6.2f} s  accuracy {results[name][-1][1]:.3f}")

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
for name, rows in results.items():
    left.plot(sizes, [s for s, _ in rows], "o-", label=name)
    right.plot(sizes, [a for _, a in rows], "o-", label=name)
left.set(xscale="log", yscale="log", xlabel="training rows", ylabel="fit seconds")
right.set(xscale="log", xlabel="training rows", ylabel="test accuracy", ylim=(0.85, 1.0))  # gaps at their size
left.legend()
fig.tight_layout()
plt.show()
