"""Round 38b (issue 12): the favoured SMs of today's device, by round 35's measures.

    python validation/h200/round38/fast38.py     # -> fast38.csv, ~2 s

raw/round38.tar.gz is round 35b's script rerun unchanged (``run_round38.sh``), so its folder is raw35b. Rows as
../round35/fast35.csv: the copy benchmark (all SMs, equal work, k blocks per SM, S stages) and the traced 64x64
GEMMs at 4096 (mid-launch blocks): how many SMs run under ``process35.FAST_BELOW`` of the mean block time, and their
mean over the others'.
"""
from __future__ import annotations

import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
for d in ("", "round35"):
    sys.path.insert(0, str(HERE.parent / d))
import process35  # noqa: E402
from h200_io import write_rows  # noqa: E402

ARCHIVE = HERE / "raw" / "round38.tar.gz"


def rows() -> list[dict]:
    with tarfile.open(ARCHIVE) as tar:
        lines = tar.extractfile("raw35b/gpc35.csv").read().decode().splitlines()
        out = process35.copy_blocks(lines, "38b") + process35.gemm_blocks(tar)
    return [dict(r, source="38b") for r in out]


def main() -> None:
    out = rows()
    write_rows(HERE / "fast38.csv", out)
    for r in out:
        print(f"{r['launch']:32s} {r['fast_sms']:3d} favoured SMs at {r['fast_over_other']:.3f}")


if __name__ == "__main__":
    main()
