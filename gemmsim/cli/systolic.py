"""The ``systolic`` command: one GEMM on a systolic array, its counters, and (--explain) the dataflow cycle by cycle.

    python -m gemmsim systolic --machine systolic_4 --M 4 --N 4 --K 4 --dataflow ws --explain
    python -m gemmsim systolic --machine tpu_v1 --M 1 --N 4096 --K 4096 --json

Parses, calls ``gemmsim.models.systolic``, formats; nothing else.
"""

from __future__ import annotations

import json

import numpy as np

from gemmsim.cli.common import machine_of_kind, positive_int
from gemmsim.errors import KernelError

#: explanations are for small arrays and short runs: a grid per cycle
EXPLAIN_MAX_PES = 256
#: and at most this many cycles (each is a grid of text)
EXPLAIN_MAX_CYCLES = 2000

_OVERRIDES = (
    ("rows", int, "PE rows (overrides the machine's)"),
    ("cols", int, "PE columns (overrides the machine's)"),
    ("unified_buffer", str, "unified buffer size, e.g. 1MiB"),
    ("weight_fifo_tiles", int, "weight FIFO depth in tiles"),
    ("accumulator_entries", int, "accumulator rows"),
    ("dram_bandwidth_gbps", float, "DRAM bandwidth, GB/s"),
    ("ifmap_sram", str, "SCALE-Sim ifmap (A) SRAM size, e.g. 64KiB (convention scalesim)"),
    ("filter_sram", str, "SCALE-Sim filter (B) SRAM size (convention scalesim)"),
    ("ofmap_sram", str, "SCALE-Sim ofmap (C) SRAM size (convention scalesim)"),
)


def register(subparsers) -> None:
    """Add the ``systolic`` command to an argparse sub-parser set."""
    p = subparsers.add_parser("systolic", help="simulate one GEMM on a systolic array; --explain shows the dataflow cycle by cycle")
    p.add_argument("--machine", default=None, help="systolic machine name or path (tpu_v1, tpu_128, systolic_32, systolic_4)")
    p.add_argument("--M", type=positive_int, default=None, help="rows of A and C")
    p.add_argument("--N", type=positive_int, default=None, help="columns of B and C")
    p.add_argument("--K", type=positive_int, default=None, help="columns of A, rows of B")
    p.add_argument("--scalesim-config", default=None, metavar="ARCH.cfg",
                   help="run SCALE-Sim's own input files: its architecture .cfg (array, SRAMs, dataflow) ...")
    p.add_argument("--topology", default=None, metavar="LAYERS.csv", help="... with its topology .csv (GEMM or convolution layers)")
    p.add_argument("--out", default=None, help="folder for the SCALE-Sim style reports (default: scalesim_reports/RUN_NAME)")
    p.add_argument("--dataflow", choices=["ws", "os", "is"], default="ws", help="weight, output or input stationary (default ws)")
    p.add_argument("--convention", choices=["machine", "scalesim"], default="machine", help="machine hardware or SCALE-Sim's numbers")
    p.add_argument("--dtype", default=None, help="operand dtype (default: the array's own)")
    for name, typ, text in _OVERRIDES:
        p.add_argument("--" + name.replace("_", "-"), dest=name, type=typ, default=None, help=text)
    p.add_argument("--explain", action="store_true", help="print, cycle by cycle, what every PE holds and what moves")
    p.add_argument("--first-cycle", type=int, default=0, help="first cycle to explain")
    p.add_argument("--max-cycles", type=int, default=120, help="explain at most this many cycles")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(func=_cmd_systolic)


def _cmd_systolic(args) -> int:
    from gemmsim.models.systolic import simulate_systolic

    if args.scalesim_config or args.topology:
        return _cmd_scalesim_files(args)
    missing = [f"--{n}" for n in ("machine", "M", "N", "K") if getattr(args, n) is None]
    if missing:
        raise KernelError(f"systolic: give {', '.join(missing)} (or SCALE-Sim's files: --scalesim-config ARCH.cfg --topology LAYERS.csv)")
    machine = machine_of_kind(args.machine, "systolic", "systolic")
    over = {name: getattr(args, name) for name, _, _ in _OVERRIDES if getattr(args, name) is not None}
    res = simulate_systolic(machine, M=args.M, N=args.N, K=args.K, dataflow=args.dataflow, convention=args.convention,
                            dtype=args.dtype, **over)
    cycles = explain(res, args.first_cycle, args.max_cycles) if args.explain else None
    if args.json:
        d = res.to_dict()
        if cycles is not None:
            d["explain"] = cycles
        print(json.dumps(d, default=_jsonable))
        return 0
    print(summary(res))
    if cycles is not None:
        print()
        print(legend(res))
        for c in cycles:
            print()
            print(render_cycle(c))
    return 0


