"""The ``occupancy`` command: resident blocks per SM, the binding limit and every limit behind it.

    python -m gemmsim occupancy --machine a100 --threads 256 --regs 72 --smem 73728
    python -m gemmsim occupancy --machine h200 --threads 64 --regs 32 --smem 16384 --carveout 25 --json

The numbers are those of NVIDIA's Occupancy Calculator (``cuda_occupancy.h``), computed by
``gemmsim.models.occupancy``. Parses, calls the library, formats; nothing else.
"""

from __future__ import annotations

import json

from gemmsim.cli.common import machine_of_kind

_LIMIT_LABEL = {
    "warps": "warps",
    "registers": "registers",
    "shared_memory": "shared memory",
    "blocks": "blocks",
    "barriers": "barriers",
}


def register(subparsers) -> None:
    """Add the ``occupancy`` command to an argparse sub-parser set."""
    p = subparsers.add_parser(
        "occupancy",
        help="resident blocks per SM, the binding limit, warps and occupancy (NVIDIA's Occupancy Calculator)",
    )
    p.add_argument("--machine", required=True, help="GPU machine name or path (a100, rtx4060, h100, h200)")
    p.add_argument("--threads", type=int, required=True, help="threads per block")
    p.add_argument("--regs", type=int, required=True, help="registers per thread (ptxas -v 'Used N registers')")
    p.add_argument("--smem", type=int, default=0, help="shared memory per block in bytes, static + dynamic (default 0)")
    p.add_argument(
        "--carveout", type=int, default=None, help="shared-memory carve-out preference in percent, 0-100 (default: driver's)"
    )
    p.add_argument("--barriers", type=int, default=1, help="block barriers the kernel uses (default 1)")
    p.add_argument("--no-opt-in", dest="opt_in", action="store_false",
                   help="the kernel did not raise its dynamic shared-memory limit (blocks above 48 KiB are refused)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.add_argument("--plot", metavar="FILE.png", default=None,
                   help="also draw occupancy against threads, registers and shared memory, this launch marked (as NVIDIA's calculator)")
    p.set_defaults(func=_cmd_occupancy)


def _cmd_occupancy(args) -> int:
    from gemmsim.models.occupancy import occupancy

    machine = machine_of_kind(args.machine, "gpu", "occupancy")
    occ = occupancy(machine, threads=args.threads, regs=args.regs, smem=args.smem, carveout=args.carveout,
                    barriers=args.barriers, opt_in=args.opt_in)
    if args.plot:
        _plot(machine, args)
    if args.json:
        print(json.dumps({"machine": machine.name, **occ.to_dict()}))
        return 0
    print(format_occupancy(machine, occ))
    if args.plot:
        print(f"\nwrote {args.plot}")
    return 0


def _plot(machine, args) -> None:
    from gemmsim.errors import GemmsimError
    from gemmsim.report.occupancy_plot import occupancy_figure

    fig = occupancy_figure(machine, args.threads, args.regs, args.smem, carveout=args.carveout, barriers=args.barriers,
                           opt_in=args.opt_in)  # fmt: skip
    try:
        fig.savefig(args.plot, dpi=110)
    except (OSError, ValueError) as exc:
        raise GemmsimError(f"--plot {args.plot}: cannot write the figure ({getattr(exc, 'strerror', None) or exc})") from None


def format_occupancy(machine, occ) -> str:
    """The Occupancy Calculator's table: one line per limit with the arithmetic behind it, then the result."""
    lim, sm = machine.limits, machine.smem
    carve = "driver default" if occ.carveout_pct is None else f"{occ.carveout_pct} %"
    head = (
        f"{machine.name} (cc {machine.compute_capability}, {machine.sms} SMs): {occ.threads_per_block} threads/block "
        f"({occ.warps_per_block} warps), {occ.registers_per_thread} registers/thread, {occ.smem_per_block} B shared "
        f"memory/block, carve-out {carve}"
    )
    rpw = occ.registers_per_warp_alloc
    if occ.limit_registers is None:
        reg_detail = "no registers used"
    else:
        per_sub = machine.registers_per_sub_partition // rpw
        reg_detail = (
            f"{occ.registers_per_thread} x 32 -> {rpw} per warp (units of {lim.register_alloc_unit}); "
            f"{machine.registers_per_sub_partition} per sub-partition / {rpw} = {per_sub} warps x {lim.sub_partitions} "
            f"/ {occ.warps_per_block} warps per block"
        )
    rows = [
        ("warps", occ.limit_warps, f"{lim.max_warps_per_sm} warps per SM / {occ.warps_per_block} per block"),
        ("registers", occ.limit_registers, reg_detail),
        ("shared_memory", occ.limit_shared_memory,
         f"{occ.smem_config_bytes} B carve-out / {occ.smem_alloc_per_block} B per block "
         f"({occ.smem_per_block} + {sm.reserved_per_block} reserved, rounded to {sm.alloc_unit} B)"),
        ("blocks", occ.limit_blocks, "resident-block slots per SM"),
    ]
    if occ.limit_barriers is not None:
        rows.append(("barriers", occ.limit_barriers, f"{lim.barriers_per_sm} barrier resources per SM"))
    lines = [head, "", f"{'limit':15s} {'blocks/SM':>9s}  how", f"{'-' * 15} {'-' * 9}  {'-' * 40}"]
    for key, value, detail in rows:
        mark = " <" if key in occ.limiters else "  "
        shown = "-" if value is None else str(value)
        lines.append(f"{_LIMIT_LABEL[key]:15s} {shown:>9s}{mark} {detail}")
    if occ.blocks_per_sm == 0:
        lines += ["", f"0 blocks/SM: the launch cannot run -- {occ.reason}"]
        return "\n".join(lines)
    lines += [
        "",
        f"{occ.blocks_per_sm} blocks/SM, limited by {', '.join(_LIMIT_LABEL[k] for k in occ.limiters)}; "
        f"{occ.warps_per_sm} of {occ.max_warps_per_sm} warps = occupancy {100 * occ.occupancy:.1f} %",
    ]
    return "\n".join(lines)
