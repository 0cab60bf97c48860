"""Shared pieces of the pydantic schemas: the strict base config and the binary byte-size type."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

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
