"""The GPU memory model fed the block schedule the H200 actually ran (issue 11's open cases: the naive kernel's
column order at N = 5632 and 6144, the tiled kernel's row/column ranking at 3072).

    python validation/h200/round5/model_measured_schedule.py [row|column] [--waves W0 W1 ...] [--measure 2]
    python validation/h200/round5/model_measured_schedule.py column --N 5632 --waves 5 20 40 --measure 1
    python validation/h200/round5/model_measured_schedule.py row --kernel tiled_smem --N 3072 --whole

The model's own schedule starts resident blocks in lockstep (``start_stagger``) or spread evenly over a block, and
keeps each slot's phase for the whole launch. Round 5's block-start traces (raw/order_trace_6144.csv.gz: every
block's SM, start and end) show what the naive 16x16 kernel really does at N = 6144: in row order all resident
blocks stay within ~0.05 of a block; in column order they hold that for ~15 waves and then break into two to
four groups, each in step inside, the groups up to a block apart. This script separates the two halves of the
question "why does column order read 1.51x the DRAM bytes of row order": given the measured start of every block
(its SM, its slot on the SM, its start time in units of the median block time), does the model's L1/L2 give the
measured bytes? If it does, the model's caches are right and what it lacks is only the timing that breaks the
launch into groups.

Method: a window of waves (one warm-up wave, then ``--measure`` waves) is simulated from cold caches with the
measured schedule, and again with only the warm-up wave; the difference over the measured waves' blocks is the
DRAM-read rate per block there. Real SMs map to model SMs by the measured L2 partition (partition_map.csv):
partition-0 SMs first, so each block's near partition is the measured one. Within an SM, blocks in pid order
(dispatch order) take the slot whose previous block ended first; start rounds = (start - window start) / median block time x the block's
warp instructions, moved later where a slot's previous block (which in the model runs exactly one block time)
has not finished. The same windows with the model's own lockstep and even-spread schedules are printed beside.
With ``--whole`` the whole launch runs under the measured schedule (the tiled kernel at N = 3072, 9,216 blocks), to
be compared with ncu's DRAM bytes of the same kernel (round3/order_l2.csv; the traces and ncu come from different
launches, whose bytes agree within 2 % between runs 2 and 3). Traces: round 5's (N = 3072, 6144), else round 7's
(naive, 5120-7168) and 7c's (4224, 4608, 8448). A window costs 10-30 s of one core. Output: model_measured_schedule.csv (appended).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import tarfile
import time
from pathlib import Path

import numpy as np

import gemmsim.models.gpu_memory as gm
from gemmsim.kernels.gpu import KERNELS as GPU_KERNELS
from gemmsim.machine import load_machine
from gemmsim.models.occupancy import resident
from gemmsim.sim.gpu import l1_carveout
from gemmsim.trace import Layout

HERE = Path(__file__).resolve().parent
OUT = HERE / "model_measured_schedule.csv"
COLS = ["kernel", "N", "order", "window_waves", "schedule", "blocks_measured", "dram_read_bytes_per_block", "l2_hit_rate_pct",
        "seconds"]
TRACE_NAME = {"naive": "naive16", "tiled_smem": "tiled32"}
PARAMS = {"naive": {"BX": 16, "BY": 16}, "tiled_smem": {}}


def setup(kernel_name: str, N: int, order: str):
    m = load_machine("h200")
    kernel = GPU_KERNELS[kernel_name]
    spec = kernel.spec(kernel.params(raster=order, **PARAMS[kernel_name]), "fp32", m, M=N)
    occ = resident(m, threads=spec.threads, regs=spec.regs, smem=spec.smem_bytes)
    return m, spec, occ, Layout.build(N, N, N, "fp32"), m.l1_size(l1_carveout(m, occ))


def _columns(lines, keep=None) -> dict[str, np.ndarray]:
    """pid, smid, start_ns, end_ns of a trace CSV's rows (those ``keep`` accepts), in pid order."""
    rows = [r for r in csv.DictReader(lines) if keep is None or keep(r)]
    cols = {k: np.array([int(r[k]) for r in rows], np.int64) for k in ("pid", "smid", "start_ns", "end_ns")}
    order = np.argsort(cols["pid"], kind="stable")
    return {k: v[order] for k, v in cols.items()}


def trace_frame(kernel_name: str, N: int, order: str) -> dict[str, np.ndarray]:
    """The block-start trace of one launch (arrays pid, smid, start_ns, end_ns in pid order): round 5's (naive and
    tiled, N = 3072 and 6144), else round 7's first launch of the naive kernel with row-major operands (5120-7168)."""
    r5 = HERE / "raw" / f"order_trace_{N}.csv.gz"
    if r5.exists():
        with gzip.open(r5, "rt") as f:
            return _columns(f, lambda r: r["kernel"] == TRACE_NAME[kernel_name] and r["order"] == order)
    if kernel_name != "naive":
        raise FileNotFoundError(f"no block-start trace of {kernel_name} at N = {N}")
    name = f"trace_{N}_{order}_ta0_tb0.csv"
    for arc in ("traces7_sizes.tar.gz", "traces7c.tar.gz"):
        with tarfile.open(HERE.parent / "round7" / "raw" / arc) as tar:
            if name in tar.getnames():
                return _columns(io.TextIOWrapper(tar.extractfile(name)))
    raise FileNotFoundError(f"no block-start trace of {kernel_name} at N = {N}, {order} order")


def partition_of_sm() -> dict[int, int]:
    """Round 5's probe: the L2 partition each SM is near (partition_map.csv)."""
    return {int(r["sm"]): int(r["partition"]) for r in csv.DictReader((HERE / "partition_map.csv").open())}


