"""Round 27 (issue 11): raw/ -> drift27.csv, with round 24's ``drift`` (one launch traced and profiled), plus the
bytes of round 19's pull-back law alone (``pullback_gb``: the machine file's ``column_drift`` without the runaway).

    python validation/h200/round27/process27.py [--pack TAR]   # --pack: first store the device's trace archive as
                                                               # raw/traces27.npz (round 12's packing)
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "round24"), str(HERE.parent / "round12"), str(HERE.parent / "round19")]
import predict27 as pr  # noqa: E402
import process12 as p12  # noqa: E402
import process24 as p24  # noqa: E402
from h200_io import write_rows  # noqa: E402

#: The launches of run_round27.sh, in the order it ran them ("N launch").
ORDER27 = ("3440 1", "5920 1", "2848 1", "4384 1", "3440 2", "5920 2", "2848 2", "4384 2",
           "3440 3", "5920 3", "2848 3", "4384 3")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--pack"]:
        p12.pack(argv[1:], HERE / "raw" / "traces27.npz")
    rows = p24.drift(HERE, "27", ORDER27)
    pred = {int(r["N"]): r for r in pr.predictions()}
    for r in rows:
        p = pred[r["N"]]
        r["pullback_offset_mean"] = p["pullback_offset_mean"]
        r["pullback_gb"] = p["pullback_gb"]
        r["pullback_over_ncu"] = round(float(p["pullback_gb"]) / r["ncu_gb"], 3)
        print(r)
    write_rows(HERE / "drift27.csv", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
