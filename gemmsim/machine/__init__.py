"""Machines are data: pydantic schemas of the YAML files in ``machines/`` and their loading.

``schema`` (the header every machine file shares, YAML and error reading), ``cpu``, ``gpu``, ``systolic`` (one schema
per ``kind``, derived figures as properties), ``detect`` (this host's CPU from /sys and lscpu), ``load``
(``load_machine`` by name, path or ``host``). May import: errors, units, schema.
"""

from gemmsim.machine.cpu import SCHEMA_VERSION, CacheLevel, CPUMachine, DRAM, TLBLevel
from gemmsim.machine.gpu import GPUMachine
from gemmsim.machine.load import (
    MACHINES_DIR,
    Machine,
    detect_host,
    load_machine,
    machine_files,
    machine_from_dict,
    machine_search_path,
    resolve_machine_path,
)
from gemmsim.machine.schema import MachineHeader, read_yaml, validation_problems
from gemmsim.machine.systolic import SystolicMachine

__all__ = [
    "SCHEMA_VERSION", "CacheLevel", "CPUMachine", "DRAM", "TLBLevel", "GPUMachine", "SystolicMachine", "MachineHeader",
    "MACHINES_DIR", "Machine", "detect_host", "load_machine", "machine_files", "machine_from_dict",
    "machine_search_path", "resolve_machine_path", "read_yaml", "validation_problems",
]