def measured_schedule(kernel_name: str, N: int, order: str, lo: int, hi: int, n_sm: int, bps: int, ninst: int):
    """Slot and start round of blocks ``lo..hi-1`` (pid order) as the H200 ran them."""
    d = trace_frame(kernel_name, N, order)
    dur = float(np.median(d["end_ns"] - d["start_ns"]))
    part = partition_of_sm()
    model_sm = {s: i for i, s in enumerate(sorted(part, key=lambda s: (part[s], s)))}
    smid, st, en = d["smid"][lo:hi], d["start_ns"][lo:hi], d["end_ns"][lo:hi]
    t0 = st.min()
    slot_of = np.empty(hi - lo, np.int64)
    start = np.empty(hi - lo, np.int64)
    free_ns: dict[int, list[float]] = {}
    free_rd: dict[int, list[int]] = {}
    for i in range(hi - lo):  # pid order: dispatch order, and the order the model walks a slot's blocks in
        sm = model_sm[int(smid[i])]
        ends = free_ns.setdefault(sm, [-np.inf] * bps)
        rds = free_rd.setdefault(sm, [0] * bps)
        j = int(np.argmin(ends))
        slot_of[i] = j * n_sm + sm
        start[i] = max(int(round((st[i] - t0) / dur * ninst)), rds[j])
        ends[j] = en[i]
        rds[j] = start[i] + ninst
    return slot_of, start


def window(kernel_name: str, N: int, order: str, lo: int, hi: int, schedule: str):
    """DRAM bytes read and L2 counters of blocks lo..hi-1 from cold caches, under ``schedule``."""
    m, spec, occ, L, l1 = setup(kernel_name, N, order)
    tm, tn = spec.order(N, N)
    object.__setattr__(spec, "order", lambda M_, N_: (tm[lo:hi], tn[lo:hi]))
    orig = gm._schedule
    if schedule == "measured":
        ninst = len(gm.coalesce(spec.block_trace(L, int(tm[lo]), int(tn[lo]), spaces=[gm.SPACE_GLOBAL]), 32))
        slot_of, start = measured_schedule(kernel_name, N, order, lo, hi, m.sms, occ.blocks_per_sm, ninst)
        gm._schedule = lambda blk_tpl, tpl_ninst, n_slots, first_round: (slot_of[:len(blk_tpl)], start[:len(blk_tpl)])
    try:
        stagger = {"lockstep": 0.0, "spread": 1.0}.get(schedule, 0.0)
        return gm.simulate_memory(m, spec, L, occ.blocks_per_sm, l1, budget=None, stagger=stagger).counters
    finally:
        gm._schedule = orig


def launch_estimate(rows: list[dict], kernel: str, N: int, order: str, blocks: int, wave: int) -> float | None:
    """DRAM bytes read by the whole launch under the measured schedule, from the stored rows: the whole-launch row
    where there is one, else the per-block rates of the windows interpolated over the launch's waves."""
    mine = [r for r in rows if r["kernel"] == kernel and int(r["N"]) == N and r["order"] == order and r["schedule"] == "measured"]
    whole = [r for r in mine if r["window_waves"] == "all"]
    if whole:
        return float(whole[0]["dram_read_bytes_per_block"]) * blocks
    pts = sorted((int(r["window_waves"].split("-")[0]), float(r["dram_read_bytes_per_block"])) for r in mine)
    if not pts:
        return None
    return float(np.interp(np.arange(0, blocks / wave), [p[0] for p in pts], [p[1] for p in pts]).sum() * wave)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("order", nargs="?", default="column", choices=["row", "column"])
    ap.add_argument("--kernel", default="naive", choices=list(TRACE_NAME))
    ap.add_argument("--N", type=int, default=6144, choices=[3072, 4224, 4608, 5120, 5632, 6144, 6656, 7168, 8448])
    ap.add_argument("--waves", nargs="+", type=int, default=[3, 100], help="first measured wave of each window")
    ap.add_argument("--measure", type=int, default=2, help="waves measured per window (after one warm-up wave)")
    ap.add_argument("--whole", action="store_true", help="the whole launch instead of windows")
    ap.add_argument("--schedules", nargs="+", default=["measured", "lockstep"], choices=["measured", "lockstep", "spread"])
    args = ap.parse_args()
    m, spec, occ, _, _ = setup(args.kernel, args.N, args.order)
    wave = m.sms * occ.blocks_per_sm
    total = len(spec.order(args.N, args.N)[0])
    new = not OUT.exists()
    with OUT.open("a", newline="") as f:
        wr = csv.writer(f)
        if new:
            wr.writerow(COLS)
        for w0 in ([None] if args.whole else args.waves):
            for sch in args.schedules:
                t = time.perf_counter()
                if w0 is None:
                    full = window(args.kernel, args.N, args.order, 0, total, sch)
                    per, hit, n, label = full["dram_bytes_read"] / total, 100 * full["l2_hit_rate"], total, "all"
                else:
                    lo, mid, hi = (w0 - 1) * wave, w0 * wave, (w0 + args.measure) * wave
                    full = window(args.kernel, args.N, args.order, lo, hi, sch)
                    warm = window(args.kernel, args.N, args.order, lo, mid, sch)
                    per = (full["dram_bytes_read"] - warm["dram_bytes_read"]) / (hi - mid)
                    hit = 100 * (full["l2_read_hits"] - warm["l2_read_hits"]) / max(full["l2_lookups"] - warm["l2_lookups"], 1)
                    n, label = hi - mid, f"{w0}-{w0 + args.measure - 1}"
                row = [args.kernel, args.N, args.order, label, sch, n, round(per), round(hit, 2),
                       round(time.perf_counter() - t, 1)]
                wr.writerow(row)
                f.flush()
                print(*row, flush=True)


if __name__ == "__main__":
    main()
