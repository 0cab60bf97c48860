"""Writing the H200 rounds' processed tables (round 3's model comparison, rounds 10-10d)."""

from __future__ import annotations

import csv
from pathlib import Path


def write_csv(path: Path, rows: list[dict]) -> None:
    """Every key of any row a column (first seen first), floats to 4 significant digits."""
    cols = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})
