"""Systolic-array machine schema (``kind: systolic``). PLACEHOLDER: owned and completed by issue 4."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gemmsim.schema import Strict


class SystolicMachine(Strict):
    """A systolic array of MAC processing elements with operand buffers and DRAM."""

    schema_version: Literal[1] = Field(description="Version of the machine-file schema.")
    kind: Literal["systolic"] = Field(description="Machine type.")
    name: str = Field(description="Short name, as used on the command line.")
