"""Small pieces every command-line module shares: NAME=VALUE parameters and a machine of the right kind."""

from __future__ import annotations

import yaml

from gemmsim.errors import GemmsimError, MachineFileError


def parse_params(pairs: list[str]) -> dict:
    """``["BM=32", "promotion=none"]`` -> ``{"BM": 32, "promotion": "none"}`` (values read as YAML scalars)."""
    out = {}
    for p in pairs:
        if "=" not in p:
            raise GemmsimError(f"parameter {p!r} is not NAME=VALUE")
        k, v = p.split("=", 1)
        out[k.strip()] = yaml.safe_load(v)
    return out


def machine_of_kind(name_or_path: str, kind: str, command: str):
    """Load a machine and check that it is of ``kind`` (a clear error naming the command otherwise)."""
    from gemmsim.machine import load_machine

    machine = load_machine(name_or_path)
    if machine.kind != kind:
        raise MachineFileError(f"machine {machine.name!r} is a {machine.kind} machine; the {command} command needs kind: {kind}")
    return machine
