"""``python -m kbackends``: report the backends here and check the RFF kernels on real data.

(The whole GPU check is ``python -m algorithms gpu-report``: it fits the
algorithms, a floor above this package.)

For each available backend: how well random features approximate the exact
RBF kernel on a sample of the data, and the time of ``rff_predict`` next to
the plain array expression it replaces, on the same arrays.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import kbackends
from kbackends import ops
from kbackends.random import omega_block


def _timed(bk, fn, repeat=3):
    fn()
    bk.synchronize()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        bk.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def _sample(folder=None):
    """ijcnn1's training rows (dense float64) from the data folder (``folder``, else
    $KBACKENDS_DATA, else ../shared/data), else scikit-learn's bundled digits (the
    75% of a seeded split, as the data sets' fallback takes): ``(name, X)``."""
    from sklearn.datasets import load_digits, load_svmlight_file

    folder = Path(folder or os.environ.get("KBACKENDS_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
    try:
        X, _ = load_svmlight_file(str(folder / "ijcnn1.trn.bz2"), n_features=22, dtype=np.float64)
        return "ijcnn1", X.toarray()
    except OSError:
        X = load_digits().data / 16.0
        order = np.random.default_rng(0).permutation(X.shape[0])
        return "digits-8-vs-rest", X[order[int(round(0.25 * X.shape[0])):]]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["gpu-report"]:
        print("python -m kbackends gpu-report moved: run python -m algorithms gpu-report", *argv[1:], file=sys.stderr)
        sys.exit(2)
    parser = argparse.ArgumentParser(prog="python -m kbackends", description=__doc__)
    parser.add_argument("--data", help="data folder (default: ../shared/data or $KBACKENDS_DATA)")
    parser.add_argument("--features", type=int, default=4096, help="random features m")
    parser.add_argument("--no-throughput", action="store_true",
                        help="skip the rff_predict throughput table (n=100000, d=28, m=4096, float32)")
    args = parser.parse_args(argv)

    print(f"kbackends {kbackends.__version__}")
    print("registered backends:", ", ".join(kbackends.registered_backends()))
    print("available here:     ", ", ".join(kbackends.available_backends()))
    name, X = _sample(args.data)
    X = X.astype(np.float32)
    print(f"data: {name}, {X.shape[0]} x {X.shape[1]}, float32, m = {args.features} features\n")

    gamma = 1.0 / X.shape[1]
    sample = X[:400].astype(np.float64)
    sq = (sample**2).sum(1)
    exact = np.exp(-gamma * np.maximum(sq[:, None] + sq[None, :] - 2 * sample @ sample.T, 0))
    print(f"{'backend':<10}{'max |K - K_rff|':>17}{'rff_predict s':>15}{'plain xp s':>12}{'speed-up':>10}")
    for name in kbackends.available_backends():
        if name == "cudasim":
            continue  # the simulator is for tests, far too slow for this size
        bk = kbackends.resolve(name)
        omega, phase = omega_block(0, 0, args.features, X.shape[1], gamma=gamma, dtype="float32", backend=bk)
        Xb = bk.asarray(X)
        Fs = bk.to_numpy(ops.rff_features(bk.asarray(sample.astype(np.float32)), omega, phase))
        approx = 2.0 / args.features * Fs.astype(np.float64) @ Fs.T.astype(np.float64)
        coef = bk.asarray(np.full(args.features, 1.0 / args.features, dtype=np.float32))
        t_ours = _timed(bk, lambda: ops.rff_predict(Xb, omega, phase, coef, check_finite=False))
        xp = bk.xp
        t_plain = _timed(bk, lambda: xp.cos(Xb @ omega.T + phase) @ coef)
        err = np.abs(approx - exact).max()
        print(f"{name:<10}{err:>17.4f}{t_ours:>15.3f}{t_plain:>12.3f}{t_plain / t_ours:>9.1f}x")
    if not args.no_throughput:
        throughput()


def throughput(n=100_000, d=28, m=4096):
    """rff_predict throughput on every available backend, float32, in (sample, feature)
    pairs per second, and its ratio to the cpu backend measured in the same run."""
    rng = np.random.default_rng(0)
    X = rng.random((n, d), dtype=np.float32)
    coef = (rng.standard_normal(m) / m).astype(np.float32)
    print(f"\nrff_predict throughput, n={n}, d={d}, m={m}, float32 (best of 3)")
    print(f"{'backend':<10}{'seconds':>10}{'pairs/s':>12}{'vs cpu':>9}")
    cpu_s = None
    for name in kbackends.available_backends():
        if name == "cudasim":
            continue
        bk = kbackends.resolve(name)
        omega, phase = omega_block(0, 0, m, d, gamma=1.0, dtype="float32", backend=bk)
        Xb, cb = bk.asarray(X), bk.asarray(coef)
        seconds = _timed(bk, lambda: ops.rff_predict(Xb, omega, phase, cb, check_finite=False))
        cpu_s = seconds if name == "cpu" else cpu_s
        ratio = f"{cpu_s / seconds:.1f}x" if cpu_s else "-"
        print(f"{name:<10}{seconds:>10.4f}{n * m / seconds:>12.3g}{ratio:>9}")


if __name__ == "__main__":
    main()
