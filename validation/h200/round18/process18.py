"""Round 18: round 15's processing at N = 5952, 6080, 6272, 10240, 10752 -> drift18.csv, model18.csv.

    python validation/h200/round18/process18.py [--pack traces18.tar.gz]   # ~10 min (the model's curves, cached); --pack: first store the device's traces as raw/traces18.npz

The same columns as round 15's (``../round15/process15.py``), one traced launch per size.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round15"))
import process15 as p15  # noqa: E402

p15.HERE, p15.ROUND = HERE, "18"
p15.NPZ, p15.CURVES = HERE / "raw" / "traces18.npz", HERE / "curves18.json"
p15.SIZES = p15.LAUNCH_SIZES = (5952, 6080, 6272, 10240, 10752)
p15.LAUNCHES_PER_SIZE = 1
p15.GRID = (0.0, 0.05, 0.1, 0.2)

if __name__ == "__main__":
    sys.exit(p15.main(sys.argv[1:]))
