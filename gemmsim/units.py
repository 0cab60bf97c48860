"""Units: binary byte sizes (``32KiB``) and dtype element sizes.

Capacities are written in binary units, as hardware documents them: ``32KiB``, ``8MiB``, ``1GiB`` or a
plain integer of bytes. ``32K``, ``32KB`` and ``32kB`` are refused on purpose: pydantic's ByteSize and
most tools read ``KB`` as 1000 bytes, and a 32000-byte cache is not what anyone meant.
"""

from __future__ import annotations

import re
from fractions import Fraction

_BINARY = {"": 1, "B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")

#: Bytes per element of every dtype gemmsim knows (storage type of A, B and C).
DTYPE_BYTES: dict[str, int] = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int16": 2, "int32": 4}


def parse_bytes(value: int | str) -> int:
    """Return a byte count from an int or a binary-unit string (``"32KiB"`` -> 32768).

    Raises ValueError (which pydantic turns into a field error) for decimal or ambiguous prefixes.
    """
    if isinstance(value, bool):
        raise ValueError("a size must be an integer of bytes or a string such as '32KiB'")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"a size cannot be negative ({value})")
        return value
    if not isinstance(value, str):
        raise ValueError(f"a size must be an integer of bytes or a string such as '32KiB', not {value!r}")
    m = _SIZE_RE.match(value)
    if not m:
        raise ValueError(f"cannot read {value!r} as a size; write it as '32KiB', '8MiB' or a number of bytes")
    number, unit = m.group(1), m.group(2)
    key = unit.upper()
    if key not in _BINARY:
        raise ValueError(
            f"{value!r}: unit {unit!r} is not a binary unit; write KiB, MiB or GiB "
            "(KB/K are refused because they mean 1000 bytes to most tools)"
        )
    scaled = Fraction(number) * _BINARY[key]  # exact: no float overflow or rounding for any length of digits
    if scaled.denominator != 1:
        raise ValueError(f"{value!r} is not a whole number of bytes")
    return int(scaled)


def format_bytes(n: float) -> str:
    """Human-readable binary size: 32768 -> '32 KiB'."""
    for unit, factor in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= factor:
            v = n / factor
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.2f} {unit}"
    return f"{n:.0f} B"


def dtype_bytes(dtype: str) -> int:
    """Element size in bytes of a dtype name; KeyError-free: raises ValueError listing the known ones."""
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPE_BYTES)}") from None


def is_power_of_two(n: int) -> bool:
    """True for 1, 2, 4, ..."""
    return n > 0 and (n & (n - 1)) == 0
