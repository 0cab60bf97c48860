"""Shared pieces of every pydantic schema (machine, experiment, kernel parameters): the strict base config and the
binary byte-size type. The machine files' shared header lives in ``gemmsim.machine.schema``."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer

from gemmsim.units import parse_bytes


class Strict(BaseModel):
    """Base of every file-backed model: unknown keys fail with their path, instances are immutable, and a float field
    (a physical quantity) refuses inf and nan."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False)


#: A capacity in bytes, written as an int or a binary-unit string ('32KiB'); '32K'/'32KB' are refused.
Bytes = Annotated[int, BeforeValidator(parse_bytes), PlainSerializer(int, return_type=int)]
