"""Model files saved before the modules moved into packages still load and predict the same.

tests/algorithms/data/models_format3/ holds format-3 ``.npz`` models of all five
algorithms (every model class, dense and CSR SBP support vectors, a regressor, three
classes) saved by the library before the move, the rows they are asked about
(rows.npz) and what that code answered on them (expected.json; make_expected.py
there says how it was made). On the cpu backend the answers must be the same: labels
exactly, values to the bit where the host computes as the one that made them and to a
few units in the last place elsewhere (Numba compiles for the host's vector width, AVX2
or AVX-512, and a wider vector sums the random features' float32 terms in another
order); a move changes no arithmetic.
"""

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import algorithms

DATA = Path(__file__).resolve().parent / "data" / "models_format3"
EXPECTED = json.loads((DATA / "expected.json").read_text())
MODULE = {"dsg": "dsg", "cdsg": "dsg", "udsg": "dsg", "tsgs3vm": "tsgs3vm", "tsgsu": "tsgsu",
          "sbp": "sbp", "s3gd": "s3gd"}


@pytest.fixture(scope="module")
def rows():
    with np.load(DATA / "rows.npz") as f:
        X = f["X"]
    return {"dense": X, "csr": sp.csr_matrix(X)}


def _stored(entry):
    return np.asarray(entry["values"], dtype=np.dtype(entry["dtype"])).reshape(entry["shape"])


def test_the_set_covers_every_algorithm_and_model_class():
    assert {e["type"] for e in EXPECTED.values()} == {"RFFModel", "KernelExpansionModel", "LinearModel"}
    assert {MODULE[e["algorithm"]] for e in EXPECTED.values()} == {"dsg", "tsgs3vm", "tsgsu", "sbp", "s3gd"}
    with np.load(DATA / "sbp_csr32.npz") as f:  # an SBP model saved with CSR support vectors
        assert "support_vectors.indptr" in f.files


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_model_saved_before_the_move_loads_and_predicts_the_same(name, rows):
    entry = EXPECTED[name]
    model = algorithms.load(DATA / name, backend="cpu")
    assert type(model).__name__ == entry["type"]
    assert model.algorithm == entry["algorithm"]
    if entry["type"] == "RFFModel":  # no "features" field before format 6: Monte-Carlo blocks
        assert model.features == "monte_carlo"
    module = getattr(algorithms, MODULE[model.algorithm])
    for fn in ("predict", "decision_function"):
        for kind, X in rows.items():
            want = _stored(entry[f"{fn}_{kind}"])
            got = np.asarray(getattr(module, fn)(model, X, backend="cpu"))
            assert got.dtype == want.dtype, (fn, kind)
            assert got.shape == want.shape, (fn, kind)
            if got.dtype.kind != "f" or got.tobytes() == want.tobytes():  # labels; values to the bit
                assert got.tobytes() == want.tobytes(), f"{name}: {fn} on {kind} rows differs"
                continue
            ulp = np.finfo(got.dtype).eps * max(1.0, float(np.abs(want).max()))
            np.testing.assert_allclose(got, want, rtol=0, atol=8 * ulp, err_msg=f"{name}: {fn} on {kind} rows")
