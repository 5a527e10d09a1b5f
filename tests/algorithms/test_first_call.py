"""The first ``fit`` of a fresh process accepts what users have: a list, a DataFrame.

A subprocess, because the bug (``array_api_compat.numpy`` used before anything
imported that submodule) only shows before any NumPy array reached the dispatcher.
The DataFrame case is the first fit of ``test_dataframes.py``'s fresh process (a
``dsg.fit`` on a DataFrame before anything else): one interpreter start, not two.
"""

import pathlib
import subprocess
import sys


ROOT = pathlib.Path(__file__).resolve().parents[2]

_FIT = """
from algorithms import dsg
model = dsg.fit(X, [0, 1, 0, 1, 0, 1], n_iter=2, batch_size=6, block_size=8, random_state=0)
print([int(v) for v in dsg.predict(model, X)])
"""


def _run_fresh(setup):
    done = subprocess.run([sys.executable, "-c", setup + _FIT], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    labels = eval(done.stdout.strip().splitlines()[-1])  # noqa: S307 (our own print of a list of ints)
    assert len(labels) == 6
    assert set(labels) <= {0, 1}


def test_first_fit_on_a_list():
    _run_fresh("X = [[0.0, 1.0], [1.0, 0.0], [0.0, 0.5], [1.0, 0.2], [0.1, 0.9], [0.9, 0.1]]\n")
