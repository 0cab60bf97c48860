"""Verb ``numerics``: run the numerics lab (gemmsim.numerics.lab) and write CSV tables, figures and report.md.

``python -m gemmsim numerics [FILE] [--quick] [--out DIR] [--study NAME ...]``; FILE defaults to the lab's built-in
settings (experiments/numerics.yaml holds the same ones, plus its quick variant). ``gemmsim run FILE`` also
comes here when FILE says ``kind: numerics``.
"""

from __future__ import annotations


def _cmd_numerics(args) -> int:
    from gemmsim.errors import GemmsimError
    from gemmsim.numerics.lab import STUDIES, run_lab

    bad = [s for s in args.study or [] if s not in STUDIES]
    if bad:  # checked here, not as argparse choices, so that other verbs do not import the lab (and numba) to start
        raise GemmsimError(f"--study: unknown {', '.join(map(repr, bad))}; known: {', '.join(STUDIES)}")

    out = run_lab(args.experiment, out_dir=args.out, quick=args.quick, studies=args.study or None, quiet=args.quiet)
    print(f"\nresults: {out} (report.md, one CSV and one PNG per study)")
    return 0


def register(subparsers) -> None:
    """Add the ``numerics`` verb to the CLI's sub-parsers."""
    p = subparsers.add_parser("numerics", help="rounding error of GEMM: dtypes, accumulators, FMA, summation orders, Strassen")
    p.add_argument("experiment", nargs="?", default=None, metavar="FILE", help="a numerics experiment (kind: numerics); default: built-in settings")
    p.add_argument("--quick", action="store_true", help="the file's quick variant (small sizes)")
    p.add_argument("--out", default=None, help="results folder (default results/<name>-<date>-<time>)")
    p.add_argument("--study", action="append", metavar="NAME", help="run only this study (repeatable; see the lab's STUDIES)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=_cmd_numerics)
