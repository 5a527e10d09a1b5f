"""
# Decision boundaries next to an exact SVM

DSG (random Fourier features, doubly stochastic gradients) and SBP (the stochastic batch
perceptron, a kernel expansion) on scikit-learn's two moons, next to scikit-learn's exact
`SVC` with the same RBF kernel width. The three boundaries nearly agree; the test accuracy
of each is in its title.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

from algorithms import DSGClassifier, SBPClassifier

X, y = make_moons(n_samples=600, noise=0.25, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
models = {
    "DSGClassifier": DSGClassifier(gamma=2.0, random_state=0),
    "SBPClassifier": SBPClassifier(gamma=2.0, random_state=0),
    "SVC (exact)": SVC(gamma=2.0),
}
xs, ys = np.linspace(-1.6, 2.6, 150), np.linspace(-1.2, 1.7, 120)
grid = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2)

fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
for ax, (name, model) in zip(axes, models.items()):
    model.fit(X_train, y_train)
    f = model.decision_function(grid).reshape(ys.size, xs.size)
    ax.contourf(xs, ys, f > 0, alpha=0.25, cmap="coolwarm")
    ax.contour(xs, ys, f, levels=[0], colors="k")
    ax.scatter(X_test[:, 0], X_test[:, 1], c=y_test, s=8, cmap="coolwarm")
    ax.set_title(f"{name}: {model.score(X_test, y_test):.3f}")
    print(f"{name}: test accuracy {model.score(X_test, y_test):.3f}")
fig.tight_layout()
plt.show()
