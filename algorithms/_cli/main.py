"""Command line: ``python -m algorithms train | predict | demo | bench | gpu-report | gpu-check``.

train    fit a model on a LIBSVM/svmlight or CSV/TSV file (plain, .gz, .bz2 or
         .xz) with any of the algorithms (--algo) and write it to a model file;
predict  apply a model file to a data file, write one prediction per line (as
         the training file wrote the labels) and print the accuracy when the
         file has labels;
demo     DSGClassifier() on a synthetic problem past what an exact SVM fits
         in the same time, next to the SVM on subsamples and RBF + SGD, then on
         ijcnn1 (--data DIR; digits 8-vs-rest when absent) next to the tuned
         SVM; a table a part and demo.png;
bench    every algorithm next to scikit-learn peers on the real datasets:
         a Markdown table and PNG plots (--quick: a few minutes);
gpu-report  the cuda tests, ops against the roofline, fits against the cpu engine;
gpu-check   the GPU check in five minutes, every step under its own time limit.
bench, gpu-report and gpu-check are tools of algorithms.bench: pip install "kbackends[bench]".

Training data per --algo:
  dsg, udsg, cdsg, sbp, s3gd  every row labelled (--loss squared: dsg regression);
            a missing label is refused, naming its lines;
  tsgs3vm   rows with a missing label (or --unlabeled-label VALUE) are the
            unlabelled data, the others the labelled data;
  tsgsu     the label column is the SU indicator: --similar-label (default 1) marks
            points of similar pairs, --unlabeled-label (default 0) or a missing
            label unlabelled points; predictions are --positive-class (default 1) for
            the class of prior --prior (estimated as the larger class when not
            given) and --negative-class (default -1) for the other.

Data files as written (algorithms._cli.datafile): a label empty, ?, NA, N/A, n/a,
nan, NaN, NAN, null or NULL is missing; labels that are all numbers are numbers (1,
+1 and 1.0 one class), else text (01 and 1 two classes), and predict writes each
class as the training file first wrote it (+1 stays +1); a CSV header's names are
kept in the model and predict takes columns by them; so is LIBSVM's --index-base.

Errors print one line: exit code 2 for usage (options), 1 for data and files.
--debug (or ALGORITHMS_DEBUG=1) shows the traceback instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import textwrap
import time

import numpy as np

from kbackends import BackendUnavailableError, __version__, registered_backends, to_numpy

from algorithms import load
from algorithms._boundary.params import REQUIRED
from algorithms._catalog import ALGORITHMS, DATA_KINDS, for_model
from algorithms._cli import datafile as _datafile
from algorithms._cli.options import OPTIONS, UsageError, option_help, positive_int, seed_option
from algorithms._cli.tools import add_tool_commands
from algorithms._models.calibration import fit_calibrated

DSG_FAMILY = ("dsg", "udsg", "cdsg")
PREDICT_CHUNK_ROWS = 16_384  # rows per predict call (sparse files densified per chunk for dense-only models)


def read_data(path, fmt="auto", label_column="last", has_labels=True, n_features=None, header="auto"):
    """``(X, y)`` of a data file: X dense float64, y the labels in their own type
    (int64, float64 or str) or None. See :mod:`algorithms._cli.datafile` for the formats."""
    data = _datafile.read(path, fmt, label_column=label_column, has_labels=has_labels, header=header,
                          n_features=n_features)
    X = data.X.toarray() if hasattr(data.X, "toarray") else data.X
    return X, None if data.raw is None else _datafile.typed_labels(data.raw)


# --- commands -----------------------------------------------------------------------------


def _fit_kwargs(args):
    """The fit keywords of ``args.algo``: its fixed ones, the options given, the seed."""
    row = ALGORITHMS[args.algo]
    given = {name: getattr(args, name) for name in OPTIONS if hasattr(args, name)}
    foreign = sorted(name for name in given if name not in row.options)
    if foreign:
        flags = ", ".join("--" + name.replace("_", "-") for name in foreign)
        takers = sorted({r.name for r in ALGORITHMS.values() for n in foreign if n in r.options})
        raise UsageError(f"{flags} does not apply to --algo {args.algo} (it does to {', '.join(takers)})")
    for name, value in given.items():
        allowed = row.choices.get(name)
        if OPTIONS[name][0] == "choice" and value not in allowed:
            raise UsageError(f"--{name.replace('_', '-')} for --algo {args.algo} must be one of "
                             f"{', '.join(allowed)}, got {value!r}")
    # 'auto' on the command line is the table's None where None means "chosen from the data"
    given = {name: None if value == "auto" and row.params[name].default is None else value
             for name, value in given.items()}
    for name, value in given.items():  # the table's own check, before the data are read
        try:
            row.params[name].constraint.check(name, value)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"--{name.replace('_', '-')}: {exc}") from None
    if given.get("probability") and given.get("loss", row.params["loss"].default if "loss" in row.params else
                                               None) == "squared":
        raise UsageError("--probability needs a classifier: --loss squared is regression")
    own = {"unlabeled_label": ("tsgs3vm", "tsgsu"), "similar_label": ("tsgsu",),
           "positive_class": ("tsgsu",), "negative_class": ("tsgsu",)}
    for name, takers in own.items():
        if getattr(args, name) is not None and args.algo not in takers:
            raise UsageError(f"--{name.replace('_', '-')} applies to --algo {' / '.join(takers)} only")
    required = {name: default for name, default in row.defaults().items()
                if row.params[name].default is REQUIRED}  # SBP's nu: its estimator's default
    kwargs = {**required, **row.fixed, **given, "random_state": args.seed,
              "backend": args.backend}
    if args.dtype is not None:
        kwargs["dtype"] = args.dtype
    return row, kwargs


# Fits that take scipy.sparse rows, on every backend with sparse kernels (moved to the
# device once on cuda): the random-feature engine; SBP's sparse response kernel, its
# model keeps CSR support vectors; S3GD's anchor ops and prox-SGD loop. TSGSU's LIBSVM
# input is densified below.
SPARSE_ALGORITHMS = frozenset({"dsg", "udsg", "cdsg", "tsgs3vm", "sbp", "s3gd"})


def _dense(X, keep_sparse=False):
    """The rows as the fit or the model takes them. LIBSVM files are read sparse and
    stay so where ``keep_sparse`` (an algorithm of SPARSE_ALGORITHMS, or a model that
    accepts sparse rows): memory O(nnz). Elsewhere this is the one
    place the matrix is densified."""
    return X if keep_sparse or not hasattr(X, "toarray") else X.toarray()


def _keeps_sparse(name):
    return name in SPARSE_ALGORITHMS


def _log(message):
    """A note on the run, on standard output: standard error is kept for the progress
    bar and for errors (one line each)."""
    print(message, flush=True)


def _training_data(row, data, args):
    """(positional fit arguments, labelled rows and their labels for the training
    accuracy or None, (labels, the same as written): the file's, or tsgsu's classes
    and the options' text) by the data kind."""
    missing = data.missing()
    name = data.path
    if row.data == "supervised":
        if data.raw is None:
            raise _datafile.DataError(f"data file {name!r} has no label column")
        if missing.any():
            count = int(missing.sum())
            raise _datafile.DataError(
                f"data file {name!r}: {count} of {data.n_rows} rows have no label ({data.where(missing)}: "
                f"empty or a missing-label marker such as '?' or 'NA'); only --algo tsgs3vm and tsgsu take "
                "unlabelled rows")
        y = _datafile.typed_labels(data.raw)
        if row.name in DSG_FAMILY and getattr(args, "loss", None) == "squared":
            if y.dtype.kind not in "iuf":
                raise _datafile.DataError(f"--loss squared (regression) needs numeric labels; {name!r} has text labels")
            y = y.astype(np.float64)
        X = _dense(data.X, _keeps_sparse(row.name))
        return (X, y), (X, y), (y, data.raw)
    if row.data == "semi-supervised":
        unlabeled = missing | (data.matches(args.unlabeled_label) if args.unlabeled_label is not None else False)
        marker = "missing" + (f" or {args.unlabeled_label!r}" if args.unlabeled_label is not None else "")
        if not unlabeled.any():
            raise _datafile.DataError(
                f"--algo tsgs3vm needs unlabelled rows, but no label of {name!r} is {marker} "
                "(name the marker with --unlabeled-label; --algo dsg trains on labelled rows only)")
        keep = _keeps_sparse(row.name)
        X_l, X_u = _dense(data.rows(~unlabeled), keep), _dense(data.rows(unlabeled), keep)
        y_l = _datafile.typed_labels(data.raw[~unlabeled])
        _log(f"tsgs3vm: {X_l.shape[0]} labelled rows (classes {', '.join(map(str, np.unique(y_l)))}), "
             f"{X_u.shape[0]} unlabelled rows (label {marker})")
        return (X_l, y_l, X_u), (X_l, y_l), (y_l, data.raw[~unlabeled])
    # SU data: the label column is the SU indicator
    similar_marker = args.similar_label if args.similar_label is not None else "1"
    unlabeled_marker = args.unlabeled_label if args.unlabeled_label is not None else "0"
    similar = data.matches(similar_marker) & ~missing
    unlabeled = (missing | data.matches(unlabeled_marker)) & ~similar
    other = ~(similar | unlabeled)
    if other.any():
        first = int(np.flatnonzero(other)[0])
        raise _datafile.DataError(
            f"data file {name!r}: label {data.raw[first]!r} ({data.where(np.arange(data.n_rows) == first)}) is "
            f"neither the similar marker {similar_marker!r} nor the unlabelled one ({unlabeled_marker!r} or missing): "
            "for --algo tsgsu the label column is the SU indicator")
    if not similar.any() or not unlabeled.any():
        raise _datafile.DataError(
            f"--algo tsgsu needs points of similar pairs (label {similar_marker!r}) and unlabelled points (label "
            f"{unlabeled_marker!r} or missing); {name!r} has {int(similar.sum())} and {int(unlabeled.sum())}")
    positive = args.positive_class if args.positive_class is not None else "1"
    negative = args.negative_class if args.negative_class is not None else "-1"
    classes = _datafile.typed_labels(np.array([negative, positive]))
    if classes[0] == classes[1]:
        raise UsageError(f"--positive-class and --negative-class must differ, both are {positive!r}")
    written = np.array([negative.strip(), positive.strip()])
    _log(f"tsgsu: {int(similar.sum())} points of similar pairs, {int(unlabeled.sum())} unlabelled points")
    return (_dense(data.rows(similar)), _dense(data.rows(unlabeled))), None, (classes, written)


def _refuse_overwriting(output, what, inputs):
    """A usage error, before anything runs, when ``output`` is one of the ``(name, path)``
    inputs (the same path, a symbolic or a hard link): writing it would destroy the input."""
    for name, path in inputs:
        if path is not None and _datafile.same_file(output, path):
            raise UsageError(f"the {what} {str(output)!r} is the {name} {str(path)!r}: writing it would destroy "
                             f"the {name}; give another path")


def cmd_train(args):
    row, kwargs = _fit_kwargs(args)
    _refuse_overwriting(args.model, "model file", [("training data file", args.data)])
    _datafile.check_output_path(args.model, "model file")
    data = _datafile.read(args.data, args.format, label_column=args.label_column, header=args.header,
                          n_features=args.n_features, index_base=args.index_base)
    _log(f"read {data.X.shape[0]} rows x {data.X.shape[1]} features from {args.data}")
    positional, labelled, (typed, written) = _training_data(row, data, args)
    classes = typed if row.data == "su" else None
    kwargs["verbose"] = 0 if args.quiet else 1  # the fits' own bar (algorithms._engine.progress), on stderr
    start = time.perf_counter()
    probability = kwargs.pop("probability", False)
    try:
        if probability:  # as the estimators' probability=True: fit on 90%, Platt's sigmoid on the rest

            model = fit_calibrated(lambda X, y, _rows, **params: row.fit(X, y, **params), *positional, kwargs)
        else:
            model = row.fit(*positional, **kwargs)
    except (ValueError, TypeError) as exc:
        # the fit's own parameter checks name the parameter first ("`lam` must be > 0"):
        # that is an option the user gave, so a usage error; anything else is about the data
        named = re.match(r"`(\w+)`", str(exc))
        if named and named.group(1) in row.options:
            raise UsageError(f"--{named.group(1).replace('_', '-')}: {exc}") from exc
        raise
    seconds = time.perf_counter() - start
    if classes is not None:  # tsgsu: +1 / -1 named after the user's classes
        model = dataclasses.replace(model, classes=classes)
    labels = None
    if getattr(model, "task", None) != "regression":  # the classes as the file (tsgsu: the options) wrote them
        labels = tuple(_datafile.spelled_classes(np.asarray(model.classes), typed, written).tolist())
    model = dataclasses.replace(model, feature_names=data.names, index_base=data.index_base, class_labels=labels)
    out = model.save(args.model)
    msg = f"trained {args.algo} in {seconds:.2f} s"
    if hasattr(model, "n_blocks"):
        msg += f": {model.n_blocks} blocks of {model.block_size} features"
    elif hasattr(model, "support_vectors"):
        msg += f": {model.support_vectors.shape[0]} support vectors"
    if labelled is not None and getattr(model, "task", None) != "regression":
        X, y = labelled
        pred = _host(row.predict(model, X, backend=args.backend))
        msg += f", training accuracy {100 * _datafile.accuracy(pred, y)[0]:.2f}%"
    print(msg)
    print(f"model written to {out}")
    return 0


def cmd_predict(args):
    _refuse_overwriting(args.output, "output file", [("model file", args.model), ("data file", args.data)])
    _datafile.check_output_path(args.output, "output file")
    model = load(args.model, backend="cpu" if args.backend == "auto" else args.backend)
    row = for_model(model.algorithm)
    if args.proba and not getattr(model, "has_proba", False):
        raise UsageError(f"--proba: the model {args.model!r} has no probabilities (train it with --probability, "
                         "or --loss logistic)")
    n_features = model.n_features_in if args.format != "csv" else None
    base, base_from = args.index_base, None
    if base == "auto" and getattr(model, "index_base", None) is not None:  # the training file's, kept in the model
        base, base_from = model.index_base, f"the model's training file counts from {model.index_base}"
    names = getattr(model, "feature_names", None)
    read = {"fmt": args.format, "header": args.header, "n_features": n_features, "index_base": base,
            "base_from": base_from, "feature_names": names}
    data = _datafile.read(args.data, label_column=args.label_column, has_labels=not args.no_labels, **read)
    by_name = names is not None and data.names is not None
    if (data.raw is not None and data.index_base is None and not by_name and args.label_column is None
            and data.X.shape[1] == model.n_features_in - 1):
        # a CSV taken by position with exactly the model's number of columns has no label column
        data = _datafile.read(args.data, has_labels=False, **read)
    if data.X.shape[1] != model.n_features_in:
        raise _datafile.DataError(f"data file {args.data!r} has {data.X.shape[1]} features, the model "
                                  f"{args.model!r} expects {model.n_features_in}")
    start = time.perf_counter()
    keep = getattr(model, "accepts_sparse", False)
    preds, probas = [], []
    for i in range(0, data.n_rows, PREDICT_CHUNK_ROWS):  # one chunk densified at a time, where it must be
        X = _dense(data.X[i : i + PREDICT_CHUNK_ROWS], keep)
        preds.append(_host(row.predict(model, X, backend=args.backend)))
        if args.proba:
            probas.append(_host(model.predict_proba(X, backend=args.backend)))
    pred = np.concatenate(preds)
    proba = np.concatenate(probas) if args.proba else None
    seconds = time.perf_counter() - start
    regression = getattr(model, "task", None) == "regression"
    lines = [f"{v:.8g}" for v in pred.tolist()] if regression else _datafile.written_labels(model, pred)
    if proba is not None:  # LIBSVM's svm-predict -b 1 layout: a header of the classes, then label and probabilities
        header = "labels " + " ".join(_datafile.written_labels(model, np.asarray(model.classes)))
        lines = [header] + [label + " " + " ".join(f"{p:.6g}" for p in row_p)
                            for label, row_p in zip(lines, proba.tolist())]
    _datafile.write_lines(args.output, lines)
    report = sys.stderr if str(args.output) == "-" else sys.stdout
    where = "standard output" if str(args.output) == "-" else args.output
    print(f"predicted {len(pred)} rows in {seconds:.2f} s, written to {where}", file=report)
    labelled = ~data.missing()
    if data.raw is not None and labelled.any():
        y = _datafile.typed_labels(data.raw[labelled])
        note = "" if labelled.all() else f" on the {int(labelled.sum())} labelled rows"
        if regression:
            if y.dtype.kind not in "iuf":
                print(f"no mean squared error: {args.data!r} has text labels", file=report)
                return 0
            err = float(np.mean((pred[labelled] - y.astype(np.float64)) ** 2))
            print(f"mean squared error {err:.6g}{note}", file=report)
        else:
            fraction, hits = _datafile.accuracy(pred[labelled], y)
            print(f"accuracy {100 * fraction:.2f}% ({hits}/{int(labelled.sum())}){note}", file=report)
    return 0


def _host(a):
    return to_numpy(a)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit code 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (--help for usage)\n")


def _data_options(p, backends):
    """The data file options of train and predict."""
    p.add_argument("--format", default="auto", choices=("auto", "libsvm", "csv"),
                   help="file format (auto: .csv/.tsv are CSV, .svm/.libsvm/.svmlight LIBSVM; otherwise LIBSVM when "
                        "one of the first 100 lines has index:value pairs, else CSV); gzip, bzip2 and xz files are "
                        "read by their first bytes")
    p.add_argument("--label-column", default=None, metavar="COLUMN",
                   help="CSV: the label column: first, last, a number counted from 1, or a header name (default: "
                        "last; predict with a model that has feature names and a file with a header: the one "
                        "column that is not a feature, none when there is none)")
    p.add_argument("--header", default="auto", choices=("auto", "yes", "no"),
                   help="CSV: whether the first line is a header (auto: detected)")
    p.add_argument("--index-base", default="auto", choices=_datafile.INDEX_BASES,
                   help="LIBSVM: the index of the first feature, 0 or 1 (auto: train: 0 when some row uses index "
                        "0, else 1, kept in the model; predict: the model's)")
    p.add_argument("--backend", default="auto", choices=backends,
                   help="where to compute (auto: cpu for files)")


#: The installed console command (pyproject.toml's [project.scripts]), ``python -m algorithms``'s twin.
COMMAND = "kmachines"


def build_parser(prog="python -m algorithms"):
    parser = _Parser(prog=prog, description=__doc__,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error, before or after the subcommand (also: environment "
                             "ALGORITHMS_DEBUG=1)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{train,predict,demo,bench,gpu-report,gpu-check}")
    backends = ("auto", *registered_backends())

    train = sub.add_parser("train", help="fit a model on a data file",
                           description="Fit a model on a data file and write it to a model file.\n\nAlgorithms:\n"
                           + "\n".join(textwrap.fill(f"{r.name:<9}{r.summary}; data: {DATA_KINDS[r.data]}", 88,
                                                      initial_indent="  ", subsequent_indent=" " * 11)
                                         for r in ALGORITHMS.values()).replace("%", "%%"),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    train.add_argument("data", help="training file (LIBSVM/svmlight or CSV/TSV, plain, .gz, .bz2 or .xz)")
    train.add_argument("model", nargs="?", default="model.npz", help="model file to write (default model.npz)")
    train.add_argument("--algo", default="dsg", choices=tuple(ALGORITHMS), help="algorithm (default dsg)")
    for name, (kind, metavar, text) in OPTIONS.items():
        flag = "--" + name.replace("_", "-")
        help_text = option_help(name, text)
        if kind == "bool":
            train.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS,
                               help=help_text)
        else:
            train.add_argument(flag, dest=name, type=str if kind == "choice" else kind, metavar=metavar,
                               default=argparse.SUPPRESS, help=help_text)
    train.add_argument("--unlabeled-label", metavar="LABEL",
                       help="tsgs3vm / tsgsu: the label that marks an unlabelled row, besides a missing label "
                            "(empty, ?, NA, N/A, n/a, nan, NaN, NAN, null, NULL; tsgsu default 0)")
    train.add_argument("--similar-label", metavar="LABEL",
                       help="tsgsu: the label that marks a point of a similar pair (default 1)")
    train.add_argument("--positive-class", metavar="LABEL",
                       help="tsgsu: the label to predict for the positive class (of prior --prior; default 1)")
    train.add_argument("--negative-class", metavar="LABEL",
                       help="tsgsu: the label to predict for the other class (default -1)")
    train.add_argument("--n-features", type=positive_int, metavar="N",
                       help="LIBSVM: the number of features (default: the largest index in the file; give it when "
                            "files to predict may hold larger indices)")
    train.add_argument("--seed", type=seed_option, default=0, help="random seed (default 0): same seed, same model")
    train.add_argument("--dtype", default=None, choices=("float32", "float64"),
                       help="compute dtype (default: the algorithm's for float64 data)")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    _data_options(train, backends)
    train.set_defaults(func=cmd_train)

    pred = sub.add_parser("predict", help="apply a model file to a data file")
    pred.add_argument("model", help="model file written by train (or by model.save)")
    pred.add_argument("data", help="data file (LIBSVM/svmlight or CSV/TSV, plain or compressed)")
    pred.add_argument("output", nargs="?", default="predictions.txt",
                      help="where to write one prediction per line (default predictions.txt; - for standard output)")
    pred.add_argument("--no-labels", action="store_true", help="CSV without a label column")
    pred.add_argument("--proba", action="store_true",
                      help="also write the class probabilities (a model trained with --probability or --loss "
                           "logistic): a first line 'labels' and the classes, then per row the predicted label and "
                           "one probability per class in that order (LIBSVM's svm-predict -b 1 layout)")
    _data_options(pred, backends)
    pred.set_defaults(func=cmd_predict)

    add_tool_commands(sub, backends)
    return parser


def _one_line(exc):
    return " ".join(str(exc).split()) or type(exc).__name__


def console():
    """The installed command :data:`COMMAND`: :func:`main` under its own name."""
    return main(prog=COMMAND)


def main(argv=None, prog="python -m algorithms"):
    """Run the command line; returns 0, or exits with 1 (data, files) or 2 (usage).
    ``prog``: the name the messages give the command."""
    parser = build_parser(prog)
    argv = list(sys.argv[1:] if argv is None else argv)
    anywhere = "--debug" in argv  # before or after the subcommand
    args = parser.parse_args([a for a in argv if a != "--debug"])
    debug = anywhere or os.environ.get("ALGORITHMS_DEBUG", "") not in ("", "0")
    prog = f"{parser.prog} {args.command}"
    try:
        return args.func(args)
    except UsageError as exc:
        if debug:
            raise
        parser.exit(2, f"{prog}: error: {_one_line(exc)} (--help for usage)\n")
    except KeyboardInterrupt:
        if debug:
            raise
        parser.exit(130, f"{prog}: interrupted\n")
    except MemoryError as exc:
        if debug:
            raise
        parser.exit(1, f"{prog}: error: out of memory ({_one_line(exc)})\n")
    except Exception as exc:  # noqa: BLE001 - every failure is one line; --debug shows the rest
        if debug:
            raise

        if isinstance(exc, (OSError, ValueError, TypeError, EOFError, ImportError, BackendUnavailableError)):
            text = _one_line(exc)
            if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in text:
                text += f": {exc.filename}"
        else:  # not a mistake of the user's we know of: say so, keep it to one line
            text = f"internal error {type(exc).__name__}: {_one_line(exc)} (run with --debug for the traceback)"
        parser.exit(1, f"{prog}: error: {text}\n")


if __name__ == "__main__":
    sys.exit(main())
