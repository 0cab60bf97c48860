"""The stored H200 rounds (validation/h200/roundN): a round's processing script as a module, and its CSV tables."""

import csv
import importlib.util
from pathlib import Path

H200 = Path(__file__).resolve().parents[2] / "validation" / "h200"


def script(folder: Path, name: str):
    """``folder/name.py`` loaded as a module (the round scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def table(folder: Path, name: str) -> list[dict]:
    """``folder/name``'s rows, as strings."""
    with (folder / name).open() as f:
        return list(csv.DictReader(f))
