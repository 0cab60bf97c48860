"""What every machine file shares, whatever its kind: the header (name, sources, estimated fields) and the reading
of YAML files and pydantic errors into gemmsim's messages (file, line, field path)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from gemmsim.schema import Strict


class MachineHeader(Strict):
    """The fields every machine file starts with, whatever its kind."""

    schema_version: Literal[1] = Field(description="Version of the machine-file schema.")
    name: str = Field(description="Short name, as used on the command line.")
    description: str = Field("", description="What this machine is.")
    sources: list[str] = Field(default_factory=list, description="Public sources the numbers come from.")
    estimated: list[str] = Field(
        default_factory=list,
        description="Field paths whose values are estimates (or teaching choices) rather than readings or citations.",
    )

    @model_validator(mode="after")
    def _estimated_paths_exist(self) -> "MachineHeader":
        bad = [p for p in self.estimated if not _resolves(self, p)]
        if bad:
            raise ValueError(f"estimated: no such field(s): {', '.join(bad)}")
        return self


_PART = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)$")


def _resolves(obj, path: str) -> bool:
    """Whether a field path such as ``caches[2].latency_cycles`` or ``l2.ways`` names a field of ``obj``."""
    for part in path.split("."):
        m = _PART.match(part)
        if not m or not isinstance(obj, BaseModel) or m.group(1) not in type(obj).model_fields:
            return False
        obj = getattr(obj, m.group(1))
        for idx in re.findall(r"\[(\d+)\]", m.group(2)):
            if not isinstance(obj, (list, tuple)) or int(idx) >= len(obj):
                return False
            obj = obj[int(idx)]
    return True


def _format_loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("cpu", "gpu", "systolic") and not out:
            continue  # the union's tag, not a field
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def validation_problems(err: ValidationError, data: object = None) -> list[str]:
    """Turn a pydantic ValidationError into one 'field.path: message' line per problem."""
    lines = []
    for e in err.errors():
        loc = _format_loc(tuple(e["loc"]))
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key (not in the schema)"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        lines.append(f"{loc}: {msg}")
    return lines


def read_yaml(path: Path, error: type) -> object:
    """Read a YAML file, turning I/O and syntax errors into ``error`` with the file and line."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise error(f"cannot read file: {exc.strerror or exc}", source=str(path)) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise error(f"malformed YAML: {problem}", source=where) from None
