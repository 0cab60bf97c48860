"""Verbs ``report`` (rebuild a results folder's figures and report.html) and ``explain`` (walk a tiny case).

Registered by ``gemmsim.cli.main`` through ``register(subparsers)``; each ``func(args)`` returns the exit code and
raises GemmsimError subclasses on bad input (the CLI prints one message and exits non-zero).
"""

from __future__ import annotations

import json

from gemmsim.cli.common import nonneg_int, parse_params, positive_int


def _cmd_report(args) -> int:
    from gemmsim.report.html import regenerate

    path = regenerate(args.results_dir)
    print(f"wrote {path}")
    return 0


def _cmd_explain(args) -> int:
    from gemmsim.report.explain import explain_case

    from gemmsim import guards
    from gemmsim.machine import load_machine

    layout = {"order": args.order, "pad": args.pad, "align": args.align}
    n = args.N
    M, K = n if args.M is None else args.M, n if args.K is None else args.K
    machine = load_machine(args.machine)
    if machine.kind == "cpu":
        guards.check_machine_caches(machine, f"explain on {machine.name}")
    e = explain_case(machine, args.kernel, M, n, K, args.dtype, parse_params(args.param), layout, args.limit)
    if args.json:
        print(json.dumps(e.to_dict()))
    else:
        print(e.render())
    return 0


def register(subparsers) -> None:
    """Add the ``report`` and ``explain`` verbs to the CLI's sub-parsers."""
    r = subparsers.add_parser("report", help="redraw a results folder's figures and rewrite its report.html")
    r.add_argument("results_dir", metavar="RESULTS_DIR", help="a folder written by `gemmsim run`")
    r.set_defaults(func=_cmd_report)

    e = subparsers.add_parser("explain", help="walk a tiny CPU case access by access (address, set, hit/miss, eviction, cache contents)")
    e.add_argument("kernel", metavar="KERNEL", help="a CPU kernel: ijk, ikj, ..., blocked ...")
    e.add_argument("--machine", default="toy", help="CPU machine name or path (default toy, the seed's lab cache)")
    e.add_argument("--N", type=positive_int, default=8, help="columns of B and C; also M and K unless given (default 8)")
    e.add_argument("--M", type=positive_int, default=None, help="rows of A and C (default N)")
    e.add_argument("--K", type=positive_int, default=None, help="reduction length (default N)")
    e.add_argument("--dtype", default="fp32")
    e.add_argument("--order", choices=["row", "col"], default="row", help="layout of A, B, C")
    e.add_argument("--pad", type=nonneg_int, default=0, help="elements added to each leading dimension")
    e.add_argument("--align", type=nonneg_int, default=0, help="align each matrix to this many bytes")
    e.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="kernel parameter (repeatable)")
    e.add_argument("--limit", type=nonneg_int, default=200, help="accesses shown one by one (0: all); totals cover the whole case")
    e.add_argument("--json", action="store_true", help="print exactly one JSON object")
    e.set_defaults(func=_cmd_explain)
