"""The command line's tools: ``demo``, ``bench`` and ``gpu-report``, run from
:mod:`algorithms.bench`, which each command imports when it runs (the bench's
plots need its optional extra; ``train`` and ``predict`` load none of it)."""

from __future__ import annotations

from algorithms._cli.options import UsageError
from algorithms.datasets import DATASETS


def cmd_demo(args):
    """``demo``: DSGClassifier() next to the exact SVC, past its rows and on real sets."""
    from algorithms.bench.demo import run_demo  # the tools load when their command runs

    datasets = [name.strip() for name in args.dataset.split(",") if name.strip()]
    unknown = [name for name in datasets if name not in DATASETS]
    if unknown:  # a bad option value: a usage error, before anything runs
        raise UsageError(f"--dataset: unknown set(s) {', '.join(map(repr, unknown))} "
                         f"(known: {', '.join(sorted(DATASETS))})")
    if args.rows is not None and args.rows < 1:
        raise UsageError(f"--rows must be a positive number of rows, got {args.rows}")
    rows = {} if args.rows is None else {"rows": args.rows}
    return run_demo(datasets, args.data, **rows, quick=args.quick, backend=args.backend,
                    svc=not args.no_svc, plot=None if args.plot == "none" else args.plot)


def cmd_bench(args):
    """``bench``: every algorithm next to its peers (the bench extra draws the plots)."""
    from algorithms import bench as _bench  # the tools load when their command runs

    only = [name.strip() for name in args.only.split(",")] if args.only else None
    unknown = [name for name in only or () if name not in _bench.SECTIONS]
    if unknown:  # a bad option value: a usage error, before anything runs
        raise UsageError(f"unknown bench section {', '.join(map(repr, unknown))} in --only "
                         f"(known: {', '.join(_bench.SECTIONS)})")
    _bench.run(data_dir=args.data, out_dir=args.out, quick=args.quick, backend=args.backend, only=only,
               progress=lambda line: print(line, flush=True))
    return 0


def cmd_gpu_report(args):
    """``gpu-report``: the whole GPU check (algorithms.bench.gpu_report)."""
    from algorithms.bench.gpu_report import PARTS, run  # the tools load when their command runs

    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:  # a bad option value: a usage error, before anything runs
        raise UsageError(f"--parts: unknown section(s) {', '.join(map(repr, unknown))} (known: {', '.join(PARTS)})")
    run(args.out, backend=args.backend, small=args.small, data=args.data, pytest_args=args.pytest_args,
        max_seconds=args.max_seconds, parts=parts, profile=args.profile, skip=args.skip)
    return 0


def cmd_gpu_check(args):
    """``gpu-check``: the GPU check in five minutes (algorithms.bench.gpu_report.check)."""
    from algorithms.bench.gpu_report import check  # the tools load when their command runs

    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in check.STEPS]
    if unknown:
        raise UsageError(f"--only: unknown step(s) {', '.join(map(repr, unknown))} (known: {', '.join(check.STEPS)})")
    check.run(args.out, backend=args.backend, small=args.small, data=args.data, max_seconds=args.max_seconds,
              only=only, fits=args.fits, gate=args.gate)
    return 0


