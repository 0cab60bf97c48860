"""Small pieces every command-line module shares: NAME=VALUE parameters and a machine of the right kind."""

from __future__ import annotations

import argparse
import math

import yaml

from gemmsim.errors import GemmsimError, wrong_kind


def parse_params(pairs: list[str]) -> dict:
    """``["BM=32", "promotion=none"]`` -> ``{"BM": 32, "promotion": "none"}`` (values read as YAML scalars)."""
    out = {}
    for p in pairs:
        if "=" not in p:
            raise GemmsimError(f"parameter {p!r} is not NAME=VALUE")
        k, v = p.split("=", 1)
        try:
            out[k.strip()] = yaml.safe_load(v)
        except yaml.YAMLError:
            raise GemmsimError(f"parameter {p!r}: cannot read the value {v!r}") from None
    return out


def machine_of_kind(name_or_path: str, kind: str, command: str):
    """Load a machine and check that it is of ``kind`` (a clear error naming the command otherwise)."""
    from gemmsim.machine import load_machine

    machine = load_machine(name_or_path)
    if machine.kind != kind:
        raise wrong_kind(machine, kind, command)
    return machine


def _int_at_least(text: str, lo: int, what: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a {what} integer, got {text!r}") from None
    if v < lo:
        raise argparse.ArgumentTypeError(f"must be a {what} integer, got {v}")
    return v


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (0 and negative sizes are refused with the option's name)."""
    return _int_at_least(text, 1, "positive")


def nonneg_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    return _int_at_least(text, 0, "non-negative")


def port(text: str) -> int:
    """argparse type: a TCP port, 0 (any free one) to 65535."""
    v = nonneg_int(text)
    if v > 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to 65535, got {v}")
    return v


def finite_float(text: str) -> float:
    """argparse type: a finite number (inf and nan are refused)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return v
