"""GPU machine files: every one loads; peaks match the datasheets; cross-field checks catch broken files;
the H200 file matches the device properties read on a real H200 (validation/h200/device_props.csv)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from gemmsim.errors import MachineFileError
from gemmsim.machine import MACHINES_DIR, load_machine, machine_from_dict
from gemmsim.machine.gpu import GPUMachine

GPU_FILES = ["a100", "rtx4060", "h100", "h200"]
VALIDATION = Path(__file__).resolve().parents[2] / "validation" / "h200"


@pytest.fixture(scope="module")
def machines() -> dict[str, GPUMachine]:
    return {n: load_machine(n) for n in GPU_FILES}


def test_every_gpu_file_loads_and_has_derived(machines):
    for p in sorted(MACHINES_DIR.glob("*.yaml")):
        data = yaml.safe_load(p.read_text())
        if data.get("kind") == "gpu":
            m = load_machine(p)
            d = m.derived()
            assert d["l2_sets"] * m.l2.ways * m.l2.line_bytes == m.l2.size
            assert set(d) >= {"peak_tflops_tensor", "peak_tflops_cuda_core", "smem_bandwidth_gbps"}
    assert set(machines) == set(GPU_FILES)


@pytest.mark.parametrize(
    "name, dtype, acc, tensor, datasheet",
    [
        ("a100", "fp16", "fp32", True, 312.0),  # A100 datasheet
        ("a100", "tf32", None, True, 156.0),
        ("a100", "int8", None, True, 624.0),
        ("a100", "fp32", None, False, 19.5),
        ("a100", "fp64", None, False, 9.7),
        ("h100", "fp16", "fp32", True, 989.4),  # H100 whitepaper WP104
        ("h100", "fp8", None, True, 1978.9),
        ("h100", "fp32", None, False, 66.9),
        ("h200", "bf16", None, True, 989.4),
        ("rtx4060", "fp16", "fp32", True, 30.23),  # GeForce: half rate with fp32 accumulate
        ("rtx4060", "fp16", "fp16", True, 60.46),
        ("rtx4060", "fp32", None, False, 15.11),
    ],
)
def test_peaks_match_datasheets(machines, name, dtype, acc, tensor, datasheet):
    assert machines[name].peak_tflops(dtype, acc, tensor) == pytest.approx(datasheet, rel=0.005)


def test_ridge_points_of_seed_001(machines):
    # seed 001: A100 ridges ~10 (fp32 CUDA cores) and ~161 (fp16 tensor cores) at 1.935 TB/s
    a = machines["a100"]
    assert a.ridge_point("fp32", tensor=False) == pytest.approx(10.07, rel=0.01)
    assert a.ridge_point("fp16") == pytest.approx(161.2, rel=0.01)
    # shared memory 32 banks x 4 B per clock per SM: ~19.5 TB/s on A100
    assert a.smem_bandwidth_gbps == pytest.approx(19492, rel=0.001)


def test_unknown_tensor_combination_is_a_clear_error(machines):
    with pytest.raises(ValueError, match="fp8"):
        machines["a100"].peak_tflops("fp8")
    with pytest.raises(ValueError, match="accumulators"):
        machines["a100"].peak_tflops("bf16", "fp16")


def test_h200_file_matches_device_properties(machines):
    props = {r["property"]: r["value"] for r in csv.DictReader((VALIDATION / "device_props.csv").open())}
    h = machines["h200"]
    assert props["cc"] == h.compute_capability
    assert int(props["sms"]) == h.sms
    assert int(props["maxThreadsPerMultiProcessor"]) == h.limits.max_threads_per_sm
    assert int(props["maxBlocksPerMultiProcessor"]) == h.limits.max_blocks_per_sm
    assert int(props["regsPerMultiprocessor"]) == h.limits.registers_per_sm
    assert int(props["regsPerBlock"]) == h.limits.max_registers_per_block
    assert int(props["sharedMemPerMultiprocessor"]) == h.smem.per_sm_max
    assert int(props["sharedMemPerBlock"]) == h.smem.per_block_default
    assert int(props["sharedMemPerBlockOptin"]) == h.smem.per_block_optin
    assert int(props["reservedSharedMemPerBlock"]) == h.smem.reserved_per_block
    assert int(props["l2CacheSize"]) == h.l2.size
    assert int(props["clockRate_kHz"]) / 1000 == h.clock_mhz_max
    # 2 x 3201 MHz x 6016 bit / 8 = 4815 GB/s, the datasheet's 4.8 TB/s
    bw = 2 * int(props["memoryClockRate_kHz"]) * 1e3 * int(props["memoryBusWidth"]) / 8 / 1e9
    assert bw == pytest.approx(h.dram.bandwidth_gbps, rel=0.01)


def _h200_dict() -> dict:
    return yaml.safe_load((MACHINES_DIR / "h200.yaml").read_text())


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("smem", "carveouts"), [0, "8KiB", "228KiB", "196KiB"], "ascending"),
        (("smem", "carveouts"), [0, "8KiB", "100KiB"], "per_sm_max"),
        (("l2", "size"), "60MiB", None),  # valid as shipped
        (("l2", "ways"), 7, "sets x ways"),
        (("l2", "sector_bytes"), 48, "powers of two"),
        (("limits", "max_warps_per_sm"), 48, "max_threads_per_sm"),
        (("smem", "per_block_optin"), "228KiB", "reserved_per_block"),
        (("clock_mhz_tensor",), 2500, "clock_mhz_tensor"),
        (("tensor_flops_per_clk",), {"fp12": {"fp32": 1}}, "fp12"),
        (("smem", "bytes_per_clk"), 64, "banks x bank_bytes"),
        (("l2_favoured_ramp",), [[3, 0.0], [2, 1.0]], "l2_favoured_ramp: needs two or more points"),
        (("l2_favoured_ramp",), [[3, 0.0]], "l2_favoured_ramp: needs two or more points"),
        (("l2_favoured_ramp",), [[2, 0.5], [3, 0.2]], "l2_favoured_ramp: fractions"),
        (("l2_favoured_ramp",), [[2, 0.0], [3, 1.5]], "l2_favoured_ramp: fractions"),
    ],
)
def test_cross_field_checks(path, value, message):
    d = _h200_dict()
    node = d
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    if message is None:
        assert machine_from_dict(d).l2.size == 60 << 20
        return
    with pytest.raises(MachineFileError, match=message):
        machine_from_dict(d, source="broken.yaml")


def test_unknown_key_and_decimal_units_are_refused():
    d = _h200_dict()
    d["l2"]["size"] = "60MB"
    d["smem"]["banks_typo"] = 32
    with pytest.raises(MachineFileError) as err:
        machine_from_dict(d, source="broken.yaml")
    text = str(err.value)
    assert "l2.size" in text and "smem.banks_typo" in text  # every problem reported at once


def test_carveout_snapping(machines):
    h = machines["h200"]
    assert h.align_up_to_carveout(0) == 0
    assert h.align_up_to_carveout(57 * 1024) == 64 * 1024
    assert h.align_up_to_carveout(114 * 1024) == 132 * 1024
    with pytest.raises(ValueError):
        h.align_up_to_carveout(229 * 1024)
    assert h.l1_size() == 28 * 1024  # 256 KiB unified - 228 KiB of shared memory
