"""The ``occupancy`` command, in process: register on a parser of our own, run, read the output."""

from __future__ import annotations

import argparse
import json

import pytest

from gemmsim.cli import gpu as cli_gpu
from gemmsim.errors import LaunchError, MachineFileError


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="gemmsim")
    cli_gpu.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_table_a100_paper_tile(capsys):
    assert _run(["occupancy", "--machine", "a100", "--threads", "256", "--regs", "72", "--smem", "73728"]) == 0
    out = capsys.readouterr().out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln[:1].isalpha()}
    assert "2 <" in lines["shared"] and " 3 " in lines["registers"] and " 8 " in lines["warps"]
    assert "2 blocks/SM, limited by shared memory; 16 of 64 warps = occupancy 25.0 %" in out


def test_json_h200_carveout(capsys):
    argv = ["occupancy", "--machine", "h200", "--threads", "64", "--regs", "32", "--smem", "16384", "--carveout", "50", "--json"]
    assert _run(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["machine"] == "h200" and d["blocks_per_sm"] == 7 and d["smem_config_bytes"] == 132 * 1024
    assert d["limiter"] == "shared_memory" and d["limit_barriers"] == 64


def test_rtx4060_seed_003_claim(capsys):
    # seed 003: S = 3 uses 72 KB and "fits 2 blocks per SM" -- the RTX 4060's 100 KiB allow only 1
    _run(["occupancy", "--machine", "rtx4060", "--threads", "256", "--regs", "72", "--smem", "73728", "--json"])
    assert json.loads(capsys.readouterr().out)["blocks_per_sm"] == 1


def test_impossible_launch_raises_launch_error():
    with pytest.raises(LaunchError, match="1024"):
        _run(["occupancy", "--machine", "h200", "--threads", "2048", "--regs", "32"])
    with pytest.raises(LaunchError, match="without opt-in"):
        _run(["occupancy", "--machine", "h200", "--threads", "128", "--regs", "32", "--smem", "60000", "--no-opt-in"])


def test_non_gpu_machine_is_refused():
    with pytest.raises(MachineFileError, match="kind: gpu"):
        _run(["occupancy", "--machine", "haswell", "--threads", "128", "--regs", "32"])
