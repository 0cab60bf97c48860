"""Round 16: round 15's processing at N = 8384, 8576, 8896, 9392 -> drift16.csv, model16.csv.

    python validation/h200/round16/process16.py [--pack traces16.tar.gz]   # ~4 min (the model's curves, cached); --pack: first store the device's traces as raw/traces16.npz

The same columns as round 15's (``../round15/process15.py``); the model's curve at offsets 0, 0.05, 0.1 and 0.2.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round15"))
import process15 as p15  # noqa: E402

p15.HERE, p15.ROUND = HERE, "16"
p15.NPZ, p15.CURVES = HERE / "raw" / "traces16.npz", HERE / "curves16.json"
p15.SIZES = p15.LAUNCH_SIZES = (8384, 8576, 8896, 9392)
p15.GRID = (0.0, 0.05, 0.1, 0.2)

if __name__ == "__main__":
    sys.exit(p15.main(sys.argv[1:]))
