"""Round 32: the model's caches replayed on the H200's measured block schedule at N = 6144 (a diagnostic).

    python validation/h200/round32/replay32.py [S ...]    # -> replay32.csv (S = 1..4 by default, ~10 s each)

At 6144 the 64x64 tile at S = 1, 2 reads 2.6-3.3x ncu's DRAM bytes under round 31's rule, although the rule's
spread per wave matches the traces (README). As round 30 did at 4096 and 8192 (``../round30/process30.py replay``,
round 5's method): every block of the traced launch on the model SM of its measured SM's L2 partition, in the slot its
SM freed first, starting at its measured time in units of the median block; the whole launch, no sampling. If these
bytes are ncu's, the gap is in how the rule places the blocks, not in the caches.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round28"))
sys.path.insert(0, str(HERE.parent / "round30"))
import predict28 as p  # noqa: E402
import predict32  # noqa: E402
import process30  # noqa: E402
from h200_io import write_rows  # noqa: E402

import gemmsim.models.gpu_memory as gm  # noqa: E402
from gemmsim.kernels.gpu import KERNELS  # noqa: E402
from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.models.occupancy import resident  # noqa: E402
from gemmsim.sim.gpu import l1_carveout  # noqa: E402
from gemmsim.trace import Layout  # noqa: E402

N = 6144
KERNEL = "mma_64x64_w2x2"


def main(stages: list[int]) -> None:
    rows = []
    import importlib.util
    spec5 = importlib.util.spec_from_file_location("mms5", HERE.parent / "round5" / "model_measured_schedule.py")
    r5 = importlib.util.module_from_spec(spec5)
    spec5.loader.exec_module(r5)
    m = load_machine("h200")
    ncu = predict32._ncu_bytes()
    traced = {(r["api"], r["kernel"], int(r["stages"]), int(r["M"])): r
              for r in process30.launches(predict32.ARCHIVE, (N,), "32") if r["copy"] == "1"}
    for S in stages:
        t0 = time.time()
        prm = p.mma_params(KERNEL, S)
        keep = {k: prm[k] for k in ("BM", "BN", "BK", "WM", "WN", "stages", "regs", "pad")}
        spec = KERNELS["tensorcore"].spec(KERNELS["tensorcore"].params(**keep), "fp16", m, M=N)
        occ = resident(m, threads=spec.threads, regs=spec.regs, smem=spec.smem_bytes)
        L = Layout.build(N, N, N, "fp16")
        l1 = m.l1_size(l1_carveout(m, occ))
        tr = traced[("mma", KERNEL, S, N)]
        assert int(tr["blocks_per_sm"]) == occ.blocks_per_sm
        frame = dict(pid=tr["block"], smid=tr["sm"], start_ns=tr["start"], end_ns=tr["end"])
        r5.trace_frame = lambda *a, frame=frame: frame
        tm, tn = spec.order(N, N)
        ninst = len(gm.coalesce(spec.block_trace(L, int(tm[0]), int(tn[0]), spaces=[gm.SPACE_GLOBAL]), 32))
        slot_of, start = r5.measured_schedule("tensorcore", N, "row", 0, len(tm), m.sms, occ.blocks_per_sm, ninst)
        orig = gm._schedule
        gm._schedule = lambda blk_tpl, tpl_ninst, n_slots, first_round: (slot_of[:len(blk_tpl)], start[:len(blk_tpl)])
        try:
            c = gm.simulate_memory(m, spec, L, occ.blocks_per_sm, l1, budget=None, stagger=0.0).counters
        finally:
            gm._schedule = orig
        ref = ncu[("mma", KERNEL, S, N)]
        row = dict(kernel=KERNEL, stages=S, M=N, schedule="measured", dram_bytes_read=int(c["dram_bytes_read"]),
                   ncu_dram_bytes_read=int(ref), over_ncu=round(c["dram_bytes_read"] / ref, 2),
                   l2_hit_rate=round(float(c["l2_hit_rate"]), 4), seconds=round(time.time() - t0, 1))
        print(row, flush=True)
        rows.append(row)
    write_rows(HERE / "replay32.csv", rows)


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [1, 2, 3, 4])
