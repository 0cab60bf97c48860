"""Shared pieces of the pydantic schemas: the strict base config and the binary byte-size type."""

from __future__ import annotations

from typing import Annotated, Literal

import re

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, model_validator

from gemmsim.units import parse_bytes


class Strict(BaseModel):
    """Base of every file-backed model: unknown keys fail with their path, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


#: A capacity in bytes, written as an int or a binary-unit string ('32KiB'); '32K'/'32KB' are refused.
Bytes = Annotated[int, BeforeValidator(parse_bytes), PlainSerializer(int, return_type=int)]


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
