"""Command-line interface: parses, calls the library, formats. Nothing else lives here.

Verbs: run, machines (list | show | validate | detect), trace, simulate, and the verbs other modules
register (occupancy, systolic, ...). Every GemmsimError becomes one message on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
import threading
from pathlib import Path

import yaml

from gemmsim.cli.common import machine_of_kind, nonneg_int, parse_params, positive_int
from gemmsim.errors import GemmsimError, TraceFormatError, output_error
from gemmsim.guards import DEFAULTS as DEFAULT_LIMITS
from gemmsim.guards import parse_limit_args

#: modules that add their own verbs through ``register(subparsers)``
PLUGIN_MODULES = ("gemmsim.cli.gpu", "gemmsim.cli.systolic", "gemmsim.cli.report", "gemmsim.cli.numerics", "gemmsim.cli.columns", "gemmsim.cli.lab")


def _cmd_run(args) -> int:
    from gemmsim.numerics.lab import is_numerics_file, run_lab
    from gemmsim.report.tables import table
    from gemmsim.run.runner import run_experiment

    try:
        numerics = is_numerics_file(args.experiment)
    except (OSError, ValueError, yaml.YAMLError):  # unreadable: the experiment reader below says why, with the file
        numerics = False
    if numerics:  # kind: numerics -- not machines x kernels, but the numerics lab
        print(f"\nresults: {run_lab(args.experiment, out_dir=args.out, quick=args.quick, quiet=args.quiet)}")
        return 0

    res = run_experiment(
        args.experiment,
        out_dir=args.out,
        quick=args.quick,
        jobs=args.jobs,
        quiet=args.quiet,
        host=not args.no_host,
        force=args.force,
        executor=args.executor,
        address=args.address,
        cache=not args.no_cache,
        cache_dir=args.cache_dir,
    )
    print(table(res.rows, headline=getattr(res, "headline", None)))
    for n in res.notes:
        print(n)
    print(f"\nresults: {res.out_dir}")
    return 0


def _cmd_machines_list(args) -> int:
    from gemmsim.machine import load_machine, machine_files

    for name, path in machine_files().items():
        try:
            m = load_machine(path)
            print(f"{name:16s} {m.kind:9s} {getattr(m, 'description', '')}")
        except GemmsimError as err:
            print(f"{name:16s} INVALID   {err.message} ({path})")
    return 0


def _machine_dict(m) -> dict:
    data = m.model_dump(mode="json")
    derived = m.derived() if hasattr(m, "derived") else {}
    return {"machine": data, "derived": derived}


def _cmd_machines_show(args) -> int:
    from gemmsim.machine import load_machine

    m = load_machine(args.name)
    d = _machine_dict(m)
    if args.json:
        print(json.dumps(d, indent=1))
    else:
        print(yaml.safe_dump(d["machine"], sort_keys=False, allow_unicode=True).rstrip())
        print("# derived")
        print(yaml.safe_dump(d["derived"], sort_keys=False).rstrip())
    return 0


def _cmd_machines_validate(args) -> int:
    from gemmsim.machine import load_machine

    m = load_machine(args.file)
    print(f"{args.file}: valid {m.kind} machine '{m.name}'")
    return 0


def _cmd_machines_detect(args) -> int:
    from gemmsim.machine import detect_host, machine_from_dict
    from gemmsim.machine.detect import detect_dict, machine_yaml

    measured = None
    if args.measure:
        print("measuring this host (clock, FMA chains, pointer chase, streaming; under a minute) ...", file=sys.stderr, flush=True)
        d = detect_dict(measure=True)
        measured = d.pop("_measured")
        m = machine_from_dict(d, source="measured host")
    else:
        m = detect_host()
    text = machine_yaml(m, measured)
    if args.out:
        try:
            Path(args.out).write_text(text)
        except OSError as exc:
            raise output_error(exc, args.out) from None
        print(f"wrote {args.out} (estimated fields: {', '.join(m.estimated) or 'none'})")
    else:
        print(text)
    if measured is not None and (args.figure or args.out):
        from gemmsim.report.figures.host import staircase_figure

        png = Path(args.figure) if args.figure else Path(args.out).with_suffix(".latency.png")
        staircase_figure(measured.staircase, m, measured.bandwidth).fig.savefig(png, dpi=110)
        print(f"wrote {png} (latency staircase, measured in {measured.seconds:.0f} s)", file=sys.stderr)
    return 0


def _cmd_trace(args) -> int:
    from pydantic import ValidationError

    from gemmsim import guards
    from gemmsim.errors import KernelError
    from gemmsim.machine import validation_problems
    from gemmsim.sim.cpu import CPU_KERNELS, kernel_params
    from gemmsim.trace import Layout, LayoutSpec
    from gemmsim.traceio import trace_format, write_trace
    from gemmsim.units import DTYPE_BYTES

    if args.kernel not in CPU_KERNELS:
        raise KernelError(f"unknown kernel {args.kernel!r}; known: {', '.join(sorted(CPU_KERNELS))}")
    if args.dtype not in DTYPE_BYTES:
        raise KernelError(f"--dtype: unknown dtype {args.dtype!r}; known: {', '.join(DTYPE_BYTES)}")
    k = CPU_KERNELS[args.kernel]
    params = kernel_params(args.kernel, parse_params(args.param))
    try:
        spec = LayoutSpec(order=args.order, pad=args.pad, align=args.align)
    except ValidationError as err:
        raise KernelError("invalid layout", problems=validation_problems(err)) from None
    n = args.N
    M, N, K = (n if v is None else v for v in (args.M, args.Ncols, args.K))
    fmt = trace_format(args.out, args.format)
    machine = machine_of_kind(args.machine, "cpu", "trace") if args.machine else None
    what = f"trace {args.kernel} M={M} N={N} K={K} {args.dtype}"
    est = guards.check_cpu(None, k, M, N, K, args.dtype, what)
    lay = Layout.build(M, N, K, args.dtype, spec)
    guards.check_trace_output(est, args.out, fmt, what)
    count = write_trace(k.trace(lay, params, machine), args.out, fmt)
    from gemmsim.cli.simulate_view import write_sidecar

    if Path(args.out).is_file():  # a regular file: its operand ranges beside it (not beside /dev/stdout or a pipe)
        side = write_sidecar(args.out, lay)
        print(f"wrote {count} accesses to {args.out} (operand address ranges in {side})", file=sys.stderr)
    else:
        print(f"wrote {count} accesses to {args.out}", file=sys.stderr)
    return 0


def _cmd_simulate(args) -> int:
    from gemmsim.models.hierarchy import Hierarchy
    from gemmsim.traceio import read_trace

    if bool(args.machine) == bool(args.cache):
        raise GemmsimError("give either --machine NAME_OR_PATH or one or more --cache SETS:WAYS:LINE[:POLICY]")
    from gemmsim import guards
    from gemmsim.traceio import trace_format

    fmt = trace_format(args.trace, args.format)
    if args.machine:
        machine = machine_of_kind(args.machine, "cpu", "simulate")
        guards.check_machine_caches(machine, f"simulate on {machine.name}")
        h = Hierarchy.from_machine(machine)
    else:
        guards.check_caches(guards.cache_spec_levels(args.cache), "--cache " + " --cache ".join(args.cache))
        try:
            h = Hierarchy.from_specs(args.cache)
        except ValueError as exc:
            raise GemmsimError(f"--cache: {exc}") from None
    from gemmsim.cli.simulate_view import classify, operand_ranges, summary_lines

    ranges = operand_ranges(args.trace, args.operand)
    if args.by_array and not ranges:
        raise GemmsimError(f"--by-array: no operand ranges for {args.trace}: write the trace with `gemmsim trace` (it saves "
                           "TRACE.operands.json beside it) or give --operand NAME=START:END")  # fmt: skip
    total = 0
    for chunk in read_trace(args.trace, fmt):
        total += len(chunk)
        h.feed(chunk)
    if total == 0:
        raise TraceFormatError("the trace has no data accesses (empty, or only instruction fetches)", source=args.trace)
    c = h.counters()
    classes = None if args.no_classes else classify(h.levels, read_trace(args.trace, args.format), ranges)
    if args.json:
        out = {"levels": c["levels"], "memory": c["memory"], "tlbs": c.get("tlbs", [])}
        if isinstance(classes, list):
            out["miss_classes"] = classes
        print(json.dumps(out))
        return 0
    print("\n".join(summary_lines(c, classes, args.by_array)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The whole argument parser (plugins included)."""
    p = argparse.ArgumentParser(prog="gemmsim", description="Simulate why the same GEMM runs at 1% or 80% of a machine's peak.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="run an experiment file and write a results folder")
    r.add_argument("experiment", help="experiments/NAME.yaml")
    r.add_argument("--out", help="results folder (default results/NAME-DATE-TIME)")
    r.add_argument("--quick", action="store_true", help="use the experiment's small 'quick' cases")
    r.add_argument("--jobs", type=positive_int, default=None, help="parallel processes (default: all cores)")
    r.add_argument("--quiet", action="store_true", help="no progress lines")
    r.add_argument("--no-host", action="store_true", help="skip running kernels for real on this host")
    r.add_argument("--force", action="store_true", help="overwrite an existing --out folder")
    r.add_argument("--executor", choices=["local", "dask"], default="local", help="where cases run: local processes (default) or a Dask cluster")
    r.add_argument("--address", help="HOST:PORT of a running Dask scheduler (with --executor dask)")
    r.add_argument("--no-cache", action="store_true", help="recompute every case; do not read or write the result cache")
    r.add_argument("--cache-dir", help="result cache folder (default: .cache beside the results folder, i.e. results/.cache)")
    r.set_defaults(func=_cmd_run)

    m = sub.add_parser("machines", help="list, show, validate or detect machine files")
    msub = m.add_subparsers(dest="machines_command", metavar="ACTION")
    m.set_defaults(func=_cmd_machines_list)
    ml = msub.add_parser("list", help="every machine file found")
    ml.set_defaults(func=_cmd_machines_list)
    ms = msub.add_parser("show", help="one machine with its derived figures")
    ms.add_argument("name")
    ms.add_argument("--json", action="store_true")
    ms.set_defaults(func=_cmd_machines_show)
    mv = msub.add_parser("validate", help="check a machine file")
    mv.add_argument("file")
    mv.set_defaults(func=_cmd_machines_validate)
    md = msub.add_parser("detect", help="write a machine file for this host from /sys and lscpu")
    md.add_argument("--out", help="file to write (default: print)")
    md.add_argument("--measure", action="store_true", help="measure clock, latencies, bandwidths and FMA units with microbenchmarks (under a minute)")
    md.add_argument("--figure", help="with --measure: PNG of the latency staircase (default: beside --out)")
    md.set_defaults(func=_cmd_machines_detect)

    t = sub.add_parser("trace", help="write a CPU kernel's address trace")
    t.add_argument("kernel", help="ijk, ikj, ..., blocked, packed ...")
    t.add_argument("--N", type=positive_int, default=8, help="square size (default 8)")
    t.add_argument("--M", type=positive_int, default=None, help="rows of A and C (default N)")
    t.add_argument("--Ncols", type=positive_int, default=None, help="columns of B and C (default N)")
    t.add_argument("--K", type=positive_int, default=None, help="reduction length (default N)")
    t.add_argument("--dtype", default="fp32")
    t.add_argument("--order", choices=["row", "col"], default="row")
    t.add_argument("--pad", type=nonneg_int, default=0, help="elements added to each leading dimension")
    t.add_argument("--align", type=nonneg_int, default=0, help="align each matrix to this many bytes")
    t.add_argument("--machine", help="machine for kernels that need one (vector width, registers)")
    t.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="kernel parameter (repeatable)")
    t.add_argument("--out", required=True)
    t.add_argument("--format", choices=["din", "xdin", "lackey", "npy"], default=None, help="default: from the file suffix, else din")
    t.set_defaults(func=_cmd_trace)

    s = sub.add_parser("simulate", help="run a trace file through a cache hierarchy")
    s.add_argument("--trace", required=True)
    s.add_argument("--format", choices=["din", "xdin", "lackey", "npy"], default=None, help="default: from the file suffix")
    s.add_argument("--machine", help="cpu machine name or path")
    s.add_argument("--cache", action="append", default=[], metavar="SETS:WAYS:LINE[:POLICY]", help="a cache level, L1 first (repeatable)")
    s.add_argument("--json", action="store_true", help="print exactly one JSON object")
    s.add_argument("--by-array", action="store_true", help="misses per operand (A, B, C, other) and per cause at every level")
    s.add_argument("--operand", action="append", default=[], metavar="NAME=START:END",
                   help="an operand's address range (END exclusive; repeatable); default: TRACE.operands.json written by `trace`")
    s.add_argument("--no-classes", action="store_true", help="skip the compulsory/capacity/conflict split (a second pass)")
    s.set_defaults(func=_cmd_simulate)

    for mod in PLUGIN_MODULES:
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name == mod:
                continue
            raise
        module.register(sub)
    for sp in _all_subparsers(sub):
        sp.add_argument("--size-limit", dest="size_limit", action="append", default=[], metavar="NAME=VALUE",
                        help="raise a size guard (" + ", ".join(DEFAULT_LIMITS) + "); repeatable")
    return p


