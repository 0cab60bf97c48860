"""Round 38 (issue 12), offline: the L2 tag lookups per sector read, the model's against ncu's, by S (64x64, 4096).

    python validation/h200/round38/lookups38.py     # -> lookups38.csv, ~2 min on 2 cores

The chip's ceiling for cp.async into padded rows scales with the kernel's L2 lookups per sector read
(``sim.gpu.padded_copy_ceiling_gbps``: a read that misses its near partition is looked up again at home). Round 37
found the model's per-block pace 3 % slower at S = 4 than at S = 1 for the 64x64 tile at 4096, about half of it a
higher L2 service per copy. Here: the memory model's lookups per sector read for mma.sync S = 1..4 at round 28's
clock (its counters depend on blocks per SM and the schedule, not on S itself), against ncu's L2 tag requests over
L2 sectors for the same binaries (round 3, ``raw/run2_raw.tar.gz``: ``lts__t_tag_requests`` and ``lts__t_sectors``,
each as a share of its peak, so only the ratio's change with S compares).
"""
from __future__ import annotations

import csv
import io
import sys
import tarfile
from multiprocessing import get_context
from pathlib import Path

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
for d in ("", "round28", "round3"):
    sys.path.insert(0, str(H200 / d))
from h200_io import raw_rows, write_rows  # noqa: E402

NAME = "mma_64x64_w2x2"


def ncu_ratio() -> dict:
    """S -> ncu's tag requests over sectors (both % of peak) for the 64x64 launches at 4096."""
    with tarfile.open(H200 / "round3" / "raw" / "run2_raw.tar.gz") as tar:
        text = tar.extractfile("raw/ncu_mma.csv").read().decode()
        labels = list(csv.reader(io.TextIOWrapper(tar.extractfile("raw/mma_ncu_launches.csv"))))
    out = {}
    for lab, r in zip(labels, raw_rows(text)):
        if lab[1] == NAME:
            out[int(lab[2][2:])] = (float(r["lts__t_tag_requests.sum.pct_of_peak_sustained_elapsed"])
                                    / float(r["lts__t_sectors.sum.pct_of_peak_sustained_elapsed"]))
    return out


def _model(S: int) -> dict:
    import model_vs_measured_tc as mv
    import predict28
    from gemmsim.machine import load_machine
    from gemmsim.sim import gpu as sg

    seen: dict = {}
    orig = sg._launch_memory

    def grab(*a, **k):
        c = orig(*a, **k)
        seen.update(c)
        return c

    sg._launch_memory = grab
    sg.simulate_gpu(mv.machine_at(load_machine("h200"), 1720), "tensorcore", M=4096, N=4096, K=4096, dtype="fp16",
                    **predict28.mma_params(NAME, S))
    sg._launch_memory = orig
    return dict(stages=S, lookups_per_sector=seen["l2_lookups"] / seen["l2_sectors_read"],
                dram_bytes_read=seen["dram_bytes_read"], stagger_mean=seen.get("tc_stagger_mean", 0.0))


def main() -> None:
    ncu = ncu_ratio()
    with get_context("spawn").Pool(2) as pool:
        model = pool.map(_model, (1, 2, 3, 4), chunksize=1)
    rows = []
    for m in model:
        S = m["stages"]
        rows.append(dict(stages=S, model_lookups_per_sector=round(m["lookups_per_sector"], 4),
                         model_over_s1=round(m["lookups_per_sector"] / model[0]["lookups_per_sector"], 4),
                         ncu_tag_over_sectors=round(ncu[S], 4), ncu_over_s1=round(ncu[S] / ncu[1], 4),
                         model_dram_mb=round(m["dram_bytes_read"] / 1e6, 1), model_stagger_mean=round(m["stagger_mean"], 3)))
    write_rows(HERE / "lookups38.csv", rows)
    for r in rows:
        print(f"S={r['stages']}: model {r['model_lookups_per_sector']:.4f} ({r['model_over_s1']:.4f} of S = 1)   "
              f"ncu {r['ncu_tag_over_sectors']:.4f} ({r['ncu_over_s1']:.4f})")


if __name__ == "__main__":
    main()
