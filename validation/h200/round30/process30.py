"""Round 30: the S sweep's block schedules (raw/round30.tar.gz), and the model's caches replayed on them.

    python validation/h200/round30/process30.py            # -> schedule30.csv (how the blocks sat), ~1 s
    python validation/h200/round30/process30.py replay [4096] [8192]   # -> replay30.csv (the 64x64 tile; ~2 / ~8 min)
    python validation/h200/round30/process30.py figure     # -> figures/schedule30.png

Each sched_<api>_<M>.csv of the archive holds, for the 11th of each configuration's 20 timed launches, every block's
SM and its globaltimer (ns, from the launch's first block start) and clock64 at start and end; the configurations
are in the order of the <api>_<M>.csv summary rows (copy kernels, then the copy-less twins).

schedule30.csv, per launch: the median block time; the wave spread (the 5-95 % range of a wave's block starts, waves
of SMs x blocks per SM blocks in launch order, over the median block time; median over the waves after the first and
before the last: ~0.9 for starts spread evenly over a block, ~0 for lockstep); and the gaps between consecutive block
starts on one SM after the first wave, over the median block time: the share under 0.1 ("together") and their median
(1 / blocks per SM for an even spread on the SM).

replay30.csv: the model's memory system (gpu_memory.simulate_memory, every block, no sampling) on the 64x64 mma.sync
launches at 4096 (S = 1..4) under four schedules -- the one measured here (round 5's method: each block on the model SM
of its measured SM's L2 partition, in the slot its SM freed first, starting at its measured time in units of the
median block), the model's default spread (start_stagger 1), lockstep (0) -- against ncu's DRAM bytes of the same
kernels (round 7, ../round7/tc_schedule7.csv; other launches of the same binaries).
"""
from __future__ import annotations

import csv
import gzip
import io
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from h200_io import save_figure, write_rows  # noqa: E402

ARCHIVE = HERE / "raw" / "round30.tar.gz"
SMS = 132


def _member(tar, name, tag="30"):
    return tar.extractfile(f"raw{tag}/{name}")


def launches(archive: Path = ARCHIVE, sizes: tuple = (4096, 8192), tag: str = "30") -> list[dict]:
    """Every traced launch: its summary row (api, M and the <api>_<M>.csv columns) and its blocks' arrays. Round 32's
    archive has the same layout (``tag`` "32", its sizes)."""
    out = []
    with tarfile.open(archive) as tar:
        for api in ("mma", "wmma"):
            for M in sizes:
                rows = list(csv.DictReader(io.TextIOWrapper(_member(tar, f"{api}_{M}.csv", tag))))
                data = np.loadtxt(io.TextIOWrapper(gzip.open(_member(tar, f"sched_{api}_{M}.csv.gz", tag))), delimiter=",",
                                  dtype=np.int64)
                for k, r in enumerate(rows):
                    d = data[data[:, 0] == k]
                    d = d[np.argsort(d[:, 1])]
                    out.append(dict(api=api, **r, block=d[:, 1], sm=d[:, 2], start=d[:, 3], end=d[:, 4],
                                    cycles=d[:, 6] - d[:, 5]))
    return out