def _all_subparsers(action) -> list:
    """Every verb's parser (nested ones such as ``machines show`` included)."""
    out = []
    for sp in dict.fromkeys(action.choices.values()):
        out.append(sp)
        for a in sp._actions:
            if isinstance(a, argparse._SubParsersAction):
                out += _all_subparsers(a)
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``gemmsim`` and ``python -m gemmsim``; returns the exit code.

    Every GemmsimError is one message on stderr (exit 2); an OSError on a path the user named is reported the same
    way; SIGINT and SIGTERM stop the run, workers and partial folders included (exit 130 / 143); a closed stdout
    (``| head``) ends quietly.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    signum = [signal.SIGINT]

    def on_term(s, frame):
        signum[0] = s
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_term) if threading.current_thread() is threading.main_thread() else None
    try:
        parse_limit_args(getattr(args, "size_limit", None) or [])
        return int(args.func(args) or 0)
    except GemmsimError as err:
        print(f"gemmsim: error: {err.render()}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    except OSError as exc:  # a path named on the command line that cannot be read or written
        print(f"gemmsim: error: {output_error(exc, exc.filename, 'cannot access').render()}", file=sys.stderr)
        return 2
    except MemoryError:
        print("gemmsim: error: out of memory; make the problem smaller (the size guards' --size-limit memory=... bounds it)",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("gemmsim: interrupted" + (" (SIGTERM)" if signum[0] == signal.SIGTERM else ""), file=sys.stderr)
        return 128 + int(signum[0])
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _quiet_stdout()


def _quiet_stdout() -> None:
    """After the reader of stdout went away (``| head``): point stdout at /dev/null so the exit flush is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
