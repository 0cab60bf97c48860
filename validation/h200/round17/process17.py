"""Round 17: round 15's processing at N = 5824, 6016, 6400, 8320, 9088, 9984 -> drift17.csv, model17.csv.

    python validation/h200/round17/process17.py [--pack traces17.tar.gz]   # ~10 min (the model's curves, cached); --pack: first store the device's traces as raw/traces17.npz

The same columns as round 15's (``../round15/process15.py``), one traced launch per size.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round15"))
import process15 as p15  # noqa: E402

p15.HERE, p15.ROUND = HERE, "17"
p15.NPZ, p15.CURVES = HERE / "raw" / "traces17.npz", HERE / "curves17.json"
p15.SIZES = p15.LAUNCH_SIZES = (5824, 6016, 6400, 8320, 9088, 9984)
p15.LAUNCHES_PER_SIZE = 1
p15.GRID = (0.0, 0.05, 0.1, 0.2, 0.3)

if __name__ == "__main__":
    sys.exit(p15.main(sys.argv[1:]))
