"""Machine files: every shipped file loads; bad files fail with the file, the field path and what was expected."""

import pytest
import yaml

from gemmsim.errors import MachineFileError
from gemmsim.machine import MACHINES_DIR, CPUMachine, load_machine, machine_files

SHIPPED = sorted(p.stem for p in MACHINES_DIR.glob("*.yaml"))


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_machine_loads(name):
    m = load_machine(name)
    assert m.name == name
    assert m.kind in ("cpu", "gpu", "systolic")
    assert machine_files()[name] == MACHINES_DIR / f"{name}.yaml"


def test_haswell_derived_figures_match_the_seed():
    m = load_machine("haswell")
    # seed 000 1.1: 2 FMA units x 8 fp32 lanes x 2 x 3 GHz = 96 GFLOP/s per core, 16 cores ~ 1.5 TFLOP/s
    assert m.peak_gflops("fp32") == 96.0
    assert m.peak_gflops("fp32", cores=16) == 1536.0
    assert m.peak_gflops("fp64") == 48.0
    assert [c.sets for c in m.caches] == [64, 512, 32768]  # 32KiB/(8*64), 256KiB/(8*64), 40MiB/(20*64)
    assert m.ridge_point("fp32") == pytest.approx(1536.0 / 68.0)


def test_simd_widths_differ_between_cpu_files():
    widths = {load_machine(n).simd_bits for n in ("haswell", "skylake_avx512", "neoverse_n1")}
    assert widths == {256, 512, 128}
    assert load_machine("skylake_avx512").lanes("fp32") == 16
    assert load_machine("neoverse_n1").lanes("fp32") == 4


def test_toy_is_the_seed_lab_cache():
    m = load_machine("toy")
    (l1,) = m.caches
    assert (l1.sets, l1.ways, l1.line_bytes) == (1, 8, 16)  # 8 lines of 4 fp32, fully associative


def _write(tmp_path, data, name="m.yaml"):
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return p


def _haswell_dict():
    return yaml.safe_load((MACHINES_DIR / "haswell.yaml").read_text())


def test_malformed_yaml_names_file_and_line(tmp_path):
    p = _write(tmp_path, "kind: cpu\nname: [unclosed\n")
    with pytest.raises(MachineFileError) as e:
        load_machine(p)
    assert f"{p}:" in str(e.value) and "malformed YAML" in str(e.value)


def test_unknown_key_names_its_path(tmp_path):
    d = _haswell_dict()
    d["caches"][1]["colour"] = "red"
    with pytest.raises(MachineFileError) as e:
        load_machine(_write(tmp_path, d))
    assert "caches[1].colour: unknown key" in str(e.value)


def test_size_not_sets_ways_line_and_decimal_prefix_reported_together(tmp_path):
    d = _haswell_dict()
    d["caches"][0]["size"] = 1000
    d["caches"][1]["size"] = "256KB"
    d["dram"]["bandwidth_gbps"] = -1
    with pytest.raises(MachineFileError) as e:
        load_machine(_write(tmp_path, d))
    msg = str(e.value)
    assert "caches[0]" in msg and "not sets x ways x line_bytes" in msg
    assert "caches[1].size" in msg and "not a binary unit" in msg
    assert "dram.bandwidth_gbps" in msg
    assert len(e.value.problems) == 3


def test_duplicate_level_names_and_bad_line(tmp_path):
    d = _haswell_dict()
    d["caches"][1]["name"] = "L1"
    d["caches"][2]["line_bytes"] = 48
    d["caches"][2]["size"] = 48 * 20 * 10
    with pytest.raises(MachineFileError) as e:
        load_machine(_write(tmp_path, d))
    assert "duplicate level names: L1" in str(e.value) or "line_bytes 48 is not a power of two" in str(e.value)


def test_unknown_kind_and_unknown_machine(tmp_path):
    with pytest.raises(MachineFileError, match="kind: must be one of"):
        load_machine(_write(tmp_path, {"kind": "fpga", "name": "x"}))
    with pytest.raises(MachineFileError, match="unknown machine 'nosuch'; known machines: .*haswell"):
        load_machine("nosuch")
    with pytest.raises(MachineFileError, match="no such machine file"):
        load_machine(tmp_path / "missing.yaml")


def test_host_detection_gives_a_valid_cpu_machine():
    m = load_machine("host")
    assert isinstance(m, CPUMachine) and m.name == "host"
    assert m.caches[0].size >= 4096
    assert "dram.bandwidth_gbps" in m.estimated


def test_estimated_must_name_real_fields(tmp_path):
    d = _haswell_dict()
    d["estimated"] = ["caches[1].latency_cycles", "caches[9].ways", "dram.colour", "tlbs[0].miss_penalty_cycles.x"]
    with pytest.raises(MachineFileError) as e:
        load_machine(_write(tmp_path, d))
    assert "estimated: no such field(s): caches[9].ways, dram.colour, tlbs[0].miss_penalty_cycles.x" in str(e.value)