def sitting(r: dict) -> dict:
    bps, n = int(r["blocks_per_sm"]), len(r["block"])
    dur = float(np.median(r["end"] - r["start"]))
    wave = SMS * bps
    spreads = []
    for w in range(1, n // wave - 1):
        st = r["start"][w * wave:(w + 1) * wave]
        spreads.append((np.percentile(st, 95) - np.percentile(st, 5)) / dur)
    gaps = []
    for s in np.unique(r["sm"]):
        st = np.sort(r["start"][(r["sm"] == s) & (r["block"] >= wave)])
        gaps += list(np.diff(st) / dur)
    gaps = np.array(gaps) if gaps else np.array([np.nan])
    return dict(api=r["api"], kernel=r["kernel"], copy=r["copy"], stages=r["stages"], M=r["M"], blocks=n,
                blocks_per_sm=bps, waves=round(n / wave, 2), sm_mhz=r["sm_mhz"], tflops=r["tflops"],
                median_block_us=round(dur / 1e3, 2), block_clk=int(np.median(r["cycles"])),
                wave_spread=round(float(np.median(spreads)), 3) if spreads else "",
                sm_gaps_together=round(float(np.mean(gaps < 0.1)), 3), sm_gap_median=round(float(np.median(gaps)), 3),
                even_gap=round(1 / bps, 3), sms_used=len(np.unique(r["sm"])))


def replay(N: int = 4096) -> None:
    sys.path.insert(0, str(HERE.parent / "round28"))
    import predict28 as p
    import gemmsim.models.gpu_memory as gm
    from gemmsim.kernels.gpu import KERNELS
    from gemmsim.machine import load_machine
    from gemmsim.models.occupancy import resident
    from gemmsim.sim.gpu import l1_carveout
    from gemmsim.trace import Layout

    spec5 = __import__("importlib.util").util.spec_from_file_location("mms5", HERE.parent / "round5" / "model_measured_schedule.py")
    r5 = __import__("importlib.util").util.module_from_spec(spec5)
    spec5.loader.exec_module(r5)
    m = load_machine("h200")
    ncu = {(r["kernel"], int(r["stages"]), int(r["N"])): int(r["ncu_dram_bytes_read"])
           for r in csv.DictReader((HERE.parent / "round7" / "tc_schedule7.csv").open())}
    traced = {(r["api"], r["kernel"], int(r["stages"]), int(r["M"])): r for r in launches() if r["copy"] == "1"}
    from gemmsim.sim.gpu import simulate_gpu

    out = []
    for S in (1, 2, 3, 4):
        prm = p.mma_params("mma_64x64_w2x2", S)
        keep = {k: prm[k] for k in ("BM", "BN", "BK", "WM", "WN", "stages", "regs", "pad")}
        spec = KERNELS["tensorcore"].spec(KERNELS["tensorcore"].params(**keep), "fp16", m, M=N)
        occ = resident(m, threads=spec.threads, regs=spec.regs, smem=spec.smem_bytes)
        L = Layout.build(N, N, N, "fp16")
        l1 = m.l1_size(l1_carveout(m, occ))
        tr = traced[("mma", "mma_64x64_w2x2", S, N)]
        assert int(tr["blocks_per_sm"]) == occ.blocks_per_sm, (S, tr["blocks_per_sm"], occ.blocks_per_sm)
        frame = dict(pid=tr["block"], smid=tr["sm"], start_ns=tr["start"], end_ns=tr["end"])
        r5.trace_frame = lambda *a, frame=frame: frame
        for sch in ("measured", "spread", "lockstep"):
            t0 = time.time()
            orig = gm._schedule
            if sch == "measured":
                tm, tn = spec.order(N, N)
                ninst = len(gm.coalesce(spec.block_trace(L, int(tm[0]), int(tn[0]), spaces=[gm.SPACE_GLOBAL]), 32))
                slot_of, start = r5.measured_schedule("tensorcore", N, "row", 0, len(tm), m.sms, occ.blocks_per_sm, ninst)
                gm._schedule = lambda blk_tpl, tpl_ninst, n_slots, first_round: (slot_of[:len(blk_tpl)], start[:len(blk_tpl)])
            try:
                c = gm.simulate_memory(m, spec, L, occ.blocks_per_sm, l1, budget=None,
                                       stagger={"spread": 1.0, "lockstep": 0.0}.get(sch, 0.0)).counters
                # the whole model (timing too) at the traced launch's clock, its memory on this schedule (a diagnostic:
                # the schedule is measured, not simulated); "spread" is the model as committed
                q = dict(prm, max_blocks=len(tr["block"]))
                if sch != "lockstep":
                    at = simulate_gpu(p.mv.machine_at(m, float(tr["sm_mhz"])), "tensorcore", M=N, N=N, K=N, dtype="fp16", **q)
                    model_tflops = round(2.0 * N ** 3 / (at["time_s"] + p.mv.launch_overhead_s(p.mv.HERE)) / 1e12, 1)
                else:
                    model_tflops = ""
            finally:
                gm._schedule = orig
            out.append(dict(kernel="mma_64x64_w2x2", stages=S, M=N, blocks_per_sm=occ.blocks_per_sm, schedule=sch,
                            dram_bytes_read=int(c["dram_bytes_read"]), l2_hit_rate=round(float(c["l2_hit_rate"]), 4),
                            l2_far_hits=int(c["l2_far_hits"]), ncu_dram_bytes_read=ncu[("mma_64x64_w2x2", S, N)],
                            over_ncu=round(c["dram_bytes_read"] / ncu[("mma_64x64_w2x2", S, N)], 2),
                            sm_mhz=tr["sm_mhz"], measured_tflops=tr["tflops"], model_tflops=model_tflops,
                            seconds=round(time.time() - t0, 1)))
            print(out[-1], flush=True)
    path = HERE / "replay30.csv"
    old = [r for r in csv.DictReader(path.open()) if int(r["M"]) != N] if path.exists() else []
    write_rows(path, old + out)


def figure() -> None:
    """Block start against launch order for three launches: lockstep waves (128x128, S = 2), and the 64x64 tile's
    spread waves at 4096 and 8192, each start in units of the launch's median block time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pick = [("mma_128x128_w2x4", "2", "4096", "128x128, 8 warps, S = 2, 4096$^3$"),
            ("mma_64x64_w2x2", "3", "4096", "64x64, 4 warps, S = 3, 4096$^3$"),
            ("mma_64x64_w2x2", "3", "8192", "64x64, 4 warps, S = 3, 8192$^3$ (first 8 waves)")]
    runs = {(r["kernel"], r["stages"], r["M"]): r for r in launches() if r["api"] == "mma" and r["copy"] == "1"}
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    for ax, (k, S, M, title) in zip(axes, pick):
        r = runs[(k, S, M)]
        dur = float(np.median(r["end"] - r["start"]))
        wave = SMS * int(r["blocks_per_sm"])
        n = min(len(r["block"]), 8 * wave)
        ax.scatter(r["block"][:n], r["start"][:n] / dur, s=1.5, color="tab:blue", label="block start (H200)")
        for w in range(0, n, wave):
            ax.axvline(w, color="0.8", lw=0.6)
        # the model's default: the first wave's slots start spread evenly over one block, and keep their phase
        first = np.arange(min(wave, n))
        ax.plot(first, first / wave, color="tab:red", lw=1.5, label="model's assumed first wave (even spread)")
        ax.set_title(f"{title}\n{r['blocks_per_sm']} blocks per SM, wave of {wave}; wave spread "
                     f"{sitting(r)['wave_spread']}", fontsize=10)
        ax.set_xlabel("block (launch order); grey lines: wave boundaries")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("start time / median block time")
    axes[0].legend(loc="upper left", fontsize=8, markerscale=5)
    fig.suptitle("When the blocks of one launch start on the H200 (round 30): lockstep waves for 128x128 at S <= 2, "
                 "smeared waves for 64x64", fontsize=11)
    save_figure(fig, HERE, "schedule30.png", dpi=110)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "figure":
        figure()
    elif len(sys.argv) > 1 and sys.argv[1] == "replay":
        for n in (sys.argv[2:] or ("4096",)):
            replay(int(n))
    else:
        rows = [sitting(r) for r in launches()]
        write_rows(HERE / "schedule30.csv", rows)
        for r in rows:
            if r["copy"] == "1":
                print({k: r[k] for k in ("api", "kernel", "stages", "M", "blocks_per_sm", "waves", "median_block_us",
                                         "wave_spread", "sm_gaps_together", "sm_gap_median", "even_gap")})