def _cmd_scalesim_files(args) -> int:
    """SCALE-Sim's .cfg and topology in, its COMPUTE/BANDWIDTH/DETAILED_ACCESS reports out (gemmsim.run.scalesim_io)."""
    from pathlib import Path

    from gemmsim.run.scalesim_io import read_config, run_scalesim_files

    if not (args.scalesim_config and args.topology):
        raise KernelError("give both --scalesim-config ARCH.cfg and --topology LAYERS.csv")
    machine = machine_of_kind(args.machine or "systolic_4", "systolic", "systolic")
    cfg = read_config(args.scalesim_config)
    out = Path(args.out or Path("scalesim_reports") / cfg.run_name)
    rows = run_scalesim_files(args.scalesim_config, args.topology, out, machine)
    if args.json:
        print(json.dumps({"out": str(out), "layers": rows}, default=_jsonable))
        return 0
    print(f"{cfg.run_name}: {cfg.rows} x {cfg.cols} array, {cfg.dataflow}, SRAMs {cfg.ifmap_kib}/{cfg.filter_kib}/{cfg.ofmap_kib} KiB")
    print(f"{'layer':<14} {'M x N x K':>18} {'total cycles':>13} {'util %':>8} {'mapping %':>10}")
    for r in rows:
        shape = f"{r['M']}x{r['N']}x{r['K']}"
        print(f"{r['name']:<14} {shape:>18} {r['total_cycles']:>13,} {r['overall_util_pct']:>8.2f} {r['mapping_efficiency_pct']:>10.2f}")
    print(f"reports: {out}/COMPUTE_REPORT.csv, BANDWIDTH_REPORT.csv, DETAILED_ACCESS_REPORT.csv (differences in README.txt)")
    return 0


def _jsonable(x):
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, (tuple, np.ndarray)):
        return list(x)
    raise TypeError(f"not JSON-able: {type(x).__name__}")


def summary(res) -> str:
    """The counters of a result as aligned text."""
    from gemmsim.machine.systolic import DATAFLOW_NAMES

    lines = [
        f"{res.machine}: {res.rows} x {res.cols} array, {DATAFLOW_NAMES[res.dataflow]} ({res.dataflow})"
        f"{'' if res.native_dataflow else ' [not a dataflow of this machine: a what-if]'}, convention {res.convention}, {res.dtype}",
        f"GEMM M={res.M} N={res.N} K={res.K}: {res.macs} MACs in {res.folds} folds ({' x '.join(map(str, res.fold_grid))})",
    ]
    if "compute_dtype_note" in res.extras:
        lines.append(f"note: {res.extras['compute_dtype_note']}")
    rows = [
        ("total cycles", f"{res.total_cycles}", f"{res.time_s * 1e6:.3f} us"),
        ("compute cycles", f"{res.compute_cycles}", "fill, drain and tile loads included"),
        ("stall cycles", f"{res.stall_cycles}", "waiting for DRAM"),
        ("utilization", f"{res.utilization:.4f}", "MACs / (PEs x peak rate x total cycles)"),
        ("mapping efficiency", f"{res.mapping_efficiency:.4f}", "mean PEs a fold maps work to / PEs"),
    ]
    for op in ("A", "B", "C"):
        rows.append((f"SRAM {op} reads / writes", f"{res.sram_reads[op]} / {res.sram_writes[op]}", "elements"))
    for op in ("A", "B", "C"):
        rows.append((f"DRAM {op}", f"{res.dram_bytes_by_operand[op]}", "bytes"))
    rows.append(("DRAM total", f"{res.dram_bytes}", "bytes"))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    lines += [f"  {a:<{w0}}  {b:>{w1}}  {c}" for a, b, c in rows]
    return "\n".join(lines)


def legend(res) -> str:
    """How to read the cycle grids of one dataflow."""
    if res.dataflow == "ws":
        return ("Each cell: the weight B[k,n] held in the PE x the activation A[m,k] passing left to right; the partial sum of "
                "C[m,n] flows down and leaves the bottom into the accumulators; (B[k,n]) = the next weight shifting in from "
                "the top or waiting in the PE's shadow register. '.' = idle.")
    if res.dataflow == "is":
        return ("Each cell: the input A[m,k] held in the PE x the value B[k,n] passing left to right; the partial sum of "
                "C[m,n] flows down and leaves the bottom into the accumulators; (A[m,k]) = the next input shifting in or "
                "waiting in the shadow register. '.' = idle.")
    return ("Each cell: the output C[m,n] accumulating in the PE, and the k of the product A[m,k] x B[k,n] it adds this "
            "cycle (A enters from the left, B from the top); (C[m,n]) = a finished sum in the PE's second register, "
            "shifting down and out of the bottom. '.' = idle.")


