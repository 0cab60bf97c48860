"""Loading machine files: pydantic-validated YAML descriptions of CPUs, GPUs and systolic arrays.

A machine file is data, not code. ``kind`` selects the schema (a discriminated union: ``cpu``,
``gpu``, ``systolic``); unknown keys fail with their path; every problem of a file is reported at once,
with the file name and the field path. Derived figures (sets per level, peak FLOP/s per dtype, ridge
point) are properties computed from the fields, never second numbers in the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Union

from pydantic import Field, TypeAdapter, ValidationError

from gemmsim.errors import MachineFileError
from gemmsim.machine.cpu import CPUMachine
from gemmsim.machine.gpu import GPUMachine
from gemmsim.machine.schema import read_yaml, validation_problems
from gemmsim.machine.systolic import SystolicMachine

#: Folder of the machine files shipped with gemmsim (the repository's ``machines/``).
MACHINES_DIR = Path(__file__).resolve().parents[2] / "machines"

Machine = Annotated[Union[CPUMachine, GPUMachine, SystolicMachine], Field(discriminator="kind")]
_ADAPTER: TypeAdapter = TypeAdapter(Machine)



def machine_from_dict(data: object, source: str = "<dict>") -> CPUMachine | GPUMachine | SystolicMachine:
    """Validate a parsed machine description; every problem is reported at once."""
    if not isinstance(data, dict):
        raise MachineFileError("a machine file must be a mapping of fields", source=source)
    if data.get("kind") not in ("cpu", "gpu", "systolic"):
        raise MachineFileError(
            f"kind: must be one of cpu, gpu, systolic (found {data.get('kind')!r})", source=source
        )
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as err:
        raise MachineFileError("invalid machine file", source=source, problems=validation_problems(err)) from None


def machine_search_path() -> list[Path]:
    """Folders searched for ``NAME.yaml``: $GEMMSIM_MACHINES (colon-separated), ./machines, the shipped folder."""
    dirs = [Path(p) for p in os.environ.get("GEMMSIM_MACHINES", "").split(os.pathsep) if p]
    dirs += [Path.cwd() / "machines", MACHINES_DIR]
    seen, out = set(), []
    for d in dirs:
        r = d.resolve()
        if r not in seen:
            seen.add(r)
            out.append(d)
    return out


def machine_files() -> dict[str, Path]:
    """Every machine file on the search path, by name (the first one found wins)."""
    found: dict[str, Path] = {}
    for d in machine_search_path():
        if d.is_dir():
            for p in sorted(d.glob("*.yaml")):
                found.setdefault(p.stem, p)
    return found


def resolve_machine_path(name_or_path: str | os.PathLike) -> Path:
    """A machine file path from a name ('haswell') or a path ('my/machine.yaml')."""
    s = str(name_or_path)
    p = Path(s)
    if s.endswith((".yaml", ".yml")) or os.sep in s:
        if not p.is_file():
            raise MachineFileError(f"no such machine file: {s}")
        return p
    files = machine_files()
    if s in files:
        return files[s]
    known = ", ".join(sorted(files)) or "(none found)"
    raise MachineFileError(f"unknown machine {s!r}; known machines: {known}")


def load_machine(name_or_path: str | os.PathLike):
    """Load and validate a machine by name ('a100'), path, or the special name 'host' (detected now).

    Returns a CPUMachine, GPUMachine or SystolicMachine; raises MachineFileError naming the file and
    every invalid field.
    """
    if str(name_or_path) == "host" and "host" not in machine_files():
        return detect_host()
    path = resolve_machine_path(name_or_path)
    return machine_from_dict(read_yaml(path, MachineFileError), source=str(path))


def detect_host() -> CPUMachine:
    """This host as a validated CPUMachine named 'host' (``machine.detect`` reads it; this module validates it)."""
    from gemmsim.machine.detect import detect_dict

    return machine_from_dict(detect_dict(), source="detected host")
