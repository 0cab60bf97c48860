"""Round 31: the model's DRAM bytes under the tensor-core schedule rule against ncu's (a check the rule was not built on).

    python validation/h200/round31/bytes31.py      # -> bytes31.csv, printed; ~15 min

For the 24 mma.sync launches of the S sweep (round 3's inputs, round 28's parameters: two-wave memory samples), the
DRAM bytes read by the whole launch as the model gives them with the round 31 schedule (``tc_schedule``) and with
the even spread it replaced (``tc_schedule.APPLY = False``), over ncu's ``dram__bytes_read.sum`` of the same binaries
(round 7, ../round7/tc_schedule7.csv). ncu's bytes played no part in the rule: its hold criterion is the model's own,
its drift rate is fitted on round 30's block starts.
"""
from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "round28"))
import predict28 as p  # noqa: E402
from h200_io import write_rows  # noqa: E402

from gemmsim.machine import load_machine  # noqa: E402
from gemmsim.models import tc_schedule  # noqa: E402
from gemmsim.sim.gpu import simulate_gpu  # noqa: E402


def main() -> None:
    m = load_machine("h200")
    ncu = {(r["kernel"], int(r["stages"]), int(r["N"])): float(r["ncu_dram_bytes_read"])
           for r in csv.DictReader((HERE.parent / "round7" / "tc_schedule7.csv").open())}
    rows = []
    for (kernel, S, N), ref in sorted(ncu.items()):
        out = dict(kernel=kernel, stages=S, N=N, ncu_dram_bytes_read=int(ref))
        for rule, apply in (("round31", True), ("even_spread", False)):
            tc_schedule.APPLY = apply
            r = simulate_gpu(m, "tensorcore", M=N, N=N, K=N, dtype="fp16", **p.mma_params(kernel, S))
            out[f"{rule}_over_ncu"] = round(r["dram_bytes_read"] / ref, 3)
            if apply:
                out.update(holds=int(r["tc_holds"]), restoring_gain=round(r["tc_restoring_gain"], 4),
                           stagger_mean=round(r["tc_stagger_mean"], 3))
        tc_schedule.APPLY = True
        rows.append(out)
        print(out, flush=True)
    write_rows(HERE / "bytes31.csv", rows)
    for rule in ("round31", "even_spread"):
        v = [r[f"{rule}_over_ncu"] for r in rows]
        inside = sum(0.8 <= x <= 1.25 for x in v)
        print(f"{rule}: DRAM bytes / ncu median {statistics.median(v):.2f}, range {min(v):.2f}-{max(v):.2f}, "
              f"within 0.8-1.25x: {inside} of {len(v)}")


if __name__ == "__main__":
    main()
