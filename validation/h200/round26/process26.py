"""Round 26 (issue 11): raw/ -> drift26.csv, with round 24's ``drift`` (one launch traced and profiled).

    python validation/h200/round26/process26.py [--pack TAR]   # --pack: first store the device's trace archive as
                                                               # raw/traces26.npz (round 12's packing)
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "round24"), str(HERE.parent / "round12")]
import process12 as p12  # noqa: E402
import process24 as p24  # noqa: E402

#: The launches of run_round26.sh, in the order it ran them ("N launch").
ORDER26 = ("4256 1", "4160 1", "4320 1", "4256 2", "4160 2", "4320 2")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--pack"]:
        p12.pack(argv[1:], HERE / "raw" / "traces26.npz")
    for r in p24.drift(HERE, "26", ORDER26):
        print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
