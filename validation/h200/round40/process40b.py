"""Round 40b (issue 12): S = 1's launch end against the grid's width and its count (run_round40b.sh's traces).

    python validation/h200/round40/process40b.py    # ~1 min -> ends40b.csv, printed beside round 34's

Each 64x64 copy launch's whole time over its steady pace (round 30's ``steady30.steady``: the middle 60 % of the
launch), with the tail after the last whole wave, from raw/round40b.tar.gz; round 34's rows (compare34.csv) beside.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
H200 = HERE.parent
for d in ("", "round30"):
    sys.path.insert(0, str(H200 / d))
from h200_io import write_rows  # noqa: E402

CONFIGS = tuple(f"m4096n{n}" for n in (3840, 3904, 3968, 4032, 4096, 4160, 4224)) + tuple(
    f"m{m}n4096" for m in (3712, 4352, 4608))


def rows() -> list[dict]:
    import steady30
    from process30 import launches

    out = []
    for r in launches(HERE / "raw" / "round40b.tar.gz", sizes=CONFIGS, tag="40b"):
        if r["copy"] != "1" or "64x64" not in r["kernel"]:
            continue
        s = steady30.steady(r)
        out.append(dict(api=r["api"], stages=int(r["stages"]), M=int(r["M"]), N=int(r["N"]), width=int(r["N"]) // 64,
                        blocks=s["blocks"], blocks_per_sm=s["blocks_per_sm"], waves=s["waves"], sm_mhz=r["sm_mhz"],
                        tflops=r["tflops"], rel_err=r["rel_err"], span_over_steady=s["span_over_steady"],
                        tail_blocks=s["tail_blocks"], tail_sms=s["tail_sms"], tail_full_sms=s["tail_full_sms"]))
    return out


def main() -> None:
    out = rows()
    write_rows(HERE / "ends40b.csv", out)
    with (H200 / "round34" / "compare34.csv").open() as f:
        r34 = {(r["api"], int(r["stages"]), int(r["N"])): float(r["span_over_steady"]) for r in csv.DictReader(f)}
    for r in out:
        same_n = r34.get((r["api"], r["stages"], r["N"])) if r["M"] == 4096 else None
        transposed = r34.get((r["api"], r["stages"], r["M"])) if r["N"] == 4096 and r["M"] != 4096 else None
        note = (f"round 34 same launch {same_n:.3f}" if same_n else "") + (
            f"round 34 M = 4096, N = {r['M']}: {transposed:.3f}" if transposed else "")
        print(f"{r['api']:4} S={r['stages']} M={r['M']} N={r['N']} ({r['width']} wide, {r['waves']:.2f} waves, "
              f"{r['sm_mhz']} MHz): {r['span_over_steady']:.3f}  {note}")


if __name__ == "__main__":
    main()