def explain(res, first: int = 0, count: int = 120) -> list[dict]:
    """Cycle-by-cycle state of a small array: per cycle the phases, the PE grid as text cells, the SRAM accesses."""
    from gemmsim.kernels.systolic import OPERANDS
    from gemmsim.models.systolic import array_state

    if res.rows * res.cols > EXPLAIN_MAX_PES:
        raise KernelError(f"--explain is for arrays of at most {EXPLAIN_MAX_PES} PEs ({res.rows} x {res.cols} given); use --rows/--cols")
    if first < 0 or count < 1:
        raise KernelError("--first-cycle must be >= 0 and --max-cycles >= 1")
    if count > EXPLAIN_MAX_CYCLES:
        raise KernelError(f"--max-cycles {count}: explain prints at most {EXPLAIN_MAX_CYCLES} cycles; use --first-cycle to move the window")
    last = min(res.total_cycles - 1 if res.convention == "machine" else res.total_cycles, first + count - 1)
    trace = [c[(c["cycle"] >= first) & (c["cycle"] <= last)] for c in res.trace()]
    tr = np.concatenate(trace) if trace else np.empty(0)
    lay_elem, M, N, K = _elem(res), res.M, res.N, res.K
    bases = _bases(res)
    out = []
    for cyc in range(first, last + 1):
        st = array_state(res, cyc)
        cells = []
        for r in range(res.rows):
            row = []
            for c in range(res.cols):
                row.append(_cell(res.dataflow, st, r, c))
            cells.append(row)
        ev = tr[tr["cycle"] == cyc] if len(tr) else tr
        reads, writes = [], []
        for rec in ev:
            op = OPERANDS[rec["operand"]]
            i, j = _indices(op, int(rec["addr"]), bases, lay_elem, M, N, K)
            label = f"{op}[{i},{j}]"
            (writes if rec["is_write"] else reads).append(label)
        out.append({"cycle": cyc, "phases": [[int(f), p] for f, p in st["phase"]], "pes": cells, "sram_reads": reads, "sram_writes": writes})
    return out


def _elem(res) -> int:
    from gemmsim.units import dtype_bytes

    return dtype_bytes(res.dtype)


def _bases(res):
    from gemmsim.trace import Layout

    lay = Layout.build(res.M, res.N, res.K, res.dtype)
    return {"A": (lay.a_base, res.K), "B": (lay.b_base, res.N), "C": (lay.c_base, res.N)}


def _indices(op, addr, bases, elem, M, N, K):
    base, width = bases[op]
    return divmod((addr - base) // elem, width)


def _cell(dataflow, st, r, c) -> str:
    si, sj, mi, mj = (int(st[k][r, c]) for k in ("stat_i", "stat_j", "mov_i", "mov_j"))
    hi, hj = int(st["shadow_i"][r, c]), int(st["shadow_j"][r, c])
    if dataflow == "os":
        acc = f"C[{si},{sj}]" + (f" k{mj}" if mi >= 0 else "") if si >= 0 else "."
        return acc + (f" (C[{hi},{hj}])" if hi >= 0 else "")
    stat_name, mov_name = ("B", "A") if dataflow == "ws" else ("A", "B")
    stat = f"{stat_name}[{si},{sj}]" if si >= 0 else "."
    mov = f"x{mov_name}[{mi},{mj}]" if mi >= 0 else ""
    shadow = f" ({stat_name}[{hi},{hj}])" if hi >= 0 else ""
    return stat + mov + shadow


def render_cycle(c: dict) -> str:
    """One explained cycle as a text grid."""
    phases = ", ".join(f"fold {f} {p}" for f, p in c["phases"])
    cols = len(c["pes"][0])
    width = max(max(len(x) for row in c["pes"] for x in row), 6)
    head = f"cycle {c['cycle']:>4}  {phases}"
    lines = [head, "      " + " ".join(f"{'col ' + str(j):<{width}}" for j in range(cols))]
    for i, row in enumerate(c["pes"]):
        lines.append(f"row {i:<2}" + "".join(f"{x:<{width}} " for x in row).rstrip())
    if c["sram_reads"]:
        lines.append("  reads : " + " ".join(c["sram_reads"]))
    if c["sram_writes"]:
        lines.append("  writes: " + " ".join(c["sram_writes"]))
    return "\n".join(lines)
