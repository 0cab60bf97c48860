"""Model-against-measurement figures for validation/h200/README.md.

Usage (from the repository root): python validation/h200/figures.py
Writes validation/h200/figures/{occupancy,wavefronts,sectors,waves,l2_raster,chain_waves,launch_order}.png from
the CSVs beside this script (and in round3/) and gemmsim's models (matplotlib object API, Agg backend).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from gemmsim.errors import LaunchError  # noqa: E402
from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.models.banks import smem_wavefronts  # noqa: E402
from gemmsim.models.coalesce import global_sectors  # noqa: E402
from gemmsim.models.occupancy import occupancy  # noqa: E402
from gemmsim.models.waves import chain_grid_cycles, wave_time  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE / "figures"


def rows(name: str) -> list[dict]:
    return list(csv.DictReader((HERE / name).open()))


def fig_occupancy(h) -> None:
    data = rows("occupancy.csv")
    fig = Figure(figsize=(9, 3.6))
    axes = fig.subplots(1, 2)
    ax = axes[0]
    for regs, color in ((32, "C0"), (72, "C1"), (128, "C2")):
        pts = [r for r in data if int(r["regs"]) == regs and r["threads"] == "256" and r["carveout"] == "-1"]
        x = [int(r["smem_bytes"]) / 1024 for r in pts]
        ax.plot(x, [int(r["blocks_per_sm"]) for r in pts], "o", color=color, label=f"CUDA runtime, {regs} regs")
        xs = np.linspace(0, 227 * 1024, 400).astype(int)
        ys = []
        for s in xs:
            try:
                ys.append(occupancy(h, threads=256, regs=regs, smem=int(s)).blocks_per_sm)
            except LaunchError:
                ys.append(0)
        ax.step(xs / 1024, ys, where="post", color=color, lw=1)
    ax.set(xlabel="shared memory per block (KiB)", ylabel="blocks / SM", title="H200, 256 threads: model (lines) vs API")
    ax.legend(fontsize=7)
    ax = axes[1]
    agree = defaultdict(int)
    for r in data:
        t, regs, smem, carve, api = (int(r[k]) for k in ("threads", "regs", "smem_bytes", "carveout", "blocks_per_sm"))
        try:
            got = occupancy(h, threads=t, regs=regs, smem=smem, carveout=None if carve < 0 else carve).blocks_per_sm
        except LaunchError:
            got = 0
        agree[(api, got)] += 1
    keys = sorted(agree)
    ax.scatter([k[0] for k in keys], [k[1] for k in keys], s=[8 + 2 * np.sqrt(agree[k]) for k in keys], alpha=0.6)
    ax.plot([0, 32], [0, 32], "k--", lw=0.8)
    ax.set(xlabel="cudaOccupancyMaxActiveBlocksPerMultiprocessor", ylabel="gemmsim occupancy()",
           title=f"all {len(data)} configurations (0 = refused)")
    fig.tight_layout()
    fig.savefig(OUT / "occupancy.png", dpi=80)


def fig_patterns(h, csv_name: str, fn, column: str, out: str, title: str) -> None:
    data = rows(csv_name)
    names = [r["pattern"] for r in data]
    measured = [int(r[column]) / int(r["instructions"]) for r in data]
    model = [fn(h, np.array([int(x) for x in r["addresses"].split()]), int(r["width"]), op=r["op"])
             if csv_name.startswith("smem") else fn(h, np.array([int(x) for x in r["addresses"].split()]), int(r["width"]))
             for r in data]
    fig = Figure(figsize=(12, 4.2))
    ax = fig.subplots()
    x = np.arange(len(names))
    ax.bar(x, measured, color="C0", label="ncu on the H200")
    ax.plot(x, model, "r_", markersize=9, mew=2, label="gemmsim model")
    ax.set_xticks(x, names, rotation=90, fontsize=5)
    ax.set_yscale("log", base=2)
    ax.set(ylabel=column + " per instruction", title=title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / out, dpi=80)


def fig_waves(h) -> None:
    data = rows("waves.csv")
    overhead = float(data[0]["time_ms"])
    fma = [r for r in data if r["kernel"] == "fma"]
    flops = 256 * int(fma[0]["block_param"]) * 16 * 8 * 2
    fma_block_s = flops / (h.flops_per_clk("fp32", tensor=False) * h.clock_mhz_max * 1e6)
    fig = Figure(figsize=(10, 3.6))
    axes = fig.subplots(1, 2)
    for ax, kernel, regime, block_s in ((axes[0], "sleep", "latency", 50e-6), (axes[1], "fma", "throughput", fma_block_s)):
        for i, bps in enumerate((1, 2, 4, 8)):
            pts = sorted((int(r["grid"]), float(r["time_ms"])) for r in data
                         if r["kernel"] == kernel and int(r["blocks_per_sm"]) == bps)
            g = np.array([p[0] for p in pts])
            ax.plot(g, [p[1] for p in pts], ".", color=f"C{i}", ms=3, label=f"measured, {bps} blocks/SM")
            gg = np.arange(1, g.max() + 1)
            ax.plot(gg, [wave_time(h, int(x), bps, block_s, regime) * 1e3 + overhead for x in gg], "-", color=f"C{i}", lw=0.7)
        ax.set(xlabel="grid (blocks)", ylabel="time (ms)", title=f"{kernel} kernel: '{regime}' regime (lines = model)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / "waves.png", dpi=80)


def fig_l2_raster() -> None:
    data = rows("l2_raster.csv")
    model = rows("model_l2_raster.csv") if (HERE / "model_l2_raster.csv").is_file() else []
    fig = Figure(figsize=(10, 3.6))
    axes = fig.subplots(1, 2)
    for order, color in (("row", "C0"), ("column", "C1"), ("grouped", "C2")):
        pts = [r for r in data if r["order"] == order]
        n = [int(r["N"]) for r in pts]
        axes[0].plot(n, [int(r["dram_bytes_read"]) / 1e9 for r in pts], "o-", color=color, label=f"{order}, measured")
        axes[1].plot(n, [float(r["l2_hit_rate_pct"]) for r in pts], "o-", color=color, label=f"{order}, measured")
        mp = [r for r in model if r["order"] == order]
        if mp:
            mn = [int(r["N"]) for r in mp]
            axes[0].plot(mn, [float(r["dram_bytes_read"]) / 1e9 for r in mp], "x--", color=color, ms=8, label=f"{order}, model")
            axes[1].plot(mn, [float(r["l2_hit_rate_pct"]) for r in mp], "x--", color=color, ms=8, label=f"{order}, model")
    n = np.array(sorted({int(r["N"]) for r in data}))
    axes[0].plot(n, 2 * n * n * 4 / 1e9, "k--", lw=0.8, label="A + B once")
    axes[0].plot(n, 2 * n**3 * 4 / 32 / 1e9, "k:", lw=0.8, label="no L2 reuse: 2 N^3 x 4 B / 32")
    axes[0].set(xscale="log", yscale="log", xlabel="N", ylabel="DRAM bytes read (GB)", title="tiled SGEMM (TILE 32) on the H200")
    axes[1].set(xscale="log", xlabel="N", ylabel="L2 sector hit rate (%)", title="ncu lts__t_sector_hit_rate.pct")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / "l2_raster.png", dpi=80)


def fig_chain_waves(h) -> None:
    """Round 3: FMA-chain blocks, time against grid, measured (dots) and model + launch overhead (lines)."""
    data = list(csv.DictReader((HERE / "round3" / "waves3.csv").open()))
    overhead_us = next(float(r["time_ms"]) for r in data if r["kernel"] == "empty") * 1e3
    fig = Figure(figsize=(11, 7))
    axes = fig.subplots(2, 2).ravel()
    for ax, (threads, smem) in zip(axes, ((64, 0), (128, 0), (256, 0), (128, 24000))):
        for i, chains in enumerate((1, 2, 4)):
            pts = sorted((int(r["grid"]), float(r["time_ms"]) * 1e3) for r in data if r["kernel"] == "chains"
                         and int(r["threads"]) == threads and int(r["smem_bytes"]) == smem and int(r["chains"]) == chains)
            bps = next(int(r["blocks_per_sm"]) for r in data if r["kernel"] == "chains" and int(r["threads"]) == threads
                       and int(r["smem_bytes"]) == smem)
            steps = next(int(r["steps"]) for r in data if r["kernel"] == "chains")
            g = np.array([p[0] for p in pts])
            ax.plot(g, [p[1] for p in pts], ".", color=f"C{i}", ms=3, label=f"{chains} chain{'s' if chains > 1 else ''}, measured")
            gg = np.unique(np.linspace(1, g.max(), 400).astype(int))
            ax.plot(gg, [chain_grid_cycles(h, int(x), bps, threads, chains, steps).cycles / h.clock_mhz_max + overhead_us
                         for x in gg], "-", color=f"C{i}", lw=0.8, label=f"{chains} chain{'s' if chains > 1 else ''}, model")
        for k in range(1, 4):
            ax.axvline(k * bps * h.sms, color="0.7", lw=0.6, ls=":")
        extra = f", {smem} B smem" if smem else ""
        ax.set(xlabel="grid (blocks)", ylabel="time (us)",
               title=f"{threads} threads{extra}: {bps} blocks/SM (dotted: full waves)")
        ax.legend(fontsize=7, ncol=2)
    fig.suptitle("FMA-chain blocks on the H200 (8192 dependent FMAs per chain): model = oldest-first rate sharing, "
                 "FMA latency 4.06 cycles", fontsize=9)
    fig.tight_layout()
    fig.savefig(OUT / "chain_waves.png", dpi=80)


def replayed(kernel: str, n: int, order: str) -> float | None:
    """Round 5: the model's DRAM bytes with the block schedule the H200 ran (round5/model_measured_schedule.py)."""
    path = HERE / "round5" / "model_measured_schedule.csv"
    if not path.is_file():
        return None
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.spec_from_file_location("_mms", HERE / "round5" / "model_measured_schedule.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    blocks, wave = ((n // 16) ** 2, 1056) if kernel == "naive" else {("tiled_smem", 3072): (9216, 264)}.get((kernel, n), (0, 0))
    rows = list(csv.DictReader(path.open()))
    return mod.launch_estimate(rows, kernel, n, order, blocks, wave) if blocks else None


def fig_placement(ax) -> None:
    """Round 24: column / row DRAM bytes of the tiled kernel at N = 3072 (12 placements of A, B, C) and of the naive
    kernel at 6144 (6), ncu one launch each, against gemmsim's ratio (one line per kernel: it has no physical pages)."""
    sets = []
    tiled = [r for r in csv.DictReader((HERE / "round24" / "asym24.csv").open()) if r["N"] == "3072"]
    by = {(r["placement"], r["repeat"], r["order"]): float(r["dram_gb"]) for r in tiled}
    keys = sorted({(p, rep) for p, rep, _ in by}, key=lambda k: (not k[0].startswith("sep"), k[0], k[1]))
    sim = {r["order"]: float(r["gemmsim_gb"]) for r in tiled if r["placement"] == "sep" and r["repeat"] == "1"}
    sets.append(("tiled 32x32, N = 3072", "C1", [(f"{p} {rep}" if p == "sep" else p, by[(p, rep, "column")] / by[(p, rep, "row")])
                                              for p, rep in keys], sim["column"] / sim["row"]))
    naive = list(csv.DictReader((HERE / "round24" / "asym24c.csv").open()))
    nb = {(r["placement"], r["order"]): r for r in naive if r["N"] == "6144"}
    places = sorted({p for p, _ in nb}, key=lambda p: (p != "sep", p))
    sets.append(("naive 16x16, N = 6144", "C3", [(p, float(nb[(p, "column")]["dram_gb"]) / float(nb[(p, "row")]["dram_gb"]))
                                              for p in places],
                 float(nb[("sep", "column")]["gemmsim_gb"]) / float(nb[("sep", "row")]["gemmsim_gb"])))
    x0, ticks, labels = 0, [], []
    for name, color, pts, model in sets:
        xs = np.arange(x0, x0 + len(pts))
        ax.plot(xs, [v for _, v in pts], "o", color=color, label=f"{name}: measured, one placement each")
        ax.plot([xs[0] - 0.4, xs[-1] + 0.4], [model] * 2, "--", color=color, lw=1.2, label=f"{name}: gemmsim")
        ticks += list(xs)
        labels += [p for p, _ in pts]
        x0 += len(pts) + 1
    ax.axhline(1, color="0.5", lw=0.8)
    ax.set_xticks(ticks, labels, rotation=60, fontsize=7)
    ax.set(ylabel="DRAM bytes read, column order / row order", ylim=(0.6, 1.9),
           title="where A, B, C lie (round 24)")
    ax.legend(fontsize=6.5, loc="upper left")
    ax.annotate("sep: three cudaMalloc's; swap: B before A;\npad: rows + 32; rand: random 2 MiB placements",
                (0.02, 0.03), xycoords="axes fraction", fontsize=7, color="0.3")


def fig_launch_order() -> None:
    """Round 3: DRAM bytes read by launch order, naive 16x16 and tiled 32x32 SGEMM, measured and model; round 5:
    the model replayed with the measured block starts where its own schedule misses; rounds 7-7c: every ncu launch
    of the naive kernel at N = 4224-8448 over the model's bytes (with round 14's drift of block columns); round 24: the
    column / row ratio of the tiled kernel at 3072 and the naive one at 6144 under different placements."""
    meas = [r for r in csv.DictReader((HERE / "round3" / "order_l2.csv").open()) if r["run"] == "run3"]
    mpath = HERE / "round3" / "model_order.csv"
    model = list(csv.DictReader(mpath.open())) if mpath.is_file() else []
    fig = Figure(figsize=(19, 4.6))
    axes = fig.subplots(1, 4, gridspec_kw={"width_ratios": [1, 1, 1.15, 0.9]})
    for ax, (kname, mname, title) in zip(axes[:2], (("naive16", "naive", "naive, 16 x 16 threads, one C element each"),
                                                 ("tiled32", "tiled_smem", "tiled, 32 x 32 shared-memory tiles"))):
        starred = False
        for order, color in (("row", "C0"), ("column", "C1"), ("grouped", "C2")):
            pts = sorted((int(r["N"]), int(r["dram_bytes_read"])) for r in meas if r["kernel"] == kname and r["order"] == order)
            ax.plot([p[0] for p in pts], [p[1] / 1e9 for p in pts], "o-", color=color, label=f"{order}, measured")
            mp = sorted((int(r["N"]), float(r["model_dram_bytes_read"])) for r in model
                        if r["kernel"] == mname and r["order"] == order)
            if mp:
                ax.plot([p[0] for p in mp], [p[1] / 1e9 for p in mp], "x--", color=color, ms=8, label=f"{order}, model")
            rp = [(n, replayed(mname, n, order)) for n in (3072, 6144)]
            rp = [(n, v) for n, v in rp if v]
            if rp:
                ax.plot([p[0] for p in rp], [p[1] / 1e9 for p in rp], "*", color=color, mec="k", ms=12,
                        label=None if starred else "model on the measured block starts (colour: order)")
                starred = True
        ax.set(xscale="log", yscale="log", xlabel="N", ylabel="DRAM bytes read (GB)", title=title)
        ax.minorticks_off()
        ax.set_xticks([2048, 3072, 4096, 6144, 8192], labels=["2048", "3072", "4096", "6144", "8192"])
    ax = axes[2]
    r7 = HERE / "round7"
    ncu: dict = {}
    for r in csv.DictReader((r7 / "ncu7.csv").open()):
        ncu.setdefault((int(r["N"]), r["order"]), []).append(float(r["dram_bytes_read"]))
    lock = {(int(r["N"]), r["order"]): float(r["model_dram_bytes_read"]) for r in csv.DictReader((r7 / "model7.csv").open())}
    sizes = sorted({n for n, _ in ncu})
    ax.axhspan(1 / 1.5, 1.5, color="0.93", zorder=0, label="within 1.5x of the model")
    ax.axhline(1, color="0.5", lw=0.8)
    for order, color, dx in (("row", "C0", -40), ("column", "C1", 40)):
        for i, n in enumerate(n for n in sizes if (n, order) in ncu):
            v = np.array(ncu[(n, order)]) / lock[(n, order)]
            ax.plot([n + dx] * 2, [v.min(), v.max()], color=color, lw=3, solid_capstyle="butt")
            ax.plot([n + dx] * len(v), v, "o", color=color, ms=3, label=f"{order} order, every ncu launch" if i == 0 else None)
    stars = [(n, replayed("naive", n, "column")) for n in sizes]
    stars = [(n, v / lock[(n, "column")]) for n, v in stars if v]
    ax.plot([n + 40 for n, _ in stars], [v for _, v in stars], "*", color="C1", mec="k", ms=12,
            label="column order, model on the measured block starts")
    for n in sizes:
        k = 1056 / (n // 16)
        ax.annotate(f"{k:.2f}", (n, 0.55), ha="center", fontsize=7, color="C3" if k == round(k) else "0.4")
    ax.set(xlabel="N (red: a wave holds whole block columns; there they drift)",
           ylabel="DRAM bytes read / model", ylim=(0.5, 2.3), title="naive kernel, rounds 7-7c: launches against the model")
    ax.legend(fontsize=7, loc="upper right")
    fig_placement(axes[3])
    fig.suptitle("Launch order on the H200 (ncu dram__bytes_read.sum, cold L2) against gemmsim's memory model "
                 "\n(naive: blocks in lockstep, block columns drifting apart at the red sizes (round 14); tiled: spread over a block; "
                 "stars: the model run on the block starts the H200 traced)", fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()  # one legend for both byte panels, below them
    fig.legend(handles, labels, fontsize=7, ncol=4, loc="lower left", bbox_to_anchor=(0.04, 0.0))
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(OUT / "launch_order.png", dpi=80)


def main() -> int:
    OUT.mkdir(exist_ok=True)
    h = load_machine("h200")
    fig_occupancy(h)
    fig_patterns(h, "smem_wavefronts.csv", smem_wavefronts, "wavefronts", "wavefronts.png",
                 "shared-memory wavefronts per warp instruction: model vs Nsight Compute")
    fig_patterns(h, "global_sectors.csv", global_sectors, "sectors", "sectors.png",
                 "32-byte sectors per warp request: model vs Nsight Compute")
    fig_waves(h)
    fig_l2_raster()
    fig_chain_waves(h)
    fig_launch_order()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