def add_tool_commands(sub, backends):
    """The subcommands demo, bench and gpu-report, added to ``sub`` (the parser's
    subparsers); ``backends`` are the choices of their --backend."""
    demo = sub.add_parser("demo", help="DSGClassifier() next to the exact SVC: past its rows, and on real sets")
    demo.add_argument("--data", help="data folder (default ../shared/data or $KBACKENDS_DATA)")
    demo.add_argument("--dataset", default="ijcnn1",
                      help="comma-separated real sets in the folder (default ijcnn1; digits where missing)")
    demo.add_argument("--rows", type=int, help="rows of the synthetic problem (default 300000)")
    demo.add_argument("--backend", default="cpu", choices=backends, help="where to compute (default cpu)")
    demo.add_argument("--quick", action="store_true", help="10k training rows everywhere")
    demo.add_argument("--no-svc", action="store_true", help="skip the SVC rows")
    demo.add_argument("--plot", default="demo.png",
                      help="the picture of accuracy against time (default demo.png, never replaced; none: no picture)")
    demo.set_defaults(func=cmd_demo)

    bench = sub.add_parser("bench", help="compare with scikit-learn peers on real data; Markdown table + PNG plots")
    bench.add_argument("--quick", action="store_true", help="small subsets, one seed: a few minutes in all")
    bench.add_argument("--only", help="comma-separated sections (dsg, tsgs3vm, tsgsu, sbp, s3gd, defaults); default all")
    bench.add_argument("--backend", default="cpu", choices=backends, help="where to compute (default cpu)")
    bench.add_argument("--data", help="data folder (default ../shared/data or $KBACKENDS_DATA)")
    bench.add_argument("--out", default="bench-out", help="folder for results.md and the plots")
    bench.set_defaults(func=cmd_bench)

    gpu = sub.add_parser("gpu-report", help="the whole GPU check: cuda tests, ops against the roofline, fits vs cpu",
                         description="The whole GPU check into DIR/report.md (algorithms.bench.gpu_report).")
    gpu.add_argument("--out", required=True, help="folder for report.md, report.json and tests.log")
    gpu.add_argument("--backend", default="cuda", help="cuda (a GPU) or cudasim (the simulator, for a dry run)")
    gpu.add_argument("--small", action="store_true", help="tiny sizes: a dry run")
    gpu.add_argument("--data", help="data folder (default: $KBACKENDS_DATA or ../shared/data)")
    gpu.add_argument("--pytest-args", default="",
                     help="extra pytest arguments for the test section, one quoted string (write"
                          " --pytest-args='-k EXPR' with '=' when it starts with a dash); 'none' skips it")
    gpu.add_argument("--max-seconds", type=float, default=540.0,
                     help="start no new item after this many seconds (the GPU host allows ten minutes a command);"
                          " the report is rewritten after every item, so a cut run keeps what it measured")
    gpu.add_argument("--parts", default="tests,ops,fits",
                     help="which sections to run, comma-separated (e.g. 'tests,ops' in one call and 'fits' in the"
                          " next, to keep each call inside the GPU host's ten minutes)")
    gpu.add_argument("--profile", action="store_true",
                     help="profile each device fit once more on the host (cProfile) into DIR/profiles.txt:"
                          " where an iteration's host time goes")
    gpu.add_argument("--skip", action="append", default=[],
                     help="an op or fit to leave out (e.g. rff_features, sbp-a9a, dsg-synthetic:cpu); repeatable")
    gpu.set_defaults(func=cmd_gpu_report)

    quick = sub.add_parser("gpu-check", help="the GPU check in five minutes: versions, gate, fits, probe, ops, scale",
                           description="The GPU check, every step under its own time limit, into DIR/check.md "
                           "(algorithms.bench.gpu_report.check).")
    quick.add_argument("--out", required=True, help="folder for check.md, check.json and tests.log")
    quick.add_argument("--backend", default="cuda", help="cuda (a GPU) or cudasim (the simulator, for a dry run)")
    quick.add_argument("--small", action="store_true", help="tiny sizes: a dry run")
    quick.add_argument("--data", help="data folder (default: $KBACKENDS_DATA or ../shared/data)")
    quick.add_argument("--max-seconds", type=float, default=300.0,
                       help="the whole check's budget; a step gets what is left of it at most (default 300)")
    quick.add_argument("--only", default="env,gate,fits,probe,scale,ops,sweep,asv",
                       help="comma-separated steps, run in the check's own order (default: all but suite, "
                            "the whole cuda suite, and shapes, the fused kernels' launch-shape sweep)")
    quick.add_argument("--fits", help="comma-separated rows of the fits step, e.g. 'sbp-a9a,sbp-a9a-run' "
                                      "(default: the decisive fits and every variant row)")
    quick.add_argument("--gate", help="comma-separated test files for the gate (default: the launch path's and "
                                      "the kernels' tests)")
    quick.set_defaults(func=cmd_gpu_check)
