"""Shared by the rounds' scripts: reading `ncu --csv --page raw` logs, writing result tables, saving figures."""

from __future__ import annotations

import csv
import io
from pathlib import Path


def raw_rows(text: str) -> list[dict]:
    """One dict per profiled launch, in launch order: the header row is the one starting with "ID" (ncu writes its
    own lines before it); the units row that --print-units adds (no ID) is skipped. Values stay strings."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    head = rows[0]
    return [dict(zip(head, r)) for r in rows[1:] if len(r) == len(head) and r[0]]


def agreement(model, measured) -> str:
    """How a model's numbers follow measured ones: Pearson correlation and mean absolute error, as the rounds print it."""
    import numpy as np

    x, y = np.asarray(model, dtype=float), np.asarray(measured, dtype=float)
    return f"correlation {np.corrcoef(x, y)[0, 1]:5.2f}  mean |error| {np.mean(abs(x - y)):.3f}"


def number(value: str) -> float:
    """An ncu number ("1,234.5" -> 1234.5; empty -> nan)."""
    return float(value.replace(",", "")) if value else float("nan")


def write_rows(path: Path, rows: list[dict]) -> None:
    """A table as CSV, columns in the first row's order."""
    with Path(path).open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def save_figure(fig, folder: Path, name: str, dpi: int) -> Path:
    """Lay out ``fig`` and write it to ``folder``/figures/``name``; prints and returns the path."""
    fig.tight_layout()
    out = Path(folder) / "figures" / name
    out.parent.mkdir(exist_ok=True)
    fig.savefig(out, dpi=dpi)
    print(out)
    return out
