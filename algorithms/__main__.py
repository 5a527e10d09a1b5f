"""Command line: ``python -m algorithms train | predict | demo``.

train    fit a model on a LIBSVM/svmlight or CSV file (like LIBSVM's svm-train)
         and write it to a model file (.npz);
predict  apply a model file to a data file, write one prediction per line and
         print the accuracy when the file has labels;
demo     train on a real dataset (ijcnn1 from ../shared/data, or --data DIR;
         scikit-learn's digits 8-vs-rest when absent) and print a table next
         to scikit-learn's SVC on the same split;
bench    every algorithm next to scikit-learn peers on the real datasets:
         a Markdown table and PNG plots (--quick: a few minutes).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ALGOS = ("dsg", "udsg", "cdsg")


# --- data files ---------------------------------------------------------------------------


def read_data(path, fmt="auto", label_column="last", has_labels=True, n_features=None):
    """Read ``(X, y)`` from a LIBSVM/svmlight file (also .gz/.bz2) or a CSV/TSV file.

    ``y`` is None when ``has_labels`` is False (CSV only; LIBSVM lines always
    start with a label).
    """
    path = Path(path)
    if not path.exists():
        msg = f"data file {str(path)!r} does not exist"
        raise FileNotFoundError(msg)
    if fmt == "auto":
        name = path.name.lower()
        for compressed in (".gz", ".bz2"):
            name = name[: -len(compressed)] if name.endswith(compressed) else name
        fmt = "csv" if name.endswith((".csv", ".tsv")) else "libsvm"
    if fmt == "libsvm":
        from sklearn.datasets import load_svmlight_file

        X, y = load_svmlight_file(str(path), n_features=n_features, dtype=np.float64)
        return X.toarray(), y
    if fmt != "csv":
        msg = f"--format must be auto, libsvm or csv, got {fmt!r}"
        raise ValueError(msg)
    with open(path) as fh:
        first = fh.readline()
    delimiter = "," if "," in first else None
    try:
        float(first.replace(",", " ").split()[0])
        skip = 0
    except ValueError:
        skip = 1  # a header line
    raw = np.loadtxt(path, delimiter=delimiter, skiprows=skip, ndmin=2)
    if not has_labels:
        return raw, None
    if label_column == "first":
        return raw[:, 1:], raw[:, 0]
    return raw[:, :-1], raw[:, -1]


# --- progress -----------------------------------------------------------------------------


class Progress:
    """A one-line progress bar on stderr for fits longer than a second or two."""

    def __init__(self, total, stream=None, width=30):
        self.total = total
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.start = time.perf_counter()
        self.interactive = self.stream.isatty()
        self.last_print = 0.0

    def __call__(self, info):
        now = time.perf_counter()
        done = info["iteration"]
        if now - self.last_print < (0.1 if self.interactive else 5.0) and done < self.total:
            return False
        self.last_print = now
        filled = int(self.width * done / self.total)
        bar = "#" * filled + "." * (self.width - filled)
        line = (
            f"[{bar}] {done}/{self.total} it, {info['n_blocks']} blocks, "
            f"batch loss {info['batch_loss']:.4f}, {now - self.start:.1f} s"
        )
        self.stream.write(("\r" if self.interactive else "") + line + ("" if self.interactive else "\n"))
        if self.interactive and done >= self.total:
            self.stream.write("\n")
        self.stream.flush()
        return False


# --- commands -----------------------------------------------------------------------------


def _fit_kwargs(args):
    gamma = args.gamma if args.gamma == "median" else float(args.gamma)
    return {
        "loss": args.loss,
        "variant": args.algo,
        "kernel": args.kernel,
        "gamma": gamma,
        "lam": args.lam,
        "n_iter": args.n_iter,
        "batch_size": args.batch_size,
        "block_size": args.block_size,
        "step": args.step,
        "precondition": None if args.precondition <= 0 else args.precondition,
        "random_state": args.seed,
        "backend": args.backend,
        "dtype": args.dtype,
    }


def cmd_train(args):
    from algorithms import dsg

    X, y = read_data(args.data, args.format, args.label_column)
    print(f"read {X.shape[0]} rows x {X.shape[1]} features from {args.data}", file=sys.stderr)
    kwargs = _fit_kwargs(args)
    if not args.quiet:
        kwargs["callback"] = Progress(args.n_iter)
    start = time.perf_counter()
    model = dsg.fit(X, y, **kwargs)
    seconds = time.perf_counter() - start
    out = model.save(args.model)
    train_acc = float(np.mean(_host(dsg.predict(model, X)) == y)) if model.task != "regression" else None
    msg = f"trained {args.algo} in {seconds:.2f} s: {model.n_blocks} blocks of {model.block_size} features"
    if train_acc is not None:
        msg += f", training accuracy {100 * train_acc:.2f}%"
    print(msg)
    print(f"model written to {out}")
    return 0


def cmd_predict(args):
    from algorithms import dsg, load

    model = load(args.model, backend=args.backend if args.backend != "auto" else "cpu")
    X, y = read_data(args.data, args.format, args.label_column, has_labels=not args.no_labels,
                     n_features=model.n_features_in if args.format != "csv" else None)
    start = time.perf_counter()
    pred = _host(dsg.predict(model, X))
    seconds = time.perf_counter() - start
    out = Path(args.output)
    np.savetxt(out, pred, fmt="%s" if model.task != "regression" else "%.8g")
    print(f"predicted {len(pred)} rows in {seconds:.2f} s, written to {out}")
    if y is not None and model.task != "regression":
        print(f"accuracy {100 * float(np.mean(pred == y)):.2f}% ({int(np.sum(pred == y))}/{len(y)})")
    elif y is not None:
        print(f"mean squared error {float(np.mean((pred - y) ** 2)):.6g}")
    return 0


def cmd_demo(args):
    from algorithms import dsg
    from algorithms._bench.protocols import DSG_VARIANTS, dsg_fit_kwargs, dsg_peers, dsg_settings
    from algorithms.datasets import load_or_digits

    name, X, y, Xt, yt = load_or_digits(args.dataset, args.data)
    if args.quick:
        X, y = X[:10_000], y[:10_000]
        Xt, yt = Xt[:20_000], yt[:20_000]
    X32, Xt32 = X.astype(np.float32), Xt.astype(np.float32)
    settings = dsg_settings(name)  # the bench command's protocol for this dataset
    print(f"dataset {name}: train {X.shape[0]} x {X.shape[1]}, test {Xt.shape[0]}, backend {args.backend}")
    print("(first fit includes loading the compiled kernels)\n", file=sys.stderr)
    rows = []
    for variant in DSG_VARIANTS:
        kwargs = {**dsg_fit_kwargs(settings, variant), "backend": args.backend}
        model, fit_s = _timed(lambda: dsg.fit(X32, y, **kwargs))
        pred, pred_s = _timed(lambda: _host(dsg.predict(model, Xt32)))
        rows.append((variant.upper(), float(np.mean(pred == yt)), fit_s, pred_s, model.n_blocks * model.block_size))
        _print_row(rows[-1], header=len(rows) == 1)
    if not args.no_svc:
        make_svc = dsg_peers(settings)["sklearn SVC"][0]
        svc, fit_s = _timed(lambda: make_svc().fit(X, y))
        pred, pred_s = _timed(lambda: svc.predict(Xt))
        rows.append(("sklearn SVC", float(np.mean(pred == yt)), fit_s, pred_s, len(svc.support_)))
        _print_row(rows[-1], header=False, unit="support vectors")
    return 0


def cmd_bench(args):
    from algorithms import _bench

    only = [name.strip() for name in args.only.split(",")] if args.only else None
    _bench.run(data_dir=args.data, out_dir=args.out, quick=args.quick, backend=args.backend, only=only,
               progress=lambda line: print(line, flush=True))
    return 0


def _print_row(row, header, unit="features"):
    if header:
        print(f"{'algorithm':<14}{'accuracy':>10}{'fit s':>9}{'predict s':>11}  size")
    name, acc, fit_s, pred_s, size = row
    print(f"{name:<14}{100 * acc:>9.2f}%{fit_s:>9.2f}{pred_s:>11.2f}  {size} {unit}", flush=True)


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _host(a):
    from kbackends import to_numpy

    return to_numpy(a)


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m algorithms", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    def data_options(p):
        p.add_argument("--format", default="auto", choices=("auto", "libsvm", "csv"),
                       help="file format (auto: .csv/.tsv are CSV, anything else LIBSVM)")
        p.add_argument("--label-column", default="last", choices=("first", "last"),
                       help="CSV: where the label is")
        p.add_argument("--backend", default="auto", help="auto, cpu or cuda")

    train = sub.add_parser("train", help="fit a model on a data file")
    train.add_argument("data", help="training file (LIBSVM/svmlight, optionally .gz/.bz2, or CSV)")
    train.add_argument("model", nargs="?", default="model.npz", help="model file to write (default model.npz)")
    train.add_argument("--algo", default="dsg", choices=ALGOS)
    train.add_argument("--loss", default="hinge", choices=("hinge", "squared_hinge", "logistic", "squared"))
    train.add_argument("--kernel", default="rbf", choices=("rbf", "laplacian"))
    train.add_argument("--gamma", default="median", help="kernel width or 'median'")
    train.add_argument("--lam", type=float, default=1e-6)
    train.add_argument("--n-iter", type=int, default=200)
    train.add_argument("--batch-size", type=int, default=4096)
    train.add_argument("--block-size", type=int, default=256)
    train.add_argument("--step", type=float, default=1.0)
    train.add_argument("--precondition", type=float, default=0.1,
                       help="relative ridge of the block preconditioner; 0 for the paper's plain steps")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--dtype", default=None, choices=(None, "float32", "float64"))
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    data_options(train)
    train.set_defaults(func=cmd_train)

    pred = sub.add_parser("predict", help="apply a model file to a data file")
    pred.add_argument("model")
    pred.add_argument("data")
    pred.add_argument("output", nargs="?", default="predictions.txt")
    pred.add_argument("--no-labels", action="store_true", help="CSV without a label column")
    data_options(pred)
    pred.set_defaults(func=cmd_predict)

    demo = sub.add_parser("demo", help="train on a real dataset and compare with scikit-learn's SVC")
    demo.add_argument("--data", help="data folder (default ../shared/data or $KBACKENDS_DATA)")
    demo.add_argument("--dataset", default="ijcnn1", help="dataset name in the folder (default ijcnn1)")
    demo.add_argument("--backend", default="cpu")
    demo.add_argument("--quick", action="store_true", help="10k training rows, 20k test rows")
    demo.add_argument("--no-svc", action="store_true", help="skip the SVC row (slow on big data)")
    demo.set_defaults(func=cmd_demo)

    bench = sub.add_parser("bench", help="compare with scikit-learn peers on real data; Markdown table + PNG plots")
    bench.add_argument("--quick", action="store_true", help="small subsets, one seed: a few minutes in all")
    bench.add_argument("--only", help="comma-separated sections (dsg, tsgs3vm, tsgsu, sbp, s3gd); default all")
    bench.add_argument("--backend", default="cpu")
    bench.add_argument("--data", help="data folder (default ../shared/data or $KBACKENDS_DATA)")
    bench.add_argument("--out", default="bench-out", help="folder for results.md and the plots")
    bench.set_defaults(func=cmd_bench)
    return parser


def main(argv=None):
    from kbackends import BackendUnavailableError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (BackendUnavailableError, FileNotFoundError, ValueError, TypeError) as exc:
        # A user's mistake (bad file, option or backend): one clear line, not a traceback.
        parser.exit(2, f"{parser.prog} {args.command}: error: {exc}\n")


if __name__ == "__main__":
    sys.exit(main())
