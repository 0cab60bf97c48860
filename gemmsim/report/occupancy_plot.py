"""Occupancy curves as NVIDIA's Occupancy Calculator draws them: occupancy against threads per block, registers per
thread and shared memory per block, each with the other two held at the launch's values and the launch marked.

Every point is ``gemmsim.models.occupancy.occupancy`` (cuda_occupancy.h's arithmetic); a configuration the hardware
refuses to launch is drawn at 0 %, as the calculator and cudaOccupancyMaxActiveBlocksPerMultiprocessor report it.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.errors import LaunchError  # noqa: E402


def _occ(machine, **kw) -> float:
    from gemmsim.models.occupancy import occupancy

    try:
        return 100.0 * occupancy(machine, **kw).occupancy
    except LaunchError:
        return 0.0


def occupancy_curves(machine, threads: int, regs: int, smem: int = 0, carveout: int | None = None, barriers: int = 1,
                     opt_in: bool = True) -> dict:  # fmt: skip
    """``{"threads": (xs, ys), "registers": (xs, ys), "shared_memory": (xs, ys), "point": {...}}``, ys in percent."""
    base = dict(threads=threads, regs=regs, smem=smem, carveout=carveout, barriers=barriers, opt_in=opt_in)
    lim, sm = machine.limits, machine.smem
    smem_max = sm.per_block_optin if opt_in else min(sm.per_block_optin, 48 * 1024)
    t_xs = list(range(32, lim.max_threads_per_block + 1, 32))
    r_xs = list(range(1, lim.max_registers_per_thread + 1))
    step = max(sm.alloc_unit, smem_max // 256)
    s_xs = list(range(0, smem_max + 1, step))
    return {
        "threads": (t_xs, [_occ(machine, **{**base, "threads": x}) for x in t_xs]),
        "registers": (r_xs, [_occ(machine, **{**base, "regs": x}) for x in r_xs]),
        "shared_memory": (s_xs, [_occ(machine, **{**base, "smem": x}) for x in s_xs]),
        "point": {"threads": threads, "registers": regs, "shared_memory": smem, "occupancy_pct": _occ(machine, **base)},
    }


def occupancy_figure(machine, threads: int, regs: int, smem: int = 0, **kw) -> Figure:
    """Three panels, the launch marked in red on each."""
    c = occupancy_curves(machine, threads, regs, smem, **kw)
    p = c["point"]
    fig = Figure(figsize=(13, 3.6), layout="constrained")
    axes = fig.subplots(1, 3)
    panels = (("threads", "threads per block", p["threads"]), ("registers", "registers per thread", p["registers"]),
              ("shared_memory", "shared memory per block (KiB)", p["shared_memory"]))  # fmt: skip
    for ax, (key, label, x0) in zip(axes, panels):
        xs, ys = c[key]
        scale = 1024 if key == "shared_memory" else 1
        ax.step([x / scale for x in xs], ys, where="post", color="#1f77b4")
        ax.plot([x0 / scale], [p["occupancy_pct"]], "o", color="#d62728", ms=8, label=f"this launch: {p['occupancy_pct']:.0f} %")
        ax.set_xlabel(label)
        ax.set_ylabel("occupancy (% of max warps)")
        ax.set_ylim(0, 105)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower left" if key != "threads" else "lower right")
    fig.suptitle(f"{machine.name}: occupancy of {threads} threads x {regs} registers, {smem} B shared memory per block "
                 "(one input varied per panel)", fontsize=11)  # fmt: skip
    return fig
