"""Round 41b (issue 12): the favoured SMs' mid-launch block time over the others' in the 64x64 GEMM at 4096, at fewer
blocks per SM (``run_round41.sh``: extra shared memory), against the model's predictions (predictions41.csv).

    python validation/h200/round41/process41b.py      # -> favour41b.csv, ~10 s

Each configuration's 11th launch is traced (every block's SM, start, end). Mid-launch blocks (started after 20 % and
ended before 80 % of the launch) as round 35's ``gemm_blocks``. The favoured SMs are found once, on the device's
fullest launches (S = 2 at its own k, both APIs: the SMs under ``process35.FAST_BELOW`` of the mean in both), and
``ratio`` is their mean block time over the others' in every configuration; ``fast_sms`` counts the SMs under the
threshold in that configuration alone. ``model_now`` / ``model_before``: predictions41.csv at the launch's k.
"""
from __future__ import annotations

import csv
import gzip
import io
import sys
import tarfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
for d in ("", "round35"):
    sys.path.insert(0, str(HERE.parent / d))
import process35  # noqa: E402
from h200_io import write_rows  # noqa: E402

ARCHIVE = HERE / "raw" / "round41.tar.gz"
EXTRAS = (0, 24576, 32768, 40960, 65536)


def launches(tar: tarfile.TarFile):
    """(api, extra, row, sm, duration, mid) of every 64x64 launch with copies."""
    for api in ("mma", "wmma"):
        for e in EXTRAS:
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"raw41/{api}_e{e}.csv"))))
            d = np.loadtxt(io.TextIOWrapper(gzip.open(tar.extractfile(f"raw41/sched_{api}_e{e}.csv.gz"))),
                           delimiter=",", dtype=np.int64)
            for cfg, r in enumerate(rows):
                if r["copy"] != "1" or "64x64" not in r["kernel"]:
                    continue
                x = d[d[:, 0] == cfg]
                start, end = x[:, 3].astype(float), x[:, 4].astype(float)
                span = end.max()
                yield api, e, r, x[:, 2], end - start, (start > 0.2 * span) & (end < 0.8 * span)


def rows() -> list[dict]:
    with tarfile.open(ARCHIVE) as tar:
        got = list(launches(tar))
    ref = [set(process35.fast_sms(sm, dur, mid)[0]) for api, e, r, sm, dur, mid in got
           if e == 0 and r["stages"] == "2"]
    fav = sorted(set.intersection(*ref))
    with (HERE / "predictions41.csv").open() as f:
        pred = {(r["api"], int(r["stages"]), int(r["k"])): r for r in csv.DictReader(f)}
    out = []
    for api, e, r, sm, dur, mid in got:
        S, k = int(r["stages"]), int(r["blocks_per_sm"])
        f = np.isin(sm, fav)
        p = pred.get((api, S, k), {})
        out.append(dict(api=api, stages=S, extra_smem=e, blocks_per_sm=k, sm_mhz=int(r["sm_mhz"]),
                        tflops=float(r["tflops"]), rel_err=float(r["rel_err"]), favoured=len(fav),
                        ratio=round(float(dur[mid & f].mean() / dur[mid & ~f].mean()), 3),
                        fast_sms=len(process35.fast_sms(sm, dur, mid)[0]),
                        model_now=p.get("ratio_now", ""), model_before=p.get("ratio_before", ""),
                        groups=p.get("groups", "")))
    return out


def main() -> None:
    out = rows()
    write_rows(HERE / "favour41b.csv", out)
    print(f"favoured SMs (both APIs' S = 2 at their own k): {out[0]['favoured']}")
    for name, sel in (("all", out), ("S = 1", [r for r in out if r["stages"] == 1]),
                      ("S >= 2", [r for r in out if r["stages"] > 1])):
        err = {v: [abs(float(r[v]) - r["ratio"]) for r in sel] for v in ("model_now", "model_before")}
        print(f"{name} ({len(sel)}): |model - H200| mean / max, now {np.mean(err['model_now']):.3f} / "
              f"{max(err['model_now']):.3f}, whole share {np.mean(err['model_before']):.3f} / {max(err['model_before']):.3f}")
    for r in out:
        print(f"{r['api']:4} S={r['stages']} k={r['blocks_per_sm']} (extra {r['extra_smem']:5d}, {r['sm_mhz']} MHz, "
              f"rel_err {r['rel_err']:.1e}): H200 {r['ratio']:.3f} ({r['fast_sms']:3d} fast SMs)   model now "
              f"{r['model_now'] or '-':>5}  whole share {r['model_before'] or '-':>5}  groups {r['groups']}")


if __name__ == "__main__":
    main()
