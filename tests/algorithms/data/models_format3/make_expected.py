"""Write rows.npz and expected.json beside the model files of this folder.

The ``*.npz`` models here were saved (format 3) by the library before its modules
were moved into packages: cpu engine fits on a 3,000-row subset of a9a (rows drawn
by ``numpy.random.default_rng(0).choice(32561, 3000, replace=False)``). This script
was run once with that code on the path::

    PYTHONPATH=<checkout before the move> python make_expected.py <a9a file>

It stores the first 48 rows of the subset (dense, float64) in ``rows.npz`` and, for
each model, what ``predict`` and ``decision_function`` of its algorithm module gave
on those rows, dense and as CSR, on the cpu backend. The tests read only rows.npz
and expected.json; they never need the data set.
"""

import json
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

import algorithms

HERE = Path(__file__).resolve().parent
N_ROWS = 48
# the algorithm module that predicts for each model's "algorithm" field
MODULE = {"dsg": "dsg", "cdsg": "dsg", "udsg": "dsg", "tsgs3vm": "tsgs3vm", "tsgsu": "tsgsu",
          "sbp": "sbp", "s3gd": "s3gd"}


def _values(a):
    a = np.asarray(a)
    return {"dtype": a.dtype.str, "shape": list(a.shape), "values": a.ravel().tolist()}


def main(a9a):
    X, _ = load_svmlight_file(a9a, n_features=123)
    rows = np.random.default_rng(0).choice(X.shape[0], 3000, replace=False)[:N_ROWS]
    Xd = np.asarray(X[rows].todense(), dtype=np.float64)
    np.savez_compressed(HERE / "rows.npz", X=Xd)
    Xc = sp.csr_matrix(Xd)
    expected = {}
    for path in sorted(HERE.glob("*.npz")):
        if path.name == "rows.npz":
            continue
        model = algorithms.load(path, backend="cpu")
        module = getattr(algorithms, MODULE[model.algorithm])
        expected[path.name] = {
            "type": type(model).__name__,
            "algorithm": model.algorithm,
            **{f"{fn}_{kind}": _values(getattr(module, fn)(model, X_, backend="cpu"))
               for fn in ("predict", "decision_function") for kind, X_ in (("dense", Xd), ("csr", Xc))},
        }
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
