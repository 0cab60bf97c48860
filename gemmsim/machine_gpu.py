"""GPU machine schema (``kind: gpu``). PLACEHOLDER: owned and completed by the GPU work (issue 3)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gemmsim.schema import Strict


class GPUMachine(Strict):
    """A GPU: SMs with per-SM limits, shared memory banks, L1/L2, DRAM and per-dtype throughput."""

    schema_version: Literal[1] = Field(description="Version of the machine-file schema.")
    kind: Literal["gpu"] = Field(description="Machine type.")
    name: str = Field(description="Short name, as used on the command line.")
